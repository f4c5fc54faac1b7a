// NCCL process groups from the pure group plan (see nccl_groups.h).
#include "executor/comm/nccl/nccl_groups.h"

#include "core/rank_grid.h"
#include "executor/comm/nccl/group_plan.h"
#include "executor/comm/nccl/nccl_comm.h"

namespace mplan::exec {

ProcessGroups make_nccl_process_groups(MPI_Comm base, const ParallelConfig& p, cudaStream_t compute) {
  ProcessGroups g;
  MPI_Comm_rank(base, &g.rank);
  g.coord = RankGrid(p).coord(g.rank);
  std::unique_ptr<Comm>* slot[] = {&g.world, &g.tp, &g.cp, &g.dp, &g.pp, &g.tp_cp, &g.dp_cp, &g.ep, &g.etp, &g.edp, &g.embedding};
  const std::vector<GroupSplit> plan = process_group_plan(p, g.rank);
  for (size_t i = 0; i < plan.size(); ++i) {
    std::unique_ptr<MpiComm> mpi = split_comm(base, plan[i].color, plan[i].key);
    if (mpi) *slot[i] = std::make_unique<NcclComm>(std::move(mpi), compute);
  }
  return g;
}

}  // namespace mplan::exec
