// Builds the per-(stage, chunk) action costs of a plan from the op vocabulary (core/ops.h), the
// compute cost model and the collective model, including how communication overlaps compute:
//  - sequence-parallel TP: forward all-gather/reduce-scatter exposed unless tp_comm_overlap; in the
//    backward Megatron overlaps the input re-gather with dgrad and the grad reduce-scatter with wgrad;
//  - TP without SP: forward all-reduce exposed, backward all-reduce overlapped with wgrad;
//  - CP p2p ring: each of the cp-1 K/V transfers overlaps one attention block;
//  - EP/ETP all-to-all and gathers, CP a2a/all-gather: exposed, except that with moe_a2a_overlap
//    (Megatron's merged forward/backward of two micro-batches) each EP all-to-all runs beside one
//    compute piece of the other micro-batch: forward dispatch with the backward MLP, forward combine
//    with the backward attention, backward dispatch with the forward MLP, backward combine with the
//    forward attention; the compute then runs on the SMs the communication kernels leave free;
//  - MoE load: the busiest EP rank's token share (moe_load_factor, simulator/moe_load.h) sets the
//    expert compute and all-to-all time; DeepEP/HybridEP send a token once per remote NVLink domain;
//  - ZeRO-3 (FSDP) parameter gathers and gradient scatters overlap the chunk's compute.
// Overlapped compute slows down by params.overlap_slowdown; only the excess is exposed.
#include "simulator/workload.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/counting.h"
#include "core/ops.h"
#include "core/schedule.h"
#include "simulator/collectives.h"
#include "simulator/compute_cost.h"
#include "simulator/memory_states.h"
#include "simulator/moe_load.h"

