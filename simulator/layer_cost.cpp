// Per-op-list cost and overlap rules shared by the simulator and the planner (see layer_cost.h).
#include "simulator/layer_cost.h"

#include <algorithm>
#include <optional>

#include "core/framework_profile.h"
#include "simulator/collectives.h"
#include "simulator/framework_data.h"
#include "simulator/moe_load.h"

namespace mplan {

namespace {

// SMs the EP communication kernels occupy while they overlap compute (Megatron's default
// --moe-deepep-num-sms is 20; NCCL all-to-all runs a similar number of channels).
constexpr double kEpCommSms = 20;

const GroupPlacement& placement_of(const ListTimingContext& x, CommGroup g) {
  switch (g) {
    case CommGroup::cp:
      return x.cp_pl;
    case CommGroup::ep:
      return x.ep_pl;
    case CommGroup::etp:
      return x.etp_pl;
    default:
      return x.tp_pl;
  }
}

}  // namespace

CostParams framework_params(const CostParams& prm_in, Framework fw, CudaGraphImpl graphs) {
  CostParams prm = prm_in;
  // kernels replayed from a CUDA graph leave a shorter gap than kernels launched one by one
  if (graphs != CudaGraphImpl::none) prm.kernel_overhead_us = prm_in.kernel_overhead_graph_us;
  // the framework's attention kernel: FlashAttention-2 where it has a measured rate on this architecture
  // (the build it calls: PyTorch SDPA's is slower than the flash-attn 2 package, framework_step)
  const FrameworkStep& st = framework_step(fw);
  if (framework_memory(fw).flash_attention_2 && prm.attn_fa2_fwd_eff > 0 && prm.attn_fa2_bwd_eff > 0) {
    prm.attn_fwd_eff = prm.attn_fa2_fwd_eff * st.flash_attention_2_rate;
    prm.attn_bwd_eff = prm.attn_fa2_bwd_eff * st.flash_attention_2_rate;
  }
  if (double fe = prm_in.framework_factor(fw); fe != 1.0) {
    prm.gemm_eff_max *= fe;
    prm.attn_fwd_eff *= fe;
    prm.attn_bwd_eff *= fe;
    prm.hbm_eff *= fe;
  }
  // the framework's training loop: its per-step host time (stated in its data, or fitted where no
  // measurement exists) on top of a user's own calibrated one; its FP8 scaling kernels
  prm.optimizer_overhead_s += st.stated_host_s() + (st.host_sync_fitted ? prm_in.step_host_sync_s : 0.0);
  prm.fp8_cast_act_bytes = st.fp8_act_bytes;
  prm.fp8_cast_weight_fwd_bytes = st.fp8_weight_fwd_bytes;
  prm.fp8_cast_weight_bwd_bytes = st.fp8_weight_bwd_bytes;
  return prm;
}

CostParams framework_params(const CostParams& prm, const Plan& plan) {
  return framework_params(prm, plan.training.framework, plan.parallel.cuda_graph_impl);
}

OpContext op_context(const Plan& plan, const ParallelConfig& p, const CostParams& prm) {
  const ModelSpec& m = plan.model;
  OpContext oc;
  oc.tp = p.tp;
  oc.cp = p.cp;
  oc.ep = p.ep;
  oc.etp = p.etp;
  oc.sp = p.sp;
  oc.micro_batch = p.micro_batch_size;
  oc.seq = plan.training.seq_length;
  oc.packed_doc_tokens = plan.training.packed_doc_tokens;
  oc.precision = plan.training.precision;
  oc.cp_comm = p.cp_comm_type == CpCommType::p2p   ? OpContext::CpComm::p2p
               : p.cp_comm_type == CpCommType::a2a ? OpContext::CpComm::a2a
                                                   : OpContext::CpComm::allgather;
  oc.flash_attention = p.attention_backend != AttentionBackend::unfused;
  oc.triton_attention = p.attention_backend == AttentionBackend::triton;
  if (m.moe && p.ep > 1) {
    const MoeSpec& e = *m.moe;
    // the busiest EP rank's share under learned routing, or the sampling floor of forced balance
    double tokens_per_rank = double(p.micro_batch_size) * plan.training.seq_length / (double(p.cp) * p.tp);
    oc.moe_load_factor =
        moe_busiest_rank_factor(int(e.num_experts), int(e.top_k), p.ep, tokens_per_rank, p.moe_force_balance, prm.moe_expert_cv);
  }
  if (m.moe && p.moe_capacity_factor > 0) {
    // tokens beyond an expert's capacity are dropped; padding fills every expert to its capacity
    double cf = p.moe_capacity_factor;
    oc.moe_load_factor = p.moe_pad_to_capacity ? cf : std::min(oc.moe_load_factor, cf);
  }
  // how the loss keeps the logits: a fused cross-entropy, torch's eager fp32 path (torchtitan,
  // MaxText's unfused loss), or Megatron's vocab-parallel fp32 softmax (core/framework_profile.h)
  const FrameworkProfile& fw = framework_profile(plan.training.framework);
  oc.loss_memory = p.cross_entropy_fusion                             ? LossMemory::fused_in_place
                   : fw.unfused_loss == UnfusedLoss::torch_eager_fp32 ? LossMemory::torch_eager_fp32
                                                                      : LossMemory::megatron_fp32_softmax;
  oc.kv_repeated = fw.kv_repeated;                    // torchtitan's Llama repeat_kv()s K/V before SDPA
  oc.torch_ring_attention = fw.ring_attention_eager;  // its CP is PyTorch's ring attention
  // torchtitan runs eager unless compiled; its async TP needs torch.compile (parallelize_llama.py
  // refuses async TP without it), so a plan with tp_comm_overlap is compiled
  oc.eager_pointwise = fw.eager_by_default && !plan.training.torch_compile && !p.tp_comm_overlap;
  oc.activation_bytes = prm.activation_bytes;
  return oc;
}

bool per_expert_gemms(const Plan& plan) {
  return framework_runs(plan.training.framework).per_expert_gemms && !plan.parallel.moe_fused_grouped_mlp;
}

std::vector<OpCost> op_list_compute(const std::vector<Op>& ops, const ListTimingContext& x) {
  std::vector<OpCost> oc(ops.size());
  // the rates of the list's precision and of bf16, looked up once for all its ops
  const bool fp8 = is_fp8_family(x.prec);
  ComputeRates rates = compute_rates(x.prec, *x.cl, *x.prm);
  rates.per_expert_gemms = x.per_expert_gemms;
  std::optional<ComputeRates> bf16_rates;
  for (size_t i = 0; i < ops.size(); ++i)
    if (ops[i].kind != OpKind::comm) {
      bool bf16 = fp8 && op_has_role(ops[i].id, kBf16UnderFp8);
      if (bf16 && !bf16_rates) bf16_rates = compute_rates(Precision::bf16, *x.cl, *x.prm);
      oc[i] = compute_op_cost(ops[i], bf16 ? *bf16_rates : rates, *x.prm);
      if (x.frozen) oc[i].bwd_weight_s = 0;  // LoRA: frozen base weights get no gradient
    }
  return oc;
}

void set_moe_dispatch_shares(ListTimingContext& x, const ModelSpec& m, MoeDispatcher d, int ep) {
  x.moe_remote_share = x.moe_local_share = 1.0;
  if (!m.moe || ep <= 1 || d == MoeDispatcher::alltoall) return;
  const int E = int(m.moe->num_experts), k = int(m.moe->top_k);
  x.moe_remote_share = moe_remote_share(E, k, x.ep_pl, m.moe->router_num_groups, m.moe->router_group_topk);
  x.moe_local_share = moe_local_share(E, k, x.ep_pl);
}

double op_comm_time_s(const Op& op, const ListTimingContext& x) {
  if (is_moe_token_all_to_all(op))
    return moe_all_to_all_time_s(op.comm_bytes, x.moe_remote_share, x.ep_pl, *x.cl, *x.prm, x.moe_local_share);
  return collective_time_s(op.collective, op.comm_bytes, placement_of(x, op.group), *x.cl, *x.prm);
}

ListTiming time_op_list(const std::vector<Op>& ops, const std::vector<OpCost>& oc, const ListTimingContext& x, bool per_op) {
  const CostParams& prm = *x.prm;
  auto overlapped = [&](double c, double g, int n = 1) { return exposed_comm_s(c, g, n, prm); };
  auto next_gemm = [&](size_t i) -> const OpCost* {
    for (size_t j = i + 1; j < ops.size(); ++j)
      if (ops[j].kind == OpKind::gemm) return &oc[j];
    return nullptr;
  };
  ListTiming lt;
  if (per_op) {
    lt.comm_s.assign(ops.size(), 0.0);
    lt.f_after.assign(ops.size(), PhaseCost{});
  }
  size_t block_start = 0;
  // MoE all-to-all overlap: compute before the dispatch ("attention" piece) and after it ("MLP")
  double attnF = 0, attnB = 0, mlpF = 0, mlpB = 0, dispatch_t = 0, combine_t = 0;
  bool after_dispatch = false;
  const OpCost* pv = nullptr;  // the last GEMM before op i
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    if (op.id == OpId::dispatch_a2a) after_dispatch = true;
    if (op.kind != OpKind::comm) {
      const OpCost& c = oc[i];
      if (op.kind == OpKind::gemm) pv = &c;
      lt.F.compute += c.fwd_s;
      lt.B.compute += c.bwd_input_s;
      (x.split_w ? lt.W : lt.B).compute += c.bwd_weight_s;
      (after_dispatch ? mlpF : attnF) += c.fwd_s;
      (after_dispatch ? mlpB : attnB) += c.bwd_input_s + c.bwd_weight_s;
      if (per_op) lt.f_after[i] = lt.F;
      continue;
    }
    double t = op_comm_time_s(op, x);
    if (per_op) lt.comm_s[i] = t;
    if (op.id == OpId::dispatch_a2a) dispatch_t = t;
    if (op.id == OpId::combine_a2a) combine_t = t;
    const bool ovl = x.tp_comm_overlap;
    const int tpn = x.tp;
    // the framework's TP overlap hides this share of what the full chunked overlap hides beyond the
    // `plain` cost the collective has without it
    auto tp_ovl = [&](double plain, double c, double g) { return plain - x.tp_overlap_share * (plain - overlapped(c, g, tpn)); };
    if (op.id == OpId::tp_allgather) {
      const OpCost* nx = next_gemm(i);
      double g = nx ? nx->fwd_s : 0, dg = nx ? nx->bwd_input_s : 0, wg = nx ? nx->bwd_weight_s : 0;
      const double grad_rs = overlapped(t, x.split_w ? 0 : wg);
      lt.F.tp += ovl ? tp_ovl(t, t, g) : t;
      lt.B.tp += overlapped(t, dg);                       // re-gather of the input for wgrad
      lt.B.tp += ovl ? tp_ovl(grad_rs, t, wg) : grad_rs;  // grad RS
      block_start = i + 1;
    } else if (op.id == OpId::tp_reduce_scatter) {
      double g = pv ? pv->fwd_s : 0, dg = pv ? pv->bwd_input_s : 0;
      lt.F.tp += ovl ? tp_ovl(t, t, g) : t;
      lt.B.tp += ovl ? tp_ovl(t, t, dg) : t;  // all-gather of the output gradient
      block_start = i + 1;
    } else if (op.id == OpId::tp_allreduce) {
      // forward all-reduce after the row-parallel GEMM; backward all-reduce of the input gradient of
      // the block's column-parallel GEMM, overlapped with its weight gradient
      double wg = 0;
      for (size_t j = block_start; j < i; ++j)
        if (ops[j].kind == OpKind::gemm) {
          wg = oc[j].bwd_weight_s;
          break;
        }
      lt.F.tp += t;
      lt.B.tp += x.split_w ? t : overlapped(t, wg);
      block_start = i + 1;
    } else if (op.id == OpId::cp_kv_exchange && op.collective == Collective::send_recv) {
      int steps = x.cp - 1;
      double per = collective_time_s(Collective::send_recv, op.comm_bytes / steps, x.cp_pl, *x.cl, prm);
      double af = 0, ab = 0;
      for (size_t j = i + 1; j < ops.size(); ++j)
        if (ops[j].kind == OpKind::attention) {
          af = oc[j].fwd_s / x.cp;
          ab = oc[j].bwd_input_s / x.cp;
          break;
        }
      double per_b = collective_time_s(Collective::send_recv, 2 * op.comm_bytes / steps, x.cp_pl, *x.cl, prm);
      lt.F.cp += steps * overlapped(per, af);
      lt.B.cp += steps * overlapped(per_b, ab);
    } else if (op.group == CommGroup::cp) {
      lt.F.cp += t;
      lt.B.cp += t;
    } else if (op.group == CommGroup::ep || op.group == CommGroup::etp) {
      lt.F.ep += t;
      lt.B.ep += t;
    } else {
      lt.F.tp += t;
      lt.B.tp += t;
    }
    if (per_op) lt.f_after[i] = lt.F;
  }
  if (x.moe_a2a_overlap && prm.comm_overlap >= 0.5 && dispatch_t + combine_t > 0) {
    // each all-to-all hides behind its partner piece, slowed to the SMs left by the comm kernels
    double sms = std::max(1, x.cl->gpu.sm_count);
    double slow = kEpCommSms / std::max(1.0, sms - kEpCommSms);
    auto ov = [&](double c, double g) { return std::max(c, g * (1.0 + slow)) - g; };
    double exposed_f = ov(dispatch_t, mlpB) + ov(combine_t, attnB);
    double exposed_b = ov(dispatch_t, mlpF) + ov(combine_t, attnF);
    lt.F.ep += exposed_f - (dispatch_t + combine_t);
    lt.B.ep += exposed_b - (dispatch_t + combine_t);
  }
  return lt;
}

}  // namespace mplan
