// NcclComm: NCCL collectives on a communication stream, MPI for host data and tagged messages.
#include "executor/comm/nccl/nccl_comm.h"

#include <string>
#include <type_traits>

#include "executor/backend/cuda/cuda_check.h"

namespace mplan::exec {

namespace {

void nccl_check(ncclResult_t r, const char* call, int line) {
  if (r != ncclSuccess) gpu::fatal_error(call, ncclGetErrorString(r), __FILE__, line);
}
#define MPLAN_NCCL(call) nccl_check((call), #call, __LINE__)

std::vector<int64_t> offsets_of(const std::vector<int64_t>& counts) {
  std::vector<int64_t> off(counts.size() + 1, 0);
  for (size_t i = 0; i < counts.size(); ++i) off[i + 1] = off[i] + counts[i];
  return off;
}

}  // namespace

bool is_device_pointer(const void* p) {
  if (!p) return false;
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

NcclComm::NcclComm(std::unique_ptr<MpiComm> mpi, cudaStream_t compute) : mpi_(std::move(mpi)), compute_(compute) {
  ncclUniqueId id{};
  if (mpi_->rank() == 0) MPLAN_NCCL(ncclGetUniqueId(&id));
  if (MPI_Bcast(&id, int(sizeof(id)), MPI_BYTE, 0, mpi_->handle()) != MPI_SUCCESS)
    gpu::fatal_error("MPI_Bcast(ncclUniqueId)", "failed", __FILE__, __LINE__);
  MPLAN_NCCL(ncclCommInitRank(&nccl_, mpi_->size(), id, mpi_->rank()));
  MPLAN_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  MPLAN_CUDA_CHECK(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
}

NcclComm::~NcclComm() {
  if (stream_) cudaStreamSynchronize(stream_);
  if (nccl_) ncclCommDestroy(nccl_);
  if (ready_) cudaEventDestroy(ready_);
  if (stream_) cudaStreamDestroy(stream_);
}

void NcclComm::begin() {
  MPLAN_CUDA_CHECK(cudaEventRecord(ready_, compute_));
  MPLAN_CUDA_CHECK(cudaStreamWaitEvent(stream_, ready_, 0));
}

void NcclComm::finish() { MPLAN_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

template <class T>
void NcclComm::all_reduce(T* x, int64_t n, ncclRedOp_t op) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  if (n <= 0) return;
  if (!is_device_pointer(x)) return op == ncclSum ? mpi_->all_reduce_sum(x, n) : mpi_->all_reduce_max(x, n);
  begin();
  MPLAN_NCCL(ncclAllReduce(x, x, size_t(n), std::is_same_v<T, float> ? ncclFloat : ncclDouble, op, nccl_, stream_));
  finish();
}

void NcclComm::all_reduce_sum(float* x, int64_t n) { all_reduce(x, n, ncclSum); }
void NcclComm::all_reduce_sum(double* x, int64_t n) { all_reduce(x, n, ncclSum); }
void NcclComm::all_reduce_max(float* x, int64_t n) { all_reduce(x, n, ncclMax); }
void NcclComm::all_reduce_max(double* x, int64_t n) { all_reduce(x, n, ncclMax); }

void NcclComm::all_gather(const float* send, float* recv, int64_t n_each) {
  if (n_each <= 0) return;
  if (!is_device_pointer(recv)) return mpi_->all_gather(send, recv, n_each);
  begin();
  MPLAN_NCCL(ncclAllGather(send, recv, size_t(n_each), ncclFloat, nccl_, stream_));
  finish();
}

void NcclComm::reduce_scatter_sum(const float* send, float* recv, int64_t n_each) {
  if (n_each <= 0) return;
  if (!is_device_pointer(recv)) return mpi_->reduce_scatter_sum(send, recv, n_each);
  begin();
  MPLAN_NCCL(ncclReduceScatter(send, recv, size_t(n_each), ncclFloat, ncclSum, nccl_, stream_));
  finish();
}

void NcclComm::all_to_all_v(const float* send, const std::vector<int64_t>& send_counts, float* recv,
                            const std::vector<int64_t>& recv_counts) {
  if (!is_device_pointer(send) && !is_device_pointer(recv)) return mpi_->all_to_all_v(send, send_counts, recv, recv_counts);
  const auto so = offsets_of(send_counts), ro = offsets_of(recv_counts);
  begin();
  MPLAN_NCCL(ncclGroupStart());
  for (int p = 0; p < size(); ++p) {
    if (send_counts[size_t(p)] > 0)
      MPLAN_NCCL(ncclSend(send + so[size_t(p)], size_t(send_counts[size_t(p)]), ncclFloat, p, nccl_, stream_));
    if (recv_counts[size_t(p)] > 0)
      MPLAN_NCCL(ncclRecv(recv + ro[size_t(p)], size_t(recv_counts[size_t(p)]), ncclFloat, p, nccl_, stream_));
  }
  MPLAN_NCCL(ncclGroupEnd());
  finish();
}

void NcclComm::all_to_all_counts(const std::vector<int64_t>& send, std::vector<int64_t>& recv) {
  mpi_->all_to_all_counts(send, recv);
}
std::vector<int64_t> NcclComm::all_gather_counts(const std::vector<int64_t>& mine) { return mpi_->all_gather_counts(mine); }

void NcclComm::all_gather_v(const float* send, float* recv, const std::vector<int64_t>& counts) {
  if (!is_device_pointer(recv)) return mpi_->all_gather_v(send, recv, counts);
  const auto off = offsets_of(counts);
  const int me = rank();
  begin();
  if (counts[size_t(me)] > 0 && recv + off[size_t(me)] != send)
    MPLAN_CUDA_CHECK(
        cudaMemcpyAsync(recv + off[size_t(me)], send, size_t(counts[size_t(me)]) * sizeof(float), cudaMemcpyDefault, stream_));
  MPLAN_NCCL(ncclGroupStart());
  for (int p = 0; p < size(); ++p) {
    if (p == me) continue;
    if (counts[size_t(me)] > 0) MPLAN_NCCL(ncclSend(send, size_t(counts[size_t(me)]), ncclFloat, p, nccl_, stream_));
    if (counts[size_t(p)] > 0)
      MPLAN_NCCL(ncclRecv(recv + off[size_t(p)], size_t(counts[size_t(p)]), ncclFloat, p, nccl_, stream_));
  }
  MPLAN_NCCL(ncclGroupEnd());
  finish();
}

void NcclComm::reduce_scatter_v(const float* send, float* recv, const std::vector<int64_t>& counts) {
  if (!is_device_pointer(send)) return mpi_->reduce_scatter_v(send, recv, counts);
  const auto off = offsets_of(counts);
  begin();
  MPLAN_NCCL(ncclGroupStart());
  for (int r = 0; r < size(); ++r)
    if (counts[size_t(r)] > 0)
      MPLAN_NCCL(ncclReduce(send + off[size_t(r)], recv, size_t(counts[size_t(r)]), ncclFloat, ncclSum, r, nccl_, stream_));
  MPLAN_NCCL(ncclGroupEnd());
  finish();
}

void NcclComm::broadcast(float* x, int64_t n, int root) {
  if (n <= 0) return;
  if (!is_device_pointer(x)) return mpi_->broadcast(x, n, root);
  begin();
  MPLAN_NCCL(ncclBroadcast(x, x, size_t(n), ncclFloat, root, nccl_, stream_));
  finish();
}

void NcclComm::broadcast_bytes(std::string& bytes, int root) { mpi_->broadcast_bytes(bytes, root); }
std::vector<std::string> NcclComm::gather_bytes(const std::string& mine, int root) { return mpi_->gather_bytes(mine, root); }

// Pipeline messages are matched by (peer, tag) in any order, which NCCL's in-order p2p cannot do:
// they go through MPI, staged in host memory.
void NcclComm::isend(const float* buf, int64_t n, int peer, int tag) {
  if (!is_device_pointer(buf)) return mpi_->isend(buf, n, peer, tag);
  std::vector<float>& h = send_staging_.emplace_back(size_t(std::max<int64_t>(n, 1)));
  MPLAN_CUDA_CHECK(cudaMemcpyAsync(h.data(), buf, size_t(n) * sizeof(float), cudaMemcpyDefault, compute_));
  MPLAN_CUDA_CHECK(cudaStreamSynchronize(compute_));
  mpi_->isend(h.data(), n, peer, tag);
}

void NcclComm::recv(float* buf, int64_t n, int peer, int tag) {
  if (!is_device_pointer(buf)) return mpi_->recv(buf, n, peer, tag);
  std::vector<float> h(size_t(std::max<int64_t>(n, 1)));
  mpi_->recv(h.data(), n, peer, tag);
  MPLAN_CUDA_CHECK(cudaMemcpyAsync(buf, h.data(), size_t(n) * sizeof(float), cudaMemcpyDefault, compute_));
  MPLAN_CUDA_CHECK(cudaStreamSynchronize(compute_));
}

void NcclComm::wait_sends() {
  mpi_->wait_sends();
  send_staging_.clear();
}

void NcclComm::sendrecv(const float* send, int64_t ns, int dst, float* recv, int64_t nr, int src, int tag) {
  if (!is_device_pointer(send) && !is_device_pointer(recv)) return mpi_->sendrecv(send, ns, dst, recv, nr, src, tag);
  begin();
  MPLAN_NCCL(ncclGroupStart());
  if (ns > 0) MPLAN_NCCL(ncclSend(send, size_t(ns), ncclFloat, dst, nccl_, stream_));
  if (nr > 0) MPLAN_NCCL(ncclRecv(recv, size_t(nr), ncclFloat, src, nccl_, stream_));
  MPLAN_NCCL(ncclGroupEnd());
  finish();
}

void NcclComm::barrier() {
  finish();
  mpi_->barrier();
}

}  // namespace mplan::exec