namespace mplan {

namespace {

// SMs the EP communication kernels occupy while they overlap compute (Megatron's default
// --moe-deepep-num-sms is 20; NCCL all-to-all runs a similar number of channels).
constexpr double kEpCommSms = 20;

struct Ctx {
  const Plan& plan;
  bool frozen;  // LoRA: no weight gradients for the base model
  const CostParams& prm;
  const ClusterSpec& cl;
  const ParallelConfig& p;
  bool split_w;
  GroupPlacement tp, cp, ep, etp, dp, edp;
  Precision prec;
  double moe_remote_share = 1.0;  // network bytes of the MoE dispatcher over a plain all-to-all
};

// Exposed time of a communication of length c overlapped with compute g (chunked in n pieces).
double overlapped(const Ctx& x, double c, double g, int n = 1) {
  if (c <= 0) return 0;
  if (x.prm.comm_overlap < 0.5) return c;  // blocking communication: nothing hides
  double gs = g * (1.0 + x.prm.overlap_slowdown);
  return std::max(c, gs) - g + std::min(c, g) / std::max(1, n);
}

// Exposed time of moving `bytes` between device and host beside `compute` seconds of work (activation
// offloading: device-to-host in the forward, back in the backward, on their own copy engine).
double host_transfer(const Ctx& x, double bytes, double compute) {
  if (bytes <= 0 || x.cl.gpu.host_link_gbps <= 0) return 0;
  return overlapped(x, bytes / (x.cl.gpu.host_link_gbps * 1e9), compute);
}

Precision gemm_precision(const Ctx& x, const Op& op) {
  if (is_fp8_family(x.prec) && (op.name == "lm_head_gemm" || op.name == "router")) return Precision::bf16;
  return x.prec;
}

const GroupPlacement& placement_of(const Ctx& x, CommGroup g) {
  switch (g) {
    case CommGroup::tp: return x.tp;
    case CommGroup::cp: return x.cp;
    case CommGroup::ep: return x.ep;
    case CommGroup::etp: return x.etp;
    case CommGroup::dp: return x.dp;
    case CommGroup::edp: return x.edp;
    default: return x.tp;
  }
}

double comm_time(const Ctx& x, const Op& op) {
  if (is_moe_token_all_to_all(op))
    return moe_all_to_all_time_s(op.comm_bytes, x.moe_remote_share, x.ep, x.cl, x.prm);
  return collective_time_s(op.collective, op.comm_bytes, placement_of(x, op.group), x.cl, x.prm);
}

struct ListCost {
  PhaseCost F, B, W;  // B includes wgrad unless split_w
  PhaseCost recompute_fwd;  // what re-running the forward costs (full recompute)
  PhaseCost rerun_sel;      // what selective recompute of the layout's modules re-runs in the backward
  // activation bytes kept on the GPU from forward to backward (offloaded tensors excluded): with no
  // recompute, with the selective modules recomputed, and the GEMM-input part of each (held until W)
  double saved = 0, saved_sel = 0, saved_gemm = 0, saved_gemm_sel = 0;
  double input = 0;      // the layer input (what full recompute keeps)
  double remat_sel = 0;  // bytes selective recompute rematerialises during the backward
  double fwd_work = 0, bwd_work = 0;  // the largest working memory of one op, forward / backward
  double offloaded = 0;  // bytes the offloaded modules move to host memory (and back)
  std::map<std::string, OpTally> tally;
};

// Activation bookkeeping of one op (see SavedTensor): what stays on the GPU with and without the
// selective recompute modules, given the offloaded modules.
void account_saved(ListCost& lc, const Op& op, uint32_t recompute_modules, uint32_t offload_modules, bool op_sac) {
  if (op_sac && op.sac_saved_bytes >= 0) {
    // torch's op-level selective checkpointing keeps the op's sac_saved_bytes instead
    lc.saved += op.saved_bytes;
    lc.saved_sel += op.sac_saved_bytes;
    lc.remat_sel += std::max(0.0, op.saved_bytes - op.sac_saved_bytes);
    if (op.kind == OpKind::gemm) {
      lc.saved_gemm += op.saved_bytes;
      lc.saved_gemm_sel += op.sac_saved_bytes;
    }
  }
  for (const SavedTensor& t : op.saved) {
    if (op_sac && op.sac_saved_bytes >= 0) break;
    if (t.offloaded_by & offload_modules) {
      lc.offloaded += t.bytes;
      continue;
    }
    bool dropped = (t.dropped_by & recompute_modules) != 0;
    lc.saved += t.bytes;
    lc.saved_sel += dropped ? 0 : t.bytes;
    lc.remat_sel += dropped ? t.bytes : 0;
    if (op.kind == OpKind::gemm) {
      lc.saved_gemm += t.bytes;
      lc.saved_gemm_sel += dropped ? 0 : t.bytes;
    }
  }
  lc.fwd_work = std::max(lc.fwd_work, op.fwd_transient_bytes);
  lc.bwd_work = std::max(lc.bwd_work, op.bwd_transient_bytes);
}

void tally(ListCost& lc, const std::string& name, double t) {
  OpTally& o = lc.tally[name];
  o.name = name;
  o.time_s += t;
  o.calls += 1;
}


ListCost cost_ops(const Ctx& x, const std::vector<Op>& ops) {
  ListCost lc;
  std::vector<OpCost> oc(ops.size());
  for (size_t i = 0; i < ops.size(); ++i)
    if (ops[i].kind != OpKind::comm) {
      oc[i] = compute_op_cost(ops[i], gemm_precision(x, ops[i]), x.cl, x.prm);
      if (x.frozen) oc[i].bwd_weight_s = 0;  // LoRA: frozen base weights get no gradient
    }
  auto next_gemm = [&](size_t i) -> const OpCost* {
    for (size_t j = i + 1; j < ops.size(); ++j)
      if (ops[j].kind == OpKind::gemm) return &oc[j];
    return nullptr;
  };
  auto prev_gemm = [&](size_t i) -> const OpCost* {
    for (size_t j = i; j-- > 0;)
      if (ops[j].kind == OpKind::gemm) return &oc[j];
    return nullptr;
  };
  size_t block_start = 0;
  bool first_input = true;
  // MoE all-to-all overlap: compute before the dispatch ("attention" piece) and after it ("MLP")
  double attnF = 0, attnB = 0, mlpF = 0, mlpB = 0, dispatch_t = 0, combine_t = 0;
  bool after_dispatch = false;
  // MaxText/Paxml: a JAX remat policy saves named tensors of the layer and recomputes the rest
  const bool annotated = std::any_of(ops.begin(), ops.end(), [](const Op& o) { return o.remat_tensor != 0; });
  const bool jax_remat = annotated && x.p.recompute == Recompute::selective && x.plan.training.framework == Framework::maxtext;
  const uint32_t jax_saved = remat_saved_tensors(x.p.remat_policy == RematPolicy::none ? RematPolicy::minimal : x.p.remat_policy);
  const uint32_t rm = x.p.effective_recompute_modules().bits, offload = x.p.offload_modules.bits;
  // torchtitan's "selective" is PyTorch's op-level selective checkpointing, not Megatron's modules
  const bool op_sac = x.p.recompute == Recompute::selective && x.plan.training.framework == Framework::torchtitan;
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    if (op.name == "dispatch_a2a") after_dispatch = true;
    account_saved(lc, op, rm, offload, op_sac);
    if (first_input && op.kind == OpKind::norm) {
      lc.input = op.saved_bytes;  // the layer input (norm input) is what full recompute keeps
      first_input = false;
    }
    const bool rerun = !op_sac && !jax_remat && (op.rerun_by & rm) != 0;
    if (op.kind != OpKind::comm) {
      const OpCost& c = oc[i];
      lc.F.compute += c.fwd_s;
      lc.B.compute += c.bwd_input_s;
      (x.split_w ? lc.W : lc.B).compute += c.bwd_weight_s;
      (after_dispatch ? mlpF : attnF) += c.fwd_s;
      (after_dispatch ? mlpB : attnB) += c.bwd_input_s + c.bwd_weight_s;
      if (rerun) lc.rerun_sel.compute += c.fwd_s;
      if (op_sac) lc.rerun_sel.compute += c.fwd_s * op.sac_rerun_frac;
      if (jax_remat && !(op.remat_tensor & jax_saved) && op.kind != OpKind::norm) lc.rerun_sel.compute += c.fwd_s;
      tally(lc, op.name, c.fwd_s + c.bwd_input_s + c.bwd_weight_s);
      continue;
    }
    const PhaseCost f_before = lc.F;
    double t = comm_time(x, op);
    tally(lc, op.name, 2 * t);
    if (op.name == "dispatch_a2a") dispatch_t = t;
    if (op.name == "combine_a2a") combine_t = t;
    const OpCost* nx = next_gemm(i);
    const OpCost* pv = prev_gemm(i);
    const bool ovl = x.p.tp_comm_overlap;
    const int tpn = x.p.tp;
    if (op.name == "tp_allgather") {
      double g = nx ? nx->fwd_s : 0, dg = nx ? nx->bwd_input_s : 0, wg = nx ? nx->bwd_weight_s : 0;
      lc.F.tp += ovl ? overlapped(x, t, g, tpn) : t;
      lc.B.tp += overlapped(x, t, dg);                     // re-gather of the input for wgrad
      lc.B.tp += ovl ? overlapped(x, t, wg, tpn) : overlapped(x, t, x.split_w ? 0 : wg);  // grad RS
      block_start = i + 1;
    } else if (op.name == "tp_reduce_scatter") {
      double g = pv ? pv->fwd_s : 0, dg = pv ? pv->bwd_input_s : 0;
      lc.F.tp += ovl ? overlapped(x, t, g, tpn) : t;
      lc.B.tp += ovl ? overlapped(x, t, dg, tpn) : t;  // all-gather of the output gradient
      block_start = i + 1;
    } else if (op.name == "tp_allreduce") {
      // forward all-reduce after the row-parallel GEMM; backward all-reduce of the input gradient of
      // the block's column-parallel GEMM, overlapped with its weight gradient
      double wg = 0;
      for (size_t j = block_start; j < i; ++j)
        if (ops[j].kind == OpKind::gemm) {
          wg = oc[j].bwd_weight_s;
          break;
        }
      lc.F.tp += t;
      lc.B.tp += x.split_w ? t : overlapped(x, t, wg);
      block_start = i + 1;
    } else if (op.name == "cp_kv_exchange" && op.collective == Collective::send_recv) {
      int steps = x.p.cp - 1;
      double per = collective_time_s(Collective::send_recv, op.comm_bytes / steps, x.cp, x.cl, x.prm);
      double af = 0, ab = 0;
      for (size_t j = i + 1; j < ops.size(); ++j)
        if (ops[j].kind == OpKind::attention) {
          af = oc[j].fwd_s / x.p.cp;
          ab = oc[j].bwd_input_s / x.p.cp;
          break;
        }
      double per_b = collective_time_s(Collective::send_recv, 2 * op.comm_bytes / steps, x.cp, x.cl, x.prm);
      lc.F.cp += steps * overlapped(x, per, af);
      lc.B.cp += steps * overlapped(x, per_b, ab);
    } else if (op.group == CommGroup::cp) {
      lc.F.cp += t;
      lc.B.cp += t;
    } else if (op.group == CommGroup::ep || op.group == CommGroup::etp) {
      lc.F.ep += t;
      lc.B.ep += t;
    } else {
      lc.F.tp += t;
      lc.B.tp += t;
    }
    if (rerun) {
      // a re-run module repeats its communication as exposed in its forward
      lc.rerun_sel.tp += lc.F.tp - f_before.tp;
      lc.rerun_sel.cp += lc.F.cp - f_before.cp;
      lc.rerun_sel.ep += lc.F.ep - f_before.ep;
    }
  }
  if (x.p.moe_a2a_overlap && x.prm.comm_overlap >= 0.5 && dispatch_t + combine_t > 0) {
    // each all-to-all hides behind its partner piece, slowed to the SMs left by the comm kernels
    double sms = std::max(1, x.cl.gpu.sm_count);
    double slow = kEpCommSms / std::max(1.0, sms - kEpCommSms);
    auto ov = [&](double c, double g) { return std::max(c, g * (1.0 + slow)) - g; };
    double exposed_f = ov(dispatch_t, mlpB) + ov(combine_t, attnB);
    double exposed_b = ov(dispatch_t, mlpF) + ov(combine_t, attnF);
    lc.F.ep += exposed_f - (dispatch_t + combine_t);
    lc.B.ep += exposed_b - (dispatch_t + combine_t);
  }
  if (jax_remat) {
    double kept = 0;
    for (const Op& op : ops)
      if (op.remat_tensor & jax_saved) kept += op.remat_bytes;
    lc.remat_sel = std::max(0.0, lc.saved - kept);
    lc.saved_sel = kept;
    lc.saved_gemm_sel = 0;
  }
  lc.recompute_fwd = lc.F;
  return lc;
}

void add_tally(std::vector<OpTally>& dst, const ListCost& lc, double scale = 1.0) {
  for (const auto& [name, t] : lc.tally) {
    auto it = std::find_if(dst.begin(), dst.end(), [&n = name](const OpTally& o) { return o.name == n; });
    if (it == dst.end()) {
      dst.push_back({name, t.time_s * scale, int(t.calls * scale)});
    } else {
      it->time_s += t.time_s * scale;
      it->calls += int(t.calls * scale);
    }
  }
}

}  // namespace

