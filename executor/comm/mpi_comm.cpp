// MPI implementation of Comm: collectives, variable all-to-all, point to point with deferred sends.
#include "executor/comm/mpi_comm.h"

#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace mplan::exec {

namespace {

[[noreturn]] void mpi_fail(const char* call, int err, const char* file, int line) {
  char msg[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  MPI_Error_string(err, msg, &len);
  int world = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &world);
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  std::fprintf(stderr, "mplan: rank %d on %s: %s failed at %s:%d: %s\n", world, host, call, file, line, msg);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

#define MPI_CHECK(call)                                                         \
  do {                                                                          \
    int mpi_err_ = (call);                                                      \
    if (mpi_err_ != MPI_SUCCESS) mpi_fail(#call, mpi_err_, __FILE__, __LINE__); \
  } while (0)

int to_int(int64_t n) {
  if (n < 0 || n > INT_MAX) throw std::runtime_error("message of " + std::to_string(n) + " elements exceeds MPI's int count");
  return int(n);
}

}  // namespace

MpiComm::MpiComm(MPI_Comm comm) : comm_(comm) {
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  MPI_CHECK(MPI_Comm_size(comm_, &size_));
  int world = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world);
  members_.resize(static_cast<size_t>(size_));
  MPI_CHECK(MPI_Allgather(&world, 1, MPI_INT, members_.data(), 1, MPI_INT, comm_));
}

MpiComm::~MpiComm() {
  if (!pending_.empty()) MPI_Waitall(int(pending_.size()), pending_.data(), MPI_STATUSES_IGNORE);
  if (comm_ != MPI_COMM_WORLD && comm_ != MPI_COMM_SELF && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void MpiComm::all_reduce_sum(float* x, int64_t n) {
  if (size_ > 1 && n > 0) MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, x, to_int(n), MPI_FLOAT, MPI_SUM, comm_));
}
void MpiComm::all_reduce_sum(double* x, int64_t n) {
  if (size_ > 1 && n > 0) MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, x, to_int(n), MPI_DOUBLE, MPI_SUM, comm_));
}
void MpiComm::all_reduce_max(float* x, int64_t n) {
  if (size_ > 1 && n > 0) MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, x, to_int(n), MPI_FLOAT, MPI_MAX, comm_));
}
void MpiComm::all_reduce_max(double* x, int64_t n) {
  if (size_ > 1 && n > 0) MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, x, to_int(n), MPI_DOUBLE, MPI_MAX, comm_));
}

void MpiComm::all_gather(const float* send, float* recv, int64_t n_each) {
  if (size_ == 1) {
    if (send != recv)
      for (int64_t i = 0; i < n_each; ++i) recv[i] = send[i];
    return;
  }
  MPI_CHECK(MPI_Allgather(send, to_int(n_each), MPI_FLOAT, recv, to_int(n_each), MPI_FLOAT, comm_));
}

void MpiComm::reduce_scatter_sum(const float* send, float* recv, int64_t n_each) {
  if (size_ == 1) {
    if (send != recv)
      for (int64_t i = 0; i < n_each; ++i) recv[i] = send[i];
    return;
  }
  MPI_CHECK(MPI_Reduce_scatter_block(send, recv, to_int(n_each), MPI_FLOAT, MPI_SUM, comm_));
}

void MpiComm::all_to_all_v(const float* send, const std::vector<int64_t>& send_counts, float* recv,
                           const std::vector<int64_t>& recv_counts) {
  std::vector<int> sc(static_cast<size_t>(size_)), rc(static_cast<size_t>(size_)), sd(static_cast<size_t>(size_)),
      rd(static_cast<size_t>(size_));
  int64_t so = 0, ro = 0;
  for (int p = 0; p < size_; ++p) {
    sc[size_t(p)] = to_int(send_counts[size_t(p)]);
    rc[size_t(p)] = to_int(recv_counts[size_t(p)]);
    sd[size_t(p)] = to_int(so);
    rd[size_t(p)] = to_int(ro);
    so += send_counts[size_t(p)];
    ro += recv_counts[size_t(p)];
  }
  MPI_CHECK(MPI_Alltoallv(send, sc.data(), sd.data(), MPI_FLOAT, recv, rc.data(), rd.data(), MPI_FLOAT, comm_));
}

void MpiComm::all_to_all_counts(const std::vector<int64_t>& send, std::vector<int64_t>& recv) {
  recv.assign(send.size(), 0);
  int each = to_int(int64_t(send.size()) / size_);
  MPI_CHECK(MPI_Alltoall(send.data(), each, MPI_INT64_T, recv.data(), each, MPI_INT64_T, comm_));
}

