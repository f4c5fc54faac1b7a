// ProcessGroups over NCCL: the groups of process_group_plan(), each an MPI communicator split from
// `base` (same colors and keys as the MPI groups) wrapped in an NcclComm on the current device.
// Collective over `base`.
#pragma once
#include <cuda_runtime.h>
#include <mpi.h>

#include "executor/comm/groups.h"

namespace mplan::exec {

ProcessGroups make_nccl_process_groups(MPI_Comm base, const ParallelConfig& p, cudaStream_t compute);

}  // namespace mplan::exec
