// Load of the busiest expert-parallel rank, grounded in measurements of routing statistics rather than
// in end-to-end throughput pairs:
//   busiest / mean = 1 + e_ep * sqrt( floor^2 + cv^2 * ep / E )
//  - e_n: the expected maximum of n independent standard normals (computed exactly);
//  - floor^2 = (E - k) / ((E - 1) * T_rank * k): multinomial sampling of T_rank tokens to k of E experts
//    (the hypergeometric variance of a rank's share). Megatron's --moe-router-force-load-balancing draws
//    random router logits (moe_utils.py, router.py), so forced balance still has this floor;
//  - cv: the coefficient of variation of tokens per expert under learned routing (CostParams::
//    moe_expert_cv, default 0.3 from Wang et al. 2024, arXiv 2408.15664 Table 2: MaxVio_global 0.72 / 0.52
//    for auxiliary-loss balancing at E = 64, top-6, i.e. a per-expert CV of about 0.22-0.31); a rank sums
//    E/ep experts, so its CV is cv * sqrt(ep / E).
// A capacity factor caps the busiest rank's load; padding to capacity makes it exactly the factor.
#pragma once

namespace mplan {

// E[max of n iid N(0, 1)] (0 for n <= 1).
double expected_max_of_normals(int n);

// The busiest EP rank's tokens over the mean. tokens_per_rank: tokens a rank routes per micro-batch.
double moe_busiest_rank_factor(int num_experts, int top_k, int ep, double tokens_per_rank, bool forced_balance, double expert_cv);

}  // namespace mplan
