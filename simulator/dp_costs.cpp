// Data-parallel costs of a stage (see dp_costs.h).
#include "simulator/dp_costs.h"

#include <algorithm>
#include <cmath>

#include "simulator/collectives.h"

namespace mplan {

int dp_bucket_count(double params, int dp) {
  double bucket_params = std::max(40e6, 1e6 * dp);
  return std::max(1, int(std::ceil(params / bucket_params)));
}

double dp_grad_reduce_s(int zero, double dense, double expert, const GroupPlacement& dp, const GroupPlacement& edp,
                        const ClusterSpec& cl, const CostParams& prm) {
  if (zero >= 3) return 0;
  Collective gc = zero == 0 ? Collective::all_reduce : Collective::reduce_scatter;
  return collective_time_s(gc, dense * 4, dp, cl, prm) + collective_time_s(gc, expert * 4, edp, cl, prm);
}

double dp_param_gather_s(int zero, double dense, double expert, const GroupPlacement& dp, const GroupPlacement& edp,
                         const ClusterSpec& cl, const CostParams& prm) {
  if (zero == 0 || zero >= 3) return 0;
  return collective_time_s(Collective::all_gather, dense * 2, dp, cl, prm) +
         collective_time_s(Collective::all_gather, expert * 2, edp, cl, prm);
}

FsdpTraffic fsdp_chunk_traffic(double dense, double expert, double frac, const GroupPlacement& dp, const GroupPlacement& edp,
                               const ClusterSpec& cl, const CostParams& prm) {
  FsdpTraffic t;
  t.gather_s = collective_time_s(Collective::all_gather, dense * 2 * frac, dp, cl, prm) +
               collective_time_s(Collective::all_gather, expert * 2 * frac, edp, cl, prm);
  t.scatter_s = collective_time_s(Collective::reduce_scatter, dense * 4 * frac, dp, cl, prm) +
                collective_time_s(Collective::reduce_scatter, expert * 4 * frac, edp, cl, prm);
  return t;
}

double optimizer_step_s(int zero, double dense, double expert, int dp, int edp, const ClusterSpec& cl, const CostParams& prm) {
  double local = zero >= 1 ? dense / std::max(1, dp) + expert / std::max(1, edp) : dense + expert;
  return local * 34.0 / (cl.gpu.hbm_gbps * 1e9 * prm.hbm_eff) + prm.optimizer_overhead_s;
}

}  // namespace mplan
