// The process groups of a layout as plain data: for one rank, every group of ProcessGroups (world,
// tp, cp, dp, pp, tp_cp, dp_cp, ep, etp, edp, embedding) with its split color (the group's index
// among RankGrid's groups along those dimensions; -1 = not a member), key (position in the group)
// and member list (global ranks in group order). The same colors/keys the MPI groups use
// (comm/groups.cpp); the NCCL groups are built from this list, so it is unit-tested against RankGrid
// without MPI or a GPU.
#pragma once
#include <string>
#include <vector>

#include "core/parallel_config.h"

namespace mplan::exec {

struct GroupSplit {
  std::string name;  // "tp", "dp_cp", ...
  int color = -1;    // -1: this rank is in no such group (embedding group on a middle stage)
  int key = 0;
  std::vector<int> members;
};

// In construction order (the same on every rank, so collective creation cannot deadlock).
std::vector<GroupSplit> process_group_plan(const ParallelConfig& p, int rank);

}  // namespace mplan::exec
