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
double collective_time_s(Collective c, double bytes, const GroupPlacement& g, const ClusterSpec& cl,
                         const CostParams& p);

// Point-to-point transfer between two ranks, in the same NVLink domain or not.
double p2p_time_s(double bytes, bool same_domain, const ClusterSpec& cl, const CostParams& p);

}  // namespace mplan
