// Allocation-free group placement (see placement.h).
#include "planner/placement.h"

namespace mplan::planner {

GroupPlacement fast_placement(int tp, int cp, int dp, int pp, int etp, int ep, Dim d, int domain) {
  return RankGrid(tp, cp, dp, pp, etp, ep).placement(d, domain);  // allocation-free in core
}

}  // namespace mplan::planner
