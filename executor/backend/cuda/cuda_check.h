// Error checks of the CUDA backend and the NCCL communicator: a failed CUDA, cuBLASLt or NCCL call
// is a broken device or a bug, not a user error, so it prints the call, the error, host, rank,
// file and line, and aborts the whole MPI job (no hang on the other ranks).
#pragma once
#include <cuda_runtime.h>

#include <string>

namespace mplan::exec::gpu {

[[noreturn]] void fatal_error(const char* call, const char* error, const char* file, int line);
// A user-facing resource error (out of device memory): prints `message` with host and rank and ends
// the whole job with exit code 2 (nothing is recorded: the run did not happen).
[[noreturn]] void out_of_memory_exit(const std::string& message);

}  // namespace mplan::exec::gpu

#define MPLAN_CUDA_CHECK(call)                                                                                             \
  do {                                                                                                                     \
    cudaError_t mplan_e_ = (call);                                                                                         \
    if (mplan_e_ != cudaSuccess) ::mplan::exec::gpu::fatal_error(#call, cudaGetErrorString(mplan_e_), __FILE__, __LINE__); \
  } while (0)
