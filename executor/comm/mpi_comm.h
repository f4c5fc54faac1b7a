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

  void all_reduce_sum(float* x, int64_t n) override;
  void all_reduce_sum(double* x, int64_t n) override;
  void all_reduce_max(float* x, int64_t n) override;
  void all_reduce_max(double* x, int64_t n) override;
  void all_gather(const float* send, float* recv, int64_t n_each) override;
  void reduce_scatter_sum(const float* send, float* recv, int64_t n_each) override;
  void all_to_all_v(const float* send, const std::vector<int64_t>& send_counts, float* recv,
                    const std::vector<int64_t>& recv_counts) override;
  void all_to_all_counts(const std::vector<int64_t>& send, std::vector<int64_t>& recv) override;
  std::vector<int64_t> all_gather_counts(const std::vector<int64_t>& mine) override;
  void all_gather_v(const float* send, float* recv, const std::vector<int64_t>& counts) override;
  void reduce_scatter_v(const float* send, float* recv, const std::vector<int64_t>& counts) override;
  void broadcast(float* x, int64_t n, int root) override;
  void broadcast_bytes(std::string& bytes, int root) override;
  std::vector<std::string> gather_bytes(const std::string& mine, int root) override;
  void isend(const float* buf, int64_t n, int peer, int tag) override;
  void recv(float* buf, int64_t n, int peer, int tag) override;
  void wait_sends() override;
  void sendrecv(const float* send, int64_t ns, int dst, float* recv, int64_t nr, int src, int tag) override;
  void barrier() override;

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
