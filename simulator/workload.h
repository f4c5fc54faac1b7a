// Workload: a plan turned into per-(stage, chunk) action costs — forward, backward (input grad) and
// weight-grad durations with their parts (compute, recompute, exposed TP/CP/EP communication) —
// per-op times, activation memory per micro-batch, and the pipeline / data-parallel traffic.
#pragma once
#include <string>
#include <vector>

#include "core/plan.h"
#include "core/rank_grid.h"
#include "simulator/cost_params.h"

namespace mplan {

// Duration of one action and what it is made of; parts sum to `total`.
struct PhaseCost {
  double compute = 0;
  double recompute = 0;
  double tp = 0;    // exposed tensor-parallel communication
  double cp = 0;    // exposed context-parallel communication
  double ep = 0;    // exposed expert-parallel communication
  double dp = 0;    // exposed FSDP (zero 3) parameter/gradient traffic
  double host = 0;  // exposed activation-offloading transfers (device <-> host)
  double total() const { return compute + recompute + tp + cp + ep + dp + host; }
  PhaseCost scaled(double k) const { return {compute * k, recompute * k, tp * k, cp * k, ep * k, dp * k, host * k}; }
  PhaseCost& operator+=(const PhaseCost& o) {
    compute += o.compute;
    recompute += o.recompute;
    tp += o.tp;
    cp += o.cp;
    ep += o.ep;
    dp += o.dp;
    host += o.host;
    return *this;
  }
};

// Per-op time per micro-batch (forward + backward) on one (stage, chunk).
struct OpTally {
  std::string name;
  double time_s = 0;
  int calls = 0;
};

struct ChunkCost {
  int layers = 0;
  PhaseCost F, B, W;               // W is empty unless the schedule splits weight gradients
  double act_bytes = 0;            // activations held from F until B(/W), per micro-batch
  double act_w_bytes = 0;          // the part of act_bytes held until W (zero-bubble)
  double transient_bytes = 0;      // working memory during this chunk's backward (recompute, gradients, logits)
  double fwd_transient_bytes = 0;  // working memory during this chunk's forward (logits, CP K/V buffers)
  std::vector<OpTally> ops;
  // ZeRO-3 only: the parameter all-gather and gradient reduce-scatter of this chunk per micro-batch,
  // whole (F/B.dp hold what of them is exposed); for the timeline's communication events.
  double fsdp_gather_s = 0, fsdp_scatter_s = 0;
};

struct StageWork {
  std::vector<ChunkCost> chunks;  // [vpp]
  double dense_params = 0;        // parameters on this rank (after TP split), non-expert
  double expert_params = 0;       // expert parameters on this rank (after EP x ETP split)
  double unquantized_params = 0;  // of dense_params: embedding, LM head and norms (never fp8 linears)
  double layer_params = 0;        // the largest transformer layer's parameters on this rank (FSDP unit)
  int layers = 0;                 // transformer layers on this rank (all chunks)
  double dp_grad_s = 0;           // gradient reduction over DP (+ expert grads over EDP)
  double dp_param_gather_s = 0;   // parameter all-gather after the step (distributed optimizer)
  double optimizer_s = 0;         // local optimizer step
  int dp_buckets = 1;
};

// Working memory of one op list (a layer type, the embedding or the head), per micro-batch: what a
// chunk's backward needs beyond the kept activations with no recompute, full recompute (one layer
// rematerialised) and selective recompute, and what its forward needs (logits, CP K/V buffers).
struct ListMemory {
  double bwd_none = 0, bwd_full = 0, bwd_selective = 0, fwd = 0;
};

struct Workload {
  std::vector<StageWork> stages;                     // [pp]
  ListMemory dense_mem, moe_mem, emb_mem, head_mem;  // the planner's per-piece transients
  double p2p_bytes = 0;                              // activation (and gradient) tensor between stages
  double p2p_s = 0;                                  // transfer time of one such tensor
  int microbatches = 0;
  bool split_w = false;
  bool comm_overlap = true;  // collectives may run beside compute (CostParams::comm_overlap)
  std::vector<std::string> warnings;
};

struct WorkloadMemo;
// `memo` (SimCache::workload_memo(), optional): the op lists' costs of layouts simulated before for
// the same job, reused when everything they depend on is equal (same results as without).
Workload build_workload(const Plan& plan, const CostParams& params, WorkloadMemo* memo = nullptr);

// The activation (and gradient) tensor one pipeline transfer carries per micro-batch: the
// sequence-parallel shard of mbs x seq/cp tokens of the hidden size.
double p2p_activation_bytes(const ModelSpec& m, const TrainingSpec& t, int mbs, int tp, int cp, bool sp);

struct ListTiming;
// Time of transformer layer `layer` of `plan` per micro-batch without recomputation, exactly as
// build_workload charges it (simulator/layer_cost.h with the plan's group placements).
ListTiming layer_timing(const Plan& plan, const CostParams& params, int layer);

}  // namespace mplan
