// The cost rules of one op list (a transformer layer, the embedding or the head) per micro-batch —
// the one place that says what an op costs and which transfer hides behind which compute. Both the
// simulator's workload (simulator/workload.cpp) and the planner's probe-free bounds (planner/floor.cpp)
// call these functions, so the two cannot drift apart:
//  - exposed_comm_s: a transfer of c seconds beside g seconds of compute (split in n pieces);
//  - op_context: the per-rank view of a micro-batch (sizes, attention kernel, MoE load of the busiest
//    expert rank, loss memory) for a layout;
//  - time_op_list: forward, backward and weight-gradient time of an op list with its exposed TP, CP and
//    EP communication:
//    - sequence-parallel TP: forward all-gather/reduce-scatter exposed unless tp_comm_overlap; in the
//      backward Megatron overlaps the input re-gather with dgrad and the grad reduce-scatter with wgrad;
//    - TP without SP: forward all-reduce exposed, backward all-reduce overlapped with wgrad;
//    - CP p2p ring: each of the cp-1 K/V transfers overlaps one attention block;
//    - EP/ETP all-to-all and gathers, CP a2a/all-gather: exposed, except that with moe_a2a_overlap
//      (Megatron's merged forward/backward of two micro-batches) each EP all-to-all runs beside one
//      compute piece of the other micro-batch: forward dispatch with the backward MLP, forward combine
//      with the backward attention, backward dispatch with the forward MLP, backward combine with the
//      forward attention; the compute then runs on the SMs the communication kernels leave free.
#pragma once
#include <algorithm>
#include <vector>

#include "core/ops.h"
#include "core/plan.h"
#include "core/rank_grid.h"
#include "simulator/compute_cost.h"
#include "simulator/cost_params.h"
#include "simulator/workload.h"

namespace mplan {

// Exposed time of a communication of `comm_s` overlapped with `compute_s` of compute (chunked in
// `pieces`): the compute slows down by prm.overlap_slowdown and only the excess is exposed; with
// blocking communication (prm.comm_overlap off) nothing hides. Inline: the planner's bounds call it
// millions of times per search.
inline double exposed_comm_s(double comm_s, double compute_s, int pieces, const CostParams& prm) {
  if (comm_s <= 0) return 0;
  if (prm.comm_overlap < 0.5) return comm_s;  // blocking communication: nothing hides
  double gs = compute_s * (1.0 + prm.overlap_slowdown);
  return std::max(comm_s, gs) - compute_s + std::min(comm_s, compute_s) / std::max(1, pieces);
}

// The cost parameters of a framework (its kernel efficiency relative to Megatron-Core's,
// CostParams::framework_eff, applied to the GEMM, attention and HBM efficiencies; its loop's per-step
// host time and FP8 scaling kernels), and the kernel gap of CUDA graphs where the plan captures them.
CostParams framework_params(const CostParams& prm, Framework fw, CudaGraphImpl graphs = CudaGraphImpl::none);
// framework_params for a plan: its framework and its CUDA graphs (what the simulator and the planner use).
CostParams framework_params(const CostParams& prm, const Plan& plan);

// The op context of layout `p` for `plan`'s model and training (p may differ from plan.parallel).
OpContext op_context(const Plan& plan, const ParallelConfig& p, const CostParams& prm);

// What the time of an op list depends on beyond the ops themselves.
struct ListTimingContext {
  const ClusterSpec* cl = nullptr;
  const CostParams* prm = nullptr;
  Precision prec = Precision::bf16;
  bool frozen = false;   // LoRA: frozen base weights get no gradient
  bool split_w = false;  // zero-bubble: weight gradients in their own W pass
  int tp = 1, cp = 1;
  bool tp_comm_overlap = false, moe_a2a_overlap = false;
  double tp_overlap_share = 1.0;  // FrameworkRuns::tp_overlap_share of the plan's framework
  GroupPlacement tp_pl, cp_pl, ep_pl, etp_pl;
  double moe_remote_share = 1.0;  // network bytes of the MoE dispatcher over a plain all-to-all
  double moe_local_share = 1.0;   // its NVLink bytes over a plain all-to-all
  bool per_expert_gemms = false;  // per_expert_gemms(plan) below
};

// The MoE dispatcher's byte shares (moe_remote_share, moe_local_share of simulator/collectives.h) for
// model m with expert parallelism ep, from x.ep_pl: 1 for NCCL all-to-all or without experts. The one
// place the simulator's lists and the planner's floor take them from.
void set_moe_dispatch_shares(ListTimingContext& x, const ModelSpec& m, MoeDispatcher d, int ep);

// Whether the plan's expert GEMMs run one kernel per local expert: its framework launches them so
// (FrameworkRuns::per_expert_gemms) and the run does not use TE's fused grouped MLP.
bool per_expert_gemms(const Plan& plan);

// Compute costs of the ops of a list (comm ops left at zero); fp8 recipes keep the LM head and the
// router in bf16.
std::vector<OpCost> op_list_compute(const std::vector<Op>& ops, const ListTimingContext& x);
// Time of one communication op (MoE token all-to-alls through the dispatcher's model).
double op_comm_time_s(const Op& op, const ListTimingContext& x);

struct ListTiming {
  PhaseCost F, B, W;  // B includes the weight gradient unless split_w
  // per op: the communication time (comm ops) and the forward's parts after the op (for what a
  // re-run module repeats), filled when asked
  std::vector<double> comm_s;
  std::vector<PhaseCost> f_after;
};

// Time of an op list per micro-batch with the overlap rules above; `oc` from op_list_compute.
ListTiming time_op_list(const std::vector<Op>& ops, const std::vector<OpCost>& oc, const ListTimingContext& x,
                        bool per_op = false);

}  // namespace mplan
