// Builds the per-(stage, chunk) action costs of a plan from the op vocabulary (core/ops.h): each op
// list (layer type, embedding, head) is timed by simulator/layer_cost.h (the compute cost model, the
// collective model and which communication overlaps which compute — shared with the planner's
// bounds), then assembled into chunks with recomputation, activation memory and offloading:
//  - MoE load: the busiest EP rank's token share (moe_load_factor, simulator/moe_load.h) sets the
//    expert compute and all-to-all time; DeepEP/HybridEP send a token once per remote NVLink domain;
//  - ZeRO-3 (FSDP) parameter gathers and gradient scatters overlap the chunk's compute;
//  - the data-parallel terms (buckets, gradient reduction, parameter gather, optimizer step) come from
//    simulator/dp_costs.h.
// Overlapped compute slows down by params.overlap_slowdown; only the excess is exposed.
#include "simulator/workload.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "core/counting.h"
#include "core/framework_profile.h"
#include "core/ops.h"
#include "core/schedule.h"
#include "simulator/collectives.h"
#include "simulator/compute_cost.h"
#include "simulator/dp_costs.h"
#include "simulator/layer_cost.h"
#include "simulator/memory_states.h"
#include "simulator/moe_load.h"
#include "simulator/simulator.h"

namespace mplan {

namespace {

struct Ctx {
  const Plan& plan;
  const ParallelConfig& p;
  const ClusterSpec& cl;
  const CostParams& prm;
  ListTimingContext lt;  // what the op lists' timing depends on (layer_cost.h)
  GroupPlacement dp, edp;
};

double overlapped(const Ctx& x, double c, double g, int n = 1) { return exposed_comm_s(c, g, n, x.prm); }

// Exposed time of moving `bytes` between device and host beside `compute` seconds of work (activation
// offloading: device-to-host in the forward, back in the backward, on their own copy engine).
double host_transfer(const Ctx& x, double bytes, double compute) {
  if (bytes <= 0 || x.cl.gpu.host_link_gbps <= 0) return 0;
  return overlapped(x, bytes / (x.cl.gpu.host_link_gbps * 1e9), compute);
}

struct ListCost {
  PhaseCost F, B, W;        // B includes wgrad unless split_w
  PhaseCost recompute_fwd;  // what re-running the forward costs (full recompute)
  PhaseCost rerun_sel;      // what selective recompute of the layout's modules re-runs in the backward
  // activation bytes kept on the GPU from forward to backward (offloaded tensors excluded): with no
  // recompute, with the selective modules recomputed, and the GEMM-input part of each (held until W)
  double saved = 0, saved_sel = 0, saved_gemm = 0, saved_gemm_sel = 0;
  double input = 0;                   // the layer input (what full recompute keeps)
  double remat_sel = 0;               // bytes selective recompute rematerialises during the backward
  double fwd_work = 0, bwd_work = 0;  // the largest working memory of one op, forward / backward
  double offloaded = 0;               // bytes the offloaded modules move to host memory (and back)
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
  const std::vector<OpCost> oc = op_list_compute(ops, x.lt);
  const ListTiming lt = time_op_list(ops, oc, x.lt, true);
  lc.F = lt.F;
  lc.B = lt.B;
  lc.W = lt.W;
  bool first_input = true;
  // MaxText/Paxml: a JAX remat policy saves named tensors of the layer and recomputes the rest
  const bool annotated = std::any_of(ops.begin(), ops.end(), [](const Op& o) { return o.remat_tensor != 0; });
  const RematStyle remat = framework_profile(x.plan.training.framework).remat_style;
  const bool jax_remat = annotated && x.p.recompute == Recompute::selective && remat == RematStyle::jax_policy;
  const uint32_t jax_saved = remat_saved_tensors(x.p.remat_policy == RematPolicy::none ? RematPolicy::minimal : x.p.remat_policy);
  const uint32_t rm = x.p.effective_recompute_modules().bits, offload = x.p.offload_modules.bits;
  // torchtitan's "selective" is PyTorch's op-level selective checkpointing, not Megatron's modules
  const bool op_sac = x.p.recompute == Recompute::selective && remat == RematStyle::op_sac;
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    account_saved(lc, op, rm, offload, op_sac);
    if (first_input && op.kind == OpKind::norm) {
      lc.input = op.saved_bytes;  // the layer input (norm input) is what full recompute keeps
      first_input = false;
    }
    const bool rerun = !op_sac && !jax_remat && (op.rerun_by & rm) != 0;
    if (op.kind != OpKind::comm) {
      const OpCost& c = oc[i];
      if (rerun) lc.rerun_sel.compute += c.fwd_s;
      if (op_sac) lc.rerun_sel.compute += c.fwd_s * op.sac_rerun_frac;
      if (jax_remat && !(op.remat_tensor & jax_saved) && op.kind != OpKind::norm) lc.rerun_sel.compute += c.fwd_s;
      tally(lc, op.name, c.fwd_s + c.bwd_input_s + c.bwd_weight_s);
      continue;
    }
    tally(lc, op.name, 2 * lt.comm_s[i]);
    if (rerun) {
      // a re-run module repeats its communication as exposed in its forward
      const PhaseCost before = i > 0 ? lt.f_after[i - 1] : PhaseCost{};
      lc.rerun_sel.tp += lt.f_after[i].tp - before.tp;
      lc.rerun_sel.cp += lt.f_after[i].cp - before.cp;
      lc.rerun_sel.ep += lt.f_after[i].ep - before.ep;
    }
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
  if (dst.empty()) {  // the chunk's first list: its names are distinct, nothing to look up
    dst.reserve(2 * lc.tally.size());
    for (const auto& [name, t] : lc.tally) dst.push_back({name, t.time_s * scale, int(t.calls * scale)});
    return;
  }
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

GroupPlacement placement_of(WorkloadMemo* memo, const RankGrid& grid, const ParallelConfig& p, Dim d, int dom);

ListTimingContext list_timing_context(const Plan& plan, const CostParams& prm, const RankGrid& grid, int dom,
                                      WorkloadMemo* memo = nullptr) {
  const ParallelConfig& p = plan.parallel;
  const ModelSpec& m = plan.model;
  ListTimingContext lt;
  lt.cl = &plan.cluster;
  lt.prm = &prm;
  lt.prec = plan.training.precision;
  lt.frozen = plan.training.frozen_base();
  lt.split_w = schedule_splits_weight_grad(p.schedule);
  lt.tp = p.tp;
  lt.cp = p.cp;
  lt.tp_comm_overlap = p.tp_comm_overlap;
  lt.tp_overlap_share = framework_runs(plan.training.framework).tp_overlap_share;
  lt.per_expert_gemms = per_expert_gemms(plan);
  lt.moe_a2a_overlap = p.moe_a2a_overlap;
  lt.tp_pl = placement_of(memo, grid, p, Dim::tp, dom);
  lt.cp_pl = placement_of(memo, grid, p, Dim::cp, dom);
  lt.ep_pl = placement_of(memo, grid, p, Dim::ep, dom);
  lt.etp_pl = placement_of(memo, grid, p, Dim::etp, dom);
  set_moe_dispatch_shares(lt, m, p.moe_dispatcher, p.ep);
  return lt;
}

// The op lists a layer can be (core/ops.h layer_ops): a transformer layer with a dense MLP or with
// MoE, or a hybrid model's Mamba, attention, MLP or MoE layer; each with full or windowed attention.
enum LayerList { kDense, kMoe, kMamba, kAttention, kMlp, kMoeOnly, kLayerLists };

int layer_list(const ModelSpec& m, int i) {
  switch (m.layer_kind(i)) {
    case LayerKind::transformer:
      return m.is_moe_layer(i) ? kMoe : kDense;
    case LayerKind::mamba:
      return kMamba;
    case LayerKind::attention:
      return kAttention;
    case LayerKind::mlp:
      return kMlp;
    case LayerKind::moe:
      return kMoeOnly;
  }
  return kDense;
}

// The op lists' costs of one layout: every layer list with full or sliding-window attention, the
// embedding and the head.
struct ListCosts {
  std::array<ListCost, kLayerLists> full, win;  // by LayerList; win: with the sliding window
  ListCost emb, head;
};

ListCosts cost_lists(const Ctx& x, const OpContext& oc, int first_moe) {
  const ModelSpec& m = x.plan.model;
  ModelSpec full_model = m;
  full_model.window_size = 0;
  ModelSpec win_model = m;
  win_model.window_attn_skip_freq = 0;  // every layer windowed
  ListCosts lc;
  if (!m.is_hybrid()) {
    ModelSpec dense_model = full_model;
    dense_model.moe.reset();
    lc.full[kDense] = cost_ops(x, layer_ops(dense_model, 0, oc));
    if (m.moe) lc.full[kMoe] = cost_ops(x, layer_ops(full_model, first_moe, oc));
    lc.win = lc.full;
    if (m.window_size > 0) {
      ModelSpec dense_win_model = win_model;
      dense_win_model.moe.reset();
      lc.win[kDense] = cost_ops(x, layer_ops(dense_win_model, 0, oc));
      if (m.moe) lc.win[kMoe] = cost_ops(x, layer_ops(win_model, first_moe, oc));
    }
  } else {
    // each kind of layer the pattern has, costed at its first layer; an MTP depth is a transformer layer
    // (Megatron's MTP pattern "*E" or "*-": attention and the model's MoE or MLP)
    std::array<bool, kLayerLists> done{};
    if (m.mtp_num_layers > 0) {
      ModelSpec mtp_model = full_model;
      mtp_model.hybrid_override_pattern.clear();
      lc.full[m.moe ? kMoe : kDense] = cost_ops(x, layer_ops(mtp_model, 0, oc));
    }
    for (int i = 0; i < m.num_layers; ++i) {
      const int l = layer_list(m, i);
      if (done[size_t(l)]) continue;
      done[size_t(l)] = true;
      lc.full[size_t(l)] = cost_ops(x, layer_ops(full_model, i, oc));
      lc.win[size_t(l)] = m.window_size > 0 ? cost_ops(x, layer_ops(win_model, i, oc)) : lc.full[size_t(l)];
    }
  }
  lc.emb = cost_ops(x, embedding_ops(m, oc));
  lc.head = cost_ops(x, head_ops(m, oc));
  return lc;
}

// Everything cost_lists() reads besides the job (model, cluster, training, cost parameters), which a
// SimCache holds fixed: the op context, the list timing context and the recompute / offload choices.
// A field added to OpContext or ListTimingContext must be added here (the size checks fail until then).
static_assert(sizeof(OpContext) == 88, "OpContext changed: add the new field to list_key()");
static_assert(sizeof(ListTimingContext) == 136, "ListTimingContext changed: add the new field to list_key()");
using ListKey = std::array<double, 51>;

ListKey list_key(const Ctx& x, const OpContext& oc, int first_moe) {
  const ListTimingContext& t = x.lt;
  const ParallelConfig& p = x.p;
  ListKey k{};
  size_t i = 0;
  auto put = [&](double v) { k[i++] = v; };
  auto put_pl = [&](const GroupPlacement& g) { put(g.size), put(g.domains), put(g.max_per_domain), put(g.uniform); };
  put(oc.tp), put(oc.cp), put(oc.ep), put(oc.etp), put(oc.sp), put(double(oc.cp_comm)), put(oc.flash_attention);
  put(oc.triton_attention), put(double(oc.micro_batch)), put(double(oc.seq)), put(double(oc.packed_doc_tokens));
  put(double(oc.precision)), put(oc.moe_load_factor), put(double(oc.loss_memory)), put(oc.kv_repeated), put(oc.eager_pointwise);
  put(oc.torch_ring_attention), put(oc.activation_bytes);
  put(double(t.prec)), put(t.frozen), put(t.split_w), put(t.tp), put(t.cp), put(t.tp_comm_overlap), put(t.moe_a2a_overlap);
  put(t.tp_overlap_share), put_pl(t.tp_pl), put_pl(t.cp_pl), put_pl(t.ep_pl), put_pl(t.etp_pl), put(t.moe_remote_share),
      put(t.moe_local_share);
  put(t.per_expert_gemms);
  put(double(p.recompute)), put(double(p.remat_policy)), put(double(p.effective_recompute_modules().bits));
  put(double(p.offload_modules.bits)), put(double(x.plan.training.framework)), put(first_moe);
  assert(i == k.size());
  return k;
}

}  // namespace

// The op lists' costs by ListKey and the group placements by grid (SimCache::workload_memo()).
struct WorkloadMemo {
  std::mutex mu;
  std::map<ListKey, std::shared_ptr<const ListCosts>> lists;
  std::map<std::array<int, 8>, GroupPlacement> placements;  // (tp, cp, dp, pp, etp, ep, domain, dim)
};

namespace {

// RankGrid::placement (a pure function of the grid's sizes, the domain and the dimension; large data-
// parallel groups cost thousands of steps), looked up in the memo when there is one.
GroupPlacement placement_of(WorkloadMemo* memo, const RankGrid& grid, const ParallelConfig& p, Dim d, int dom) {
  if (!memo) return grid.placement(d, dom);
  const std::array<int, 8> key{p.tp, p.cp, p.dp(), p.pp, p.etp, p.ep, dom, int(d)};
  {
    std::lock_guard<std::mutex> lock(memo->mu);
    if (auto it = memo->placements.find(key); it != memo->placements.end()) return it->second;
  }
  GroupPlacement g = grid.placement(d, dom);
  std::lock_guard<std::mutex> lock(memo->mu);
  memo->placements.emplace(key, g);
  return g;
}

}  // namespace

SimCache::SimCache() : memo_(std::make_unique<WorkloadMemo>()) {}
SimCache::~SimCache() = default;

double p2p_activation_bytes(const ModelSpec& m, const TrainingSpec& t, int mbs, int tp, int cp, bool sp) {
  double tokens = double(mbs) * double(t.seq_length) / cp;
  return tokens / (sp ? tp : 1) * double(m.hidden_size) * activation_bytes(t.precision);
}

ListTiming layer_timing(const Plan& plan, const CostParams& prm_in, int layer) {
  const CostParams prm = framework_params(prm_in, plan);
  RankGrid grid(plan.parallel);
  const ListTimingContext lt = list_timing_context(plan, prm, grid, std::max(1, plan.cluster.placement_domain()));
  const OpContext oc = op_context(plan, plan.parallel, prm);
  // a transformer layer with a dense MLP is costed as the dense list is (cost_lists): the model without
  // its experts, at layer 0; MoE and hybrid layers as they are
  ModelSpec m = plan.model;
  int at = layer;
  if (!m.is_hybrid() && !m.is_moe_layer(layer)) {
    m.moe.reset();
    at = 0;
  }
  const std::vector<Op> ops = layer_ops(m, at, oc);
  return time_op_list(ops, op_list_compute(ops, lt), lt);
}

Workload build_workload(const Plan& plan, const CostParams& prm_in, WorkloadMemo* memo) {
  // the framework's kernel efficiency relative to Megatron-Core's (CostParams::framework_eff)
  const CostParams prm = framework_params(prm_in, plan);
  const ModelSpec& m = plan.model;
  const ParallelConfig& p = plan.parallel;
  const ClusterSpec& cl = plan.cluster;
  Workload w;
  w.microbatches = int(p.num_microbatches(plan.training.global_batch_size));
  w.split_w = schedule_splits_weight_grad(p.schedule);
  w.comm_overlap = prm.comm_overlap >= 0.5;
  RankGrid grid(p);
  int dom = std::max(1, cl.placement_domain());
  Ctx x{plan, p, cl, prm, {}, placement_of(memo, grid, p, Dim::dp, dom), placement_of(memo, grid, p, Dim::edp, dom)};
  x.lt = list_timing_context(plan, prm, grid, dom, memo);
  const OpContext oc = op_context(plan, p, prm);

  // layer costs by type (dense / MoE) x attention (full / sliding window), embedding and head
  int first_moe = 0;
  while (m.moe && first_moe < m.num_layers && !m.is_moe_layer(first_moe)) ++first_moe;
  std::shared_ptr<const ListCosts> memo_costs;
  std::optional<ListCosts> own_costs;
  if (memo) {
    const ListKey key = list_key(x, oc, first_moe);
    {
      std::lock_guard<std::mutex> lock(memo->mu);
      if (auto it = memo->lists.find(key); it != memo->lists.end()) memo_costs = it->second;
    }
    if (!memo_costs) {
      memo_costs = std::make_shared<const ListCosts>(cost_lists(x, oc, first_moe));
      std::lock_guard<std::mutex> lock(memo->mu);
      memo->lists.emplace(key, memo_costs);
    }
  } else {
    own_costs.emplace(cost_lists(x, oc, first_moe));
  }
  const ListCosts* costs = memo_costs ? memo_costs.get() : &*own_costs;
  const ListCost &dense = costs->full[kDense], &moe = costs->full[kMoe];
  auto layer_cost = [&](int i) -> const ListCost& {
    return (m.is_window_layer(i) ? costs->win : costs->full)[size_t(layer_list(m, i))];
  };
  const ListCost &emb = costs->emb, &head = costs->head;
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
  std::optional<ChunkCost> inner_chunk;  // the last inner chunk computed and its layer counts
  constexpr int kCounts = kLayerLists * 2 * 2;
  int inner_count[kCounts] = {};
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
      int count[kLayerLists][2][2] = {};  // [LayerList][window][recomputed]
      for (int i = first; i < first + ch.layers; ++i)
        count[layer_list(m, i)][m.is_window_layer(i) ? 1 : 0][i - first < recompute_layers ? 1 : 0]++;
      // a chunk of the same lists as the last inner one (not the first or the last chunk: they add the
      // embedding or the head; no layer-wise offloading) costs the same, by the same expressions: copied
      const bool inner = !(s == 0 && c == 0) && !(s == p.pp - 1 && c == p.vpp - 1) && p.cpu_offload_layers == 0;
      if (inner && inner_chunk && ch.layers == inner_chunk->layers &&
          std::equal(&count[0][0][0], &count[0][0][0] + kCounts, inner_count)) {
        ch = *inner_chunk;
        continue;
      }
      if (s == 0 && c == 0) add_list(emb, false, 1);
      for (int e = 0; e < kLayerLists; ++e)
        for (int wi = 0; wi < 2; ++wi)
          for (int r = 0; r < 2; ++r) add_list((wi ? costs->win : costs->full)[size_t(e)], r == 1, count[e][wi][r]);
      if (s == p.pp - 1 && c == p.vpp - 1) {
        const int mtp_list = m.is_hybrid() ? (m.moe ? kMoe : kDense) : layer_list(m, m.num_layers - 1);
        add_list(costs->full[size_t(mtp_list)], false, m.mtp_num_layers);
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
      if (inner) {  // as computed, before a stage's FSDP traffic is added below
        inner_chunk = ch;
        std::copy(&count[0][0][0], &count[0][0][0] + kCounts, inner_count);
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
    if (p.zero == 3) {
      // FSDP: parameters gathered before each chunk's forward and backward, gradients scattered after
      // its backward, per micro-batch, overlapped with that chunk's compute
      int stage_layers = 0;
      for (int cc = 0; cc < p.vpp; ++cc) stage_layers += n[s][cc];
      for (int c = 0; c < p.vpp; ++c) {
        ChunkCost& ch = st.chunks[c];
        double frac = sp[s].total() > 0 ? double(ch.layers) / std::max(1, stage_layers) : 0;
        FsdpTraffic t = fsdp_chunk_traffic(st.dense_params, st.expert_params, frac, x.dp, x.edp, cl, prm);
        ch.fsdp_gather_s = t.gather_s;
        ch.fsdp_scatter_s = t.scatter_s;
        ch.F.dp += overlapped(x, t.gather_s, ch.F.total(), std::max(1, ch.layers));
        ch.B.dp += overlapped(x, t.gather_s + t.scatter_s, ch.B.total(), std::max(1, ch.layers));
      }
    }
    st.dp_grad_s = dp_grad_reduce_s(p.zero, st.dense_params, st.expert_params, x.dp, x.edp, cl, prm);
    st.dp_param_gather_s = dp_param_gather_s(p.zero, st.dense_params, st.expert_params, x.dp, x.edp, cl, prm);
    st.dp_buckets = dp_bucket_count(st.dense_params + st.expert_params, dp);
    st.optimizer_s = optimizer_step_s(p.zero, st.dense_params, st.expert_params, dp, p.edp(), cl, prm);
  }
  // pipeline traffic: one activation tensor per micro-batch and boundary (sequence-parallel shard)
  w.p2p_bytes = p2p_activation_bytes(m, plan.training, p.micro_batch_size, p.tp, p.cp, p.sp);
  if (p.pp > 1) {
    int a = grid.rank_of_dense(0, 0, 0, 0), b = grid.rank_of_dense(0, 0, 0, 1);
    w.p2p_s = p2p_time_s(w.p2p_bytes, a / dom == b / dom, cl, prm);
  }
  return w;
}

}  // namespace mplan