Workload build_workload(const Plan& plan, const CostParams& prm_in) {
  // the framework's kernel efficiency relative to Megatron-Core's (CostParams::framework_eff)
  CostParams prm = prm_in;
  if (double fe = prm_in.framework_factor(plan.training.framework); fe != 1.0) {
    prm.gemm_eff_max *= fe;
    prm.attn_fwd_eff *= fe;
    prm.attn_bwd_eff *= fe;
    prm.hbm_eff *= fe;
  }
  const ModelSpec& m = plan.model;
  const ParallelConfig& p = plan.parallel;
  const ClusterSpec& cl = plan.cluster;
  Workload w;
  w.microbatches = int(p.num_microbatches(plan.training.global_batch_size));
  w.split_w = schedule_splits_weight_grad(p.schedule);
  w.comm_overlap = prm.comm_overlap >= 0.5;
  RankGrid grid(p);
  int dom = std::max(1, cl.placement_domain());
  Ctx x{plan, plan.training.frozen_base(), prm, cl, p, w.split_w, grid.placement(Dim::tp, dom), grid.placement(Dim::cp, dom),
        grid.placement(Dim::ep, dom), grid.placement(Dim::etp, dom), grid.placement(Dim::dp, dom),
        grid.placement(Dim::edp, dom), plan.training.precision};

  OpContext oc;
  oc.tp = p.tp;
  oc.cp = p.cp;
  oc.ep = p.ep;
  oc.etp = p.etp;
  oc.sp = p.sp;
  oc.micro_batch = p.micro_batch_size;
  oc.seq = plan.training.seq_length;
  oc.precision = plan.training.precision;
  oc.cp_comm = p.cp_comm_type == CpCommType::p2p ? OpContext::CpComm::p2p
               : p.cp_comm_type == CpCommType::a2a ? OpContext::CpComm::a2a
                                                   : OpContext::CpComm::allgather;
  oc.flash_attention = p.attention_backend != AttentionBackend::unfused;
  oc.triton_attention = p.attention_backend == AttentionBackend::triton;
  if (m.moe && p.ep > 1) {
    const MoeSpec& e = *m.moe;
    // the busiest EP rank's share under learned routing, or the sampling floor of forced balance
    double tokens_per_rank = double(p.micro_batch_size) * plan.training.seq_length / (double(p.cp) * p.tp);
    oc.moe_load_factor = moe_busiest_rank_factor(int(e.num_experts), int(e.top_k), p.ep, tokens_per_rank,
                                                 p.moe_force_balance, prm.moe_expert_cv);
    if (p.moe_dispatcher != MoeDispatcher::alltoall)
      x.moe_remote_share = moe_remote_share(int(e.num_experts), int(e.top_k), x.ep, e.router_num_groups, e.router_group_topk);
  }
  if (m.moe && p.moe_capacity_factor > 0) {
    // tokens beyond an expert's capacity are dropped; padding fills every expert to its capacity
    double cf = p.moe_capacity_factor;
    oc.moe_load_factor = p.moe_pad_to_capacity ? cf : std::min(oc.moe_load_factor, cf);
  }
  // how the loss keeps the logits: a fused cross-entropy, torch's eager fp32 path (torchtitan,
  // MaxText's unfused loss), or Megatron's vocab-parallel fp32 softmax
  const Framework fw = plan.training.framework;
  oc.loss_memory = p.cross_entropy_fusion                                       ? LossMemory::fused_in_place
                   : fw == Framework::torchtitan || fw == Framework::maxtext ? LossMemory::torch_eager_fp32
                                                                                : LossMemory::megatron_fp32_softmax;
  oc.kv_repeated = fw == Framework::torchtitan;  // torchtitan's Llama repeat_kv()s K/V before SDPA

  // layer costs by type (dense / MoE) x attention (full / sliding window), embedding and head
  ModelSpec full_model = m;
  full_model.window_size = 0;
  ModelSpec dense_model = full_model;
  dense_model.moe.reset();
  int first_moe = 0;
  while (m.moe && first_moe < m.num_layers && !m.is_moe_layer(first_moe)) ++first_moe;
  ListCost dense = cost_ops(x, layer_ops(dense_model, 0, oc));
  ListCost moe;
  if (m.moe) moe = cost_ops(x, layer_ops(full_model, first_moe, oc));
  ListCost dense_win = dense, moe_win = moe;
  if (m.window_size > 0) {
    ModelSpec win_model = m;
    win_model.window_attn_skip_freq = 0;  // every layer windowed
    ModelSpec dense_win_model = win_model;
    dense_win_model.moe.reset();
    dense_win = cost_ops(x, layer_ops(dense_win_model, 0, oc));
    if (m.moe) moe_win = cost_ops(x, layer_ops(win_model, first_moe, oc));
  }
  auto layer_cost = [&](int i) -> const ListCost& {
    bool win = m.is_window_layer(i);
    return m.is_moe_layer(i) ? (win ? moe_win : moe) : (win ? dense_win : dense);
  };
  ListCost emb = cost_ops(x, embedding_ops(m, oc));
  ListCost head = cost_ops(x, head_ops(m, oc));
  auto list_memory = [](const ListCost& lc) {
    return ListMemory{lc.bwd_work, lc.saved + lc.bwd_work, lc.remat_sel + lc.bwd_work, lc.fwd_work};
  };
  w.dense_mem = list_memory(dense);
  w.moe_mem = list_memory(m.moe ? moe : dense);
  w.emb_mem = list_memory(emb);
  w.head_mem = list_memory(head);

  auto n = layers_per_stage_chunk(m, p);
  auto sp = params_per_stage(m, p);
  // first global layer of every (stage, chunk): model order is chunk-major
  std::vector<std::vector<int>> first_of(p.pp, std::vector<int>(p.vpp, 0));
  for (int c = 0, idx = 0; c < p.vpp; ++c)
    for (int s = 0; s < p.pp; ++s) {
      first_of[s][c] = idx;
      idx += n[s][c];
    }
  w.stages.resize(p.pp);
  for (int s = 0; s < p.pp; ++s) {
    StageWork& st = w.stages[s];
    st.chunks.resize(p.vpp);
    for (int c = 0; c < p.vpp; ++c) {
      ChunkCost& ch = st.chunks[c];
      ch.layers = n[s][c];
      int first = first_of[s][c];
      int recompute_layers = p.recompute == Recompute::full
                                 ? (p.recompute_num_layers > 0 ? std::min(p.recompute_num_layers, ch.layers) : ch.layers)
                                 : 0;
      // adds `k` layers (or other op lists) of one kind
      auto add_list = [&](const ListCost& lc, bool recomputed, int k) {
        if (k <= 0) return;
        ch.F += lc.F.scaled(k);
        ch.B += lc.B.scaled(k);
        ch.W += lc.W.scaled(k);
        ch.fwd_transient_bytes = std::max(ch.fwd_transient_bytes, lc.fwd_work);
        if (!recomputed && lc.offloaded > 0) {
          ch.F.host += host_transfer(x, lc.offloaded, lc.F.compute) * k;
          ch.B.host += host_transfer(x, lc.offloaded, lc.B.compute) * k;
        }
        if (recomputed) {
          const PhaseCost& r = lc.recompute_fwd;
          ch.B.recompute += r.compute * k;
          ch.B.tp += r.tp * k;
          ch.B.cp += r.cp * k;
          ch.B.ep += r.ep * k;
          ch.act_bytes += lc.input * k;
          // one layer's activations are rematerialised at a time during the backward
          ch.transient_bytes = std::max(ch.transient_bytes, lc.saved + lc.bwd_work);
        } else if (p.recompute == Recompute::selective) {
          const PhaseCost& r = lc.rerun_sel;
          ch.B.recompute += r.compute * k;
          ch.B.tp += r.tp * k;
          ch.B.cp += r.cp * k;
          ch.B.ep += r.ep * k;
          ch.act_bytes += lc.saved_sel * k;
          ch.act_w_bytes += w.split_w ? lc.saved_gemm_sel * k : 0;
          ch.transient_bytes = std::max(ch.transient_bytes, lc.remat_sel + lc.bwd_work);
        } else {
          ch.act_bytes += lc.saved * k;
          ch.act_w_bytes += w.split_w ? lc.saved_gemm * k : 0;
          ch.transient_bytes = std::max(ch.transient_bytes, lc.bwd_work);
        }
        add_tally(ch.ops, lc, k);
      };
      if (s == 0 && c == 0) add_list(emb, false, 1);
      int count[2][2][2] = {};  // [moe][window][recomputed]
      for (int i = first; i < first + ch.layers; ++i)
        count[m.is_moe_layer(i) ? 1 : 0][m.is_window_layer(i) ? 1 : 0][i - first < recompute_layers ? 1 : 0]++;
      for (int e = 0; e < 2; ++e)
        for (int wi = 0; wi < 2; ++wi)
          for (int r = 0; r < 2; ++r) add_list(e ? (wi ? moe_win : moe) : (wi ? dense_win : dense), r == 1, count[e][wi][r]);
      if (s == p.pp - 1 && c == p.vpp - 1) {
        add_list(m.is_moe_layer(m.num_layers - 1) ? moe : dense, false, m.mtp_num_layers);
        add_list(head, false, 1 + m.mtp_num_layers);
      }
      if (p.cpu_offload_layers > 0) {
        // layer-wise offloading (pp = 1): the first layers' activations wait in host memory
        int off = std::min(p.cpu_offload_layers, ch.layers);
        for (int i = first; i < first + off; ++i) {
          const ListCost& lc = layer_cost(i);
          ch.act_bytes -= lc.saved;
          ch.F.host += host_transfer(x, lc.saved, lc.F.compute);
          ch.B.host += host_transfer(x, lc.saved, lc.B.compute);
        }
        ch.act_bytes = std::max(0.0, ch.act_bytes);
      }
    }
    // parameters on this rank
    {
      int layers = 0;
      for (int c = 0; c < p.vpp; ++c) layers += n[s][c];
      fill_stage_params(st, m, p, sp[s], s, layers);
    }
    // data-parallel gradient reduction and parameter gather (fp32 grads, bf16 params)
    int dp = p.dp();
    if (plan.training.frozen_base()) {
      st.dp_buckets = 1;
      st.optimizer_s = prm.optimizer_overhead_s;
      continue;
    }
    double grad_dense = st.dense_params * 4, grad_expert = st.expert_params * 4;
    if (p.zero == 3) {
      // FSDP: parameters gathered before each chunk's forward and backward, gradients scattered after
      // its backward, per micro-batch, overlapped with that chunk's compute
      for (int c = 0; c < p.vpp; ++c) {
        ChunkCost& ch = st.chunks[c];
        double frac = sp[s].total() > 0 ? double(ch.layers) / std::max(1, [&] {
          int t = 0;
          for (int cc = 0; cc < p.vpp; ++cc) t += n[s][cc];
          return t;
        }()) : 0;
        double ag = collective_time_s(Collective::all_gather, st.dense_params * 2 * frac, x.dp, cl, prm) +
                    collective_time_s(Collective::all_gather, st.expert_params * 2 * frac, x.edp, cl, prm);
        double rs = collective_time_s(Collective::reduce_scatter, grad_dense * frac, x.dp, cl, prm) +
                    collective_time_s(Collective::reduce_scatter, grad_expert * frac, x.edp, cl, prm);
        ch.fsdp_gather_s = ag;
        ch.fsdp_scatter_s = rs;
        ch.F.dp += overlapped(x, ag, ch.F.total(), std::max(1, ch.layers));
        ch.B.dp += overlapped(x, ag + rs, ch.B.total(), std::max(1, ch.layers));
      }
      st.dp_grad_s = 0;
      st.dp_param_gather_s = 0;
    } else {
      Collective gc = p.zero == 0 ? Collective::all_reduce : Collective::reduce_scatter;
      st.dp_grad_s = collective_time_s(gc, grad_dense, x.dp, cl, prm) + collective_time_s(gc, grad_expert, x.edp, cl, prm);
      st.dp_param_gather_s = p.zero == 0 ? 0
                                         : collective_time_s(Collective::all_gather, st.dense_params * 2, x.dp, cl, prm) +
                                               collective_time_s(Collective::all_gather, st.expert_params * 2, x.edp, cl, prm);
    }
    double bucket_params = std::max(40e6, 1e6 * dp);
    st.dp_buckets = std::max(1, int(std::ceil((st.dense_params + st.expert_params) / bucket_params)));
    // AdamW on the local shard: ~34 bytes per parameter (fp32 master, m, v, grad; bf16 param out)
    double local = p.zero >= 1 ? st.dense_params / dp + st.expert_params / std::max(1, p.edp())
                               : st.dense_params + st.expert_params;
    st.optimizer_s = local * 34.0 / (cl.gpu.hbm_gbps * 1e9 * prm.hbm_eff) + prm.optimizer_overhead_s;
  }
  // pipeline traffic: one activation tensor per micro-batch and boundary (sequence-parallel shard)
  double tokens = double(p.micro_batch_size) * plan.training.seq_length / p.cp;
  w.p2p_bytes = tokens / (p.sp ? p.tp : 1) * m.hidden_size * activation_bytes(plan.training.precision);
  if (p.pp > 1) {
    int a = grid.rank_of_dense(0, 0, 0, 0), b = grid.rank_of_dense(0, 0, 0, 1);
    w.p2p_s = p2p_time_s(w.p2p_bytes, a / dom == b / dom, cl, prm);
  }
  return w;
}

}  // namespace mplan
