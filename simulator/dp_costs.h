// Data-parallel costs of one pipeline stage — the gradient reduction and its buckets, the parameter
// all-gather of the distributed optimizer, the ZeRO-3 (FSDP) traffic of one chunk and the local
// optimizer step — in one place, for the simulator's workload (simulator/workload.cpp) and the
// planner's frames (planner/frame.cpp). Parameter counts are per rank (after the TP / EP x ETP split).
#pragma once
#include "core/cluster_spec.h"
#include "core/rank_grid.h"
#include "simulator/cost_params.h"

namespace mplan {

// Gradient buckets of a stage with `params` parameters on the rank: Megatron's bucket of
// max(40e6, 1e6 * dp) parameters.
int dp_bucket_count(double params, int dp);

// Gradient reduction over DP (dense) and expert-DP (expert parameters), fp32 gradients: an
// all-reduce with ZeRO 0, a reduce-scatter with ZeRO 1-2, none with ZeRO 3 (per chunk, fsdp_chunk).
double dp_grad_reduce_s(int zero, double dense, double expert, const GroupPlacement& dp, const GroupPlacement& edp,
                        const ClusterSpec& cl, const CostParams& prm);
// The bf16 parameter all-gather after the step of the distributed optimizer (ZeRO 1-2; 0 otherwise).
double dp_param_gather_s(int zero, double dense, double expert, const GroupPlacement& dp, const GroupPlacement& edp,
                         const ClusterSpec& cl, const CostParams& prm);

// ZeRO-3: a chunk holding `frac` of the stage's parameters gathers them (bf16) before its forward and
// backward and scatters their fp32 gradients after its backward, per micro-batch.
struct FsdpTraffic {
  double gather_s = 0, scatter_s = 0;
};
FsdpTraffic fsdp_chunk_traffic(double dense, double expert, double frac, const GroupPlacement& dp, const GroupPlacement& edp,
                               const ClusterSpec& cl, const CostParams& prm);

// AdamW on the rank's shard: ~34 bytes per parameter (fp32 master, m, v, grad; bf16 param out) at the
// HBM bandwidth, plus the fixed per-step overhead. With ZeRO >= 1 the shard is dense/dp + expert/edp.
double optimizer_step_s(int zero, double dense, double expert, int dp, int edp, const ClusterSpec& cl, const CostParams& prm);

}  // namespace mplan