std::vector<int64_t> MpiComm::all_gather_counts(const std::vector<int64_t>& mine) {
  std::vector<int64_t> out(mine.size() * size_t(size_));
  MPI_CHECK(MPI_Allgather(mine.data(), to_int(int64_t(mine.size())), MPI_INT64_T, out.data(), to_int(int64_t(mine.size())),
                          MPI_INT64_T, comm_));
  return out;
}

void MpiComm::all_gather_v(const float* send, float* recv, const std::vector<int64_t>& counts) {
  std::vector<int> rc(static_cast<size_t>(size_)), rd(static_cast<size_t>(size_));
  int64_t off = 0;
  for (int p = 0; p < size_; ++p) {
    rc[size_t(p)] = to_int(counts[size_t(p)]);
    rd[size_t(p)] = to_int(off);
    off += counts[size_t(p)];
  }
  MPI_CHECK(MPI_Allgatherv(send, rc[size_t(rank_)], MPI_FLOAT, recv, rc.data(), rd.data(), MPI_FLOAT, comm_));
}

void MpiComm::reduce_scatter_v(const float* send, float* recv, const std::vector<int64_t>& counts) {
  std::vector<int> rc(static_cast<size_t>(size_));
  for (int p = 0; p < size_; ++p) rc[size_t(p)] = to_int(counts[size_t(p)]);
  MPI_CHECK(MPI_Reduce_scatter(send, recv, rc.data(), MPI_FLOAT, MPI_SUM, comm_));
}

void MpiComm::broadcast(float* x, int64_t n, int root) {
  if (size_ > 1 && n > 0) MPI_CHECK(MPI_Bcast(x, to_int(n), MPI_FLOAT, root, comm_));
}

void MpiComm::broadcast_bytes(std::string& bytes, int root) {
  if (size_ == 1) return;
  int64_t n = int64_t(bytes.size());
  MPI_CHECK(MPI_Bcast(&n, 1, MPI_INT64_T, root, comm_));
  bytes.resize(size_t(n));
  if (n > 0) MPI_CHECK(MPI_Bcast(bytes.data(), to_int(n), MPI_CHAR, root, comm_));
}

std::vector<std::string> MpiComm::gather_bytes(const std::string& mine, int root) {
  int n = to_int(int64_t(mine.size()));
  std::vector<int> sizes(static_cast<size_t>(size_)), displs(static_cast<size_t>(size_));
  MPI_CHECK(MPI_Gather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, root, comm_));
  std::string all;
  if (rank_ == root) {
    int64_t total = 0;
    for (int p = 0; p < size_; ++p) {
      displs[size_t(p)] = to_int(total);
      total += sizes[size_t(p)];
    }
    all.resize(size_t(total));
  }
  MPI_CHECK(MPI_Gatherv(mine.data(), n, MPI_CHAR, all.data(), sizes.data(), displs.data(), MPI_CHAR, root, comm_));
  std::vector<std::string> out;
  if (rank_ == root)
    for (int p = 0; p < size_; ++p) out.push_back(all.substr(size_t(displs[size_t(p)]), size_t(sizes[size_t(p)])));
  return out;
}

void MpiComm::isend(const float* buf, int64_t n, int peer, int tag) {
  MPI_Request r;
  MPI_CHECK(MPI_Isend(buf, to_int(n), MPI_FLOAT, peer, tag, comm_, &r));
  pending_.push_back(r);
}

void MpiComm::recv(float* buf, int64_t n, int peer, int tag) {
  MPI_CHECK(MPI_Recv(buf, to_int(n), MPI_FLOAT, peer, tag, comm_, MPI_STATUS_IGNORE));
}

void MpiComm::wait_sends() {
  if (pending_.empty()) return;
  MPI_CHECK(MPI_Waitall(int(pending_.size()), pending_.data(), MPI_STATUSES_IGNORE));
  pending_.clear();
}

void MpiComm::sendrecv(const float* send, int64_t ns, int dst, float* recv, int64_t nr, int src, int tag) {
  MPI_CHECK(MPI_Sendrecv(send, to_int(ns), MPI_FLOAT, dst, tag, recv, to_int(nr), MPI_FLOAT, src, tag, comm_, MPI_STATUS_IGNORE));
}

void MpiComm::barrier() { MPI_CHECK(MPI_Barrier(comm_)); }

std::unique_ptr<MpiComm> split_comm(MPI_Comm base, int color, int key) {
  MPI_Comm out = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_split(base, color < 0 ? MPI_UNDEFINED : color, key, &out));
  if (out == MPI_COMM_NULL) return nullptr;
  return std::make_unique<MpiComm>(out);
}

bool launched_under_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"})
    if (std::getenv(v)) return true;
  return false;
}

}  // namespace mplan::exec
