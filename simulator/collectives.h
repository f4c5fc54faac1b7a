// Collective and point-to-point times: hierarchical alpha-beta over NVLink domains and the scale-out
// network, ring or tree (whichever is faster), for the real placement of a group (core/rank_grid.h).
#pragma once
#include "core/cluster_spec.h"
#include "core/ops.h"
#include "core/rank_grid.h"
#include "simulator/cost_params.h"

namespace mplan {

// Time of collective `c` with nccl-tests "size" `bytes` (all-reduce: the buffer; all-gather: the
// gathered output; reduce-scatter: the input; all-to-all: one rank's send buffer; send_recv: the
// message) over a group placed as `g` on cluster `cl`.
double collective_time_s(Collective c, double bytes, const GroupPlacement& g, const ClusterSpec& cl, const CostParams& p);

// MoE token dispatch or combine all-to-all with `bytes` = one rank's token copies (top-k per token).
// `remote_share` scales the bytes that cross the network: 1 for NCCL all-to-all (every copy to a
// remote expert travels on its own); below 1 for dispatchers that send a token once per remote
// NVLink domain and fan it out there (moe_remote_share). `local_share` scales the bytes inside the
// domain: 1 for NCCL all-to-all; below 1 for dispatchers that send a token once per destination rank,
// however many of its experts that rank holds (moe_local_share).
double moe_all_to_all_time_s(double bytes, double remote_share, const GroupPlacement& g, const ClusterSpec& cl,
                             const CostParams& p, double local_share = 1.0);

// NVLink bytes of a rank-deduplicating dispatcher (DeepEP, HybridEP: a token goes once to each rank
// holding at least one of its k experts) over those of a plain all-to-all, for top-k routing over
// `experts` spread evenly over the group's n ranks: n (1 - P(no expert on a rank)) sends per token
// instead of k copies, P = prod_{i<k} (E - E/n - i) / (E - i).
double moe_local_share(int experts, int top_k, const GroupPlacement& g);

// Network bytes of a domain-deduplicating dispatcher over those of a plain all-to-all, for top-k
// routing over `experts` spread evenly over the group's ranks: a token reaches each remote domain
// that holds at least one of its k experts once, i.e. (D-1)(1 - P(no expert in a domain)) sends
// instead of k(D-1)/D copies.
// Group-limited routing (num_groups > 0: a token's experts come from group_topk of num_groups equal
// groups, DeepSeek-V3's node-limited routing) caps the remote domains a token reaches at group_topk times
// the domains one group spans.
double moe_remote_share(int experts, int top_k, const GroupPlacement& g, int num_groups = 0, int group_topk = 0);

// Point-to-point transfer between two ranks, in the same NVLink domain or not.
double p2p_time_s(double bytes, bool same_domain, const ClusterSpec& cl, const CostParams& p);

}  // namespace mplan
