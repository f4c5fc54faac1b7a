// The mixture-of-experts half of a layer:
//   mlp_norm -> router (top-k softmax, load-balancing loss) -> permute -> dispatch_a2a
//   -> [etp_allgather] -> expert_fc1_gemm -> expert_act -> expert_fc2_gemm -> [etp_reduce_scatter]
//   -> combine_a2a -> unpermute (weighted sum) (+ shared expert) -> mlp_residual
// Routing runs on this rank's sequence-parallel token shard; the load-balancing statistics are summed
// over the micro-batch (tp x cp group) so every layout computes the same loss.
#pragma once
#include "executor/model/mlp.h"
#include "executor/parallel/ep_dispatch.h"

namespace mplan::exec {

struct MoeParams {
  NormParams norm;
  int router = -1, router_bias = -1;  // (E, C), (E), replicated
  std::vector<FfnParams> experts;     // local experts (etp shards)
  FfnParams shared;                   // shared expert (tp shard); fc1 < 0 when absent
};

struct MoeActs {
  NormActs norm;
  Tensor h;                      // (Nsp, C) router and expert input
  Tensor probs, weights;         // (Nsp, E), (Nsp, k)
  std::vector<int32_t> idx;      // (Nsp * k) chosen experts
  std::vector<int32_t> src_row;  // (R) token of each sent row (sorted by expert)
  std::vector<int32_t> assign;   // (R) index t*k + j of each sent row
  Tensor row_w;                  // (R) routing weight of each sent row
  EpRouting route;
  std::vector<FfnActs> expert;   // per local expert
  Tensor ys;                     // (R, C) combined expert outputs
  std::vector<double> aux_grad;  // (E) d loss / d probs[:, e]
  FfnActs shared;
};

void register_moe(ParamStore& ps, const LayoutDims& d, int layer, MoeParams& p);
Tensor moe_forward(Exec& ex, const MoeParams& p, const Tensor& x, MoeActs& a);
Tensor moe_backward(Exec& ex, const MoeParams& p, const Tensor& dy, MoeActs& a);

}  // namespace mplan::exec
