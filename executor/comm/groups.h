// ProcessGroups: this rank's communicators, built from RankGrid (Megatron order tp-cp-ep-dp-pp and
// the expert view etp-ep-edp-pp) by MPI_Comm_split of a base communicator. Passed explicitly to
// the layers; there is no global process-group state.
#pragma once
#include <mpi.h>

#include <memory>

#include "core/rank_grid.h"
#include "executor/comm/comm.h"

namespace mplan::exec {

struct ProcessGroups {
  int rank = 0;  // in the base communicator (= global rank when the base is MPI_COMM_WORLD)
  RankCoord coord;
  std::unique_ptr<Comm> world;  // the whole job
  std::unique_ptr<Comm> tp, cp, dp, pp;
  std::unique_ptr<Comm> tp_cp;         // tensor-and-context group (MoE load-balancing statistics)
  std::unique_ptr<Comm> dp_cp;         // data-parallel group with context parallel (dense gradients)
  std::unique_ptr<Comm> ep, etp, edp;  // expert view (edp: expert gradients)
  // first and last pipeline stage of the same (tp, cp, dp): tied embedding gradients; null when
  // pp == 1 or this rank is on a middle stage
  std::unique_ptr<Comm> embedding;
};

ProcessGroups make_process_groups(MPI_Comm base, const ParallelConfig& p);

}  // namespace mplan::exec
