// MpiComm: Comm over an MPI communicator, and the MPI process lifecycle helpers. Every MPI error is
// reported with the failing call, host, rank, file and line, and aborts the whole job (no hang).
#pragma once
#include <mpi.h>

#include "executor/comm/comm.h"

namespace mplan::exec {

class MpiComm final : public Comm {
 public:
  // Takes ownership of `comm` (freed in the destructor unless it is MPI_COMM_WORLD/SELF).
  explicit MpiComm(MPI_Comm comm);
  ~MpiComm() override;
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::vector<int>& members() const override { return members_; }
  MPI_Comm handle() const { return comm_; }

  // Comm's calls (all_reduce_sum ... barrier), declared once for every communicator
#include "executor/comm/comm_calls.inc"

 private:
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  std::vector<int> members_;
  std::vector<MPI_Request> pending_;
};

// Splits `base` into the group containing this rank: ranks with equal `color` form one group,
// ordered by `key`. color < 0 = not a member (returns null).
std::unique_ptr<MpiComm> split_comm(MPI_Comm base, int color, int key);

// True when this process was started by an MPI launcher (mpirun/srun set these variables).
bool launched_under_mpi();

}  // namespace mplan::exec
