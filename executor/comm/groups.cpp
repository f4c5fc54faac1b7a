// Builds every process group of a layout with MPI_Comm_split over RankGrid's group lists.
#include "executor/comm/groups.h"

#include "executor/comm/mpi_comm.h"

namespace mplan::exec {

namespace {

// The communicator of the group (along `dims`) that contains `rank`.
std::unique_ptr<Comm> group_comm(MPI_Comm base, const RankGrid& grid, const std::vector<Dim>& dims, int rank) {
  auto groups = grid.groups(dims);
  for (size_t g = 0; g < groups.size(); ++g)
    for (size_t i = 0; i < groups[g].size(); ++i)
      if (groups[g][i] == rank) return split_comm(base, int(g), int(i));
  return split_comm(base, -1, 0);
}

}  // namespace

ProcessGroups make_process_groups(MPI_Comm base, const ParallelConfig& p) {
  RankGrid grid(p);
  ProcessGroups g;
  MPI_Comm_rank(base, &g.rank);
  g.coord = grid.coord(g.rank);
  MPI_Comm dup;
  MPI_Comm_dup(base, &dup);
  g.world = std::make_unique<MpiComm>(dup);
  g.tp = group_comm(base, grid, {Dim::tp}, g.rank);
  g.cp = group_comm(base, grid, {Dim::cp}, g.rank);
  g.dp = group_comm(base, grid, {Dim::dp}, g.rank);
  g.pp = group_comm(base, grid, {Dim::pp}, g.rank);
  g.tp_cp = group_comm(base, grid, {Dim::tp, Dim::cp}, g.rank);
  g.dp_cp = group_comm(base, grid, {Dim::cp, Dim::dp}, g.rank);
  g.ep = group_comm(base, grid, {Dim::ep}, g.rank);
  g.etp = group_comm(base, grid, {Dim::etp}, g.rank);
  g.edp = group_comm(base, grid, {Dim::edp}, g.rank);
  int color = -1, key = 0;
  if (p.pp > 1 && (g.coord.pp == 0 || g.coord.pp == p.pp - 1)) {
    color = grid.rank_of_dense(g.coord.tp, g.coord.cp, g.coord.dp, 0);
    key = g.coord.pp == 0 ? 0 : 1;
  }
  g.embedding = split_comm(base, color, key);
  return g;
}

}  // namespace mplan::exec
