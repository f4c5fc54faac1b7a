// NcclComm: Comm over an NCCL communicator for device (and managed) buffers, on its own
// communication stream. Collectives wait for the compute stream through an event, then run on the
// communication stream; the calls are blocking like the MPI implementation's (the executor's
// layers communicate synchronously), so the stream pair is where overlap would start. Variable
// collectives are NCCL groups of send/recv (all-to-all(v), all-gather(v)) or of reduces
// (reduce-scatter(v)); a ring step (sendrecv) is one NCCL group. Host buffers (loss and norm sums,
// counts, bytes) and the tag-matched pipeline messages (isend/recv, staged through host memory) go
// through the group's MPI communicator, which NcclComm owns.
#pragma once
#include <cuda_runtime.h>
#include <nccl.h>

#include <deque>
#include <memory>
#include <vector>

#include "executor/comm/mpi_comm.h"

namespace mplan::exec {

class NcclComm final : public Comm {
 public:
  // Collective over the members of `mpi`: rank 0 creates the NCCL unique id and broadcasts it over
  // MPI (as nccl-tests does), every member joins with its MPI rank. The current CUDA device is used.
  NcclComm(std::unique_ptr<MpiComm> mpi, cudaStream_t compute);
  ~NcclComm() override;
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  int rank() const override { return mpi_->rank(); }
  int size() const override { return mpi_->size(); }
  const std::vector<int>& members() const override { return mpi_->members(); }
  cudaStream_t stream() const { return stream_; }

  // Comm's calls (all_reduce_sum ... barrier), declared once for every communicator
#include "executor/comm/comm_calls.inc"

 private:
  void begin();   // the communication stream waits for the compute stream
  void finish();  // blocks until the communication stream is done
  // An all-reduce of `n` values (float or double) with `op` (ncclSum or ncclMax): NCCL on the
  // communication stream when `x` is device memory, else the MPI communicator's.
  template <class T>
  void all_reduce(T* x, int64_t n, ncclRedOp_t op);

  std::unique_ptr<MpiComm> mpi_;
  ncclComm_t nccl_ = nullptr;
  cudaStream_t compute_ = nullptr, stream_ = nullptr;
  cudaEvent_t ready_ = nullptr;
  std::deque<std::vector<float>> send_staging_;  // host copies of pending isends
};

// True when `p` is device or managed memory (NCCL's); false for host memory.
bool is_device_pointer(const void* p);

}  // namespace mplan::exec
