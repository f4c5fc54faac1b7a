// Fatal CUDA/cuBLASLt/NCCL errors: message with host, rank, file and line, then abort the job.
#include "executor/backend/cuda/cuda_check.h"

#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace mplan::exec::gpu {

namespace {
int world_rank(bool* live) {
  int rank = -1, inited = 0, finalized = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&finalized);
  *live = inited && !finalized;
  if (*live) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}
}  // namespace

void out_of_memory_exit(const std::string& message) {
  char host[256] = "?";
  gethostname(host, sizeof(host) - 1);
  bool live = false;
  const int rank = world_rank(&live);
  std::fprintf(stderr, "mplan: %s (%s rank %d)\n", message.c_str(), host, rank);
  std::fflush(stderr);
  if (live) MPI_Abort(MPI_COMM_WORLD, 2);
  std::exit(2);
}

void fatal_error(const char* call, const char* error, const char* file, int line) {
  char host[256] = "?";
  gethostname(host, sizeof(host) - 1);
  bool live = false;
  const int rank = world_rank(&live);
  std::fprintf(stderr, "mplan: CUDA error on %s rank %d: %s failed: %s (%s:%d)\n", host, rank, call, error, file, line);
  std::fflush(stderr);
  if (live) MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

}  // namespace mplan::exec::gpu
