// Comm: the communicator interface of one process group (Megatron names: tp_group, dp_group ...), passed
// explicitly to every layer that communicates; MPI (mpi_comm.*) everywhere, NCCL (nccl/) where a GPU exists.
// All buffers are backend memory; sums are in fp32 except the double overloads used for norms/losses.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mplan::exec {

class Comm {
 public:
  virtual ~Comm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Global (world) ranks of the members, in group order, for messages.
  virtual const std::vector<int>& members() const = 0;

  virtual void all_reduce_sum(float* x, int64_t n) = 0;
  virtual void all_reduce_sum(double* x, int64_t n) = 0;
  virtual void all_reduce_max(float* x, int64_t n) = 0;
  virtual void all_reduce_max(double* x, int64_t n) = 0;
  // recv (size * n_each) = concatenation of every member's send (n_each), in group order
  virtual void all_gather(const float* send, float* recv, int64_t n_each) = 0;
  // recv (n_each) = sum over members of their send[rank * n_each, (rank+1) * n_each)
  virtual void reduce_scatter_sum(const float* send, float* recv, int64_t n_each) = 0;
  // variable all-to-all: send_counts[p] elements go to member p (contiguous, in member order)
  virtual void all_to_all_v(const float* send, const std::vector<int64_t>& send_counts, float* recv,
                            const std::vector<int64_t>& recv_counts) = 0;
  // send holds size * n_each integers, n_each for each member; recv gets n_each from each member
  virtual void all_to_all_counts(const std::vector<int64_t>& send, std::vector<int64_t>& recv) = 0;
  // every member's `mine` (equal lengths), concatenated in group order
  virtual std::vector<int64_t> all_gather_counts(const std::vector<int64_t>& mine) = 0;
  // variable all-gather: member p contributes counts[p] elements; recv = concatenation in group order
  virtual void all_gather_v(const float* send, float* recv, const std::vector<int64_t>& counts) = 0;
  // variable reduce-scatter: recv (counts[rank]) = sum over members of their block `rank` of send
  virtual void reduce_scatter_v(const float* send, float* recv, const std::vector<int64_t>& counts) = 0;
  virtual void broadcast(float* x, int64_t n, int root) = 0;
  virtual void broadcast_bytes(std::string& bytes, int root) = 0;
  // root receives every member's bytes (in group order); others get an empty vector
  virtual std::vector<std::string> gather_bytes(const std::string& mine, int root) = 0;

  // Point to point (group-local peers). Sends never block: the caller keeps `buf` alive until
  // wait_sends(). Receives block until the matching message (peer, tag) arrives.
  virtual void isend(const float* buf, int64_t n, int peer, int tag) = 0;
  virtual void recv(float* buf, int64_t n, int peer, int tag) = 0;
  virtual void wait_sends() = 0;
  // Exchange with two peers at once (ring step): send to dst and receive from src.
  virtual void sendrecv(const float* send, int64_t ns, int dst, float* recv, int64_t nr, int src, int tag) = 0;
  virtual void barrier() = 0;
};

}  // namespace mplan::exec
