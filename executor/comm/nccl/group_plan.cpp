// Process-group split colors and members from RankGrid (see group_plan.h).
#include "executor/comm/nccl/group_plan.h"

#include "core/rank_grid.h"

namespace mplan::exec {

namespace {

GroupSplit along(const RankGrid& grid, const char* name, const std::vector<Dim>& dims, int rank) {
  GroupSplit s;
  s.name = name;
  const auto groups = grid.groups(dims);
  for (size_t g = 0; g < groups.size(); ++g)
    for (size_t i = 0; i < groups[g].size(); ++i)
      if (groups[g][i] == rank) {
        s.color = int(g);
        s.key = int(i);
        s.members = groups[g];
        return s;
      }
  return s;
}

}  // namespace

std::vector<GroupSplit> process_group_plan(const ParallelConfig& p, int rank) {
  RankGrid grid(p);
  std::vector<GroupSplit> out;
  GroupSplit world{"world", 0, rank, {}};
  for (int r = 0; r < grid.world_size(); ++r) world.members.push_back(r);
  out.push_back(world);
  out.push_back(along(grid, "tp", {Dim::tp}, rank));
  out.push_back(along(grid, "cp", {Dim::cp}, rank));
  out.push_back(along(grid, "dp", {Dim::dp}, rank));
  out.push_back(along(grid, "pp", {Dim::pp}, rank));
  out.push_back(along(grid, "tp_cp", {Dim::tp, Dim::cp}, rank));
  out.push_back(along(grid, "dp_cp", {Dim::cp, Dim::dp}, rank));
  out.push_back(along(grid, "ep", {Dim::ep}, rank));
  out.push_back(along(grid, "etp", {Dim::etp}, rank));
  out.push_back(along(grid, "edp", {Dim::edp}, rank));
  // first and last pipeline stage of the same (tp, cp, dp): the tied word embedding
  GroupSplit emb{"embedding", -1, 0, {}};
  const RankCoord c = grid.coord(rank);
  if (p.pp > 1 && (c.pp == 0 || c.pp == p.pp - 1)) {
    emb.color = grid.rank_of_dense(c.tp, c.cp, c.dp, 0);
    emb.key = c.pp == 0 ? 0 : 1;
    emb.members = {grid.rank_of_dense(c.tp, c.cp, c.dp, 0), grid.rank_of_dense(c.tp, c.cp, c.dp, p.pp - 1)};
  }
  out.push_back(emb);
  return out;
}

}  // namespace mplan::exec
