// RankGrid::placement(dim, domain) without allocations: the same 16 sampled groups and the same
// worst-of rule, counting NVLink domains by runs (a group's members are increasing ranks). The
// planner asks this for thousands of frames; RankGrid's version builds a std::map per sample.
// tests/planner checks that both agree on many grids.
#pragma once
#include "core/rank_grid.h"

namespace mplan::planner {

GroupPlacement fast_placement(int tp, int cp, int dp, int pp, int etp, int ep, Dim d, int domain);

}  // namespace mplan::planner
