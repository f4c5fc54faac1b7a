// Backends by name for the trainer: the backend object, the process groups that go with it (MPI
// for cpu, NCCL for cuda) and the per-op device-time tagger (CUPTI on cuda), plus the GEMM peak
// that MFU is measured against. "cuda" exists when the executor was built with CUDA
// (MPLAN_HAVE_CUDA_BACKEND); without a visible device it is refused with a message.
#pragma once
#include <mpi.h>

#include <memory>
#include <string>

#include "core/plan.h"
#include "core/status.h"
#include "executor/backend/backend.h"
#include "executor/comm/groups.h"
#include "executor/train/op_tagger.h"

namespace mplan::exec {

struct BackendSetup {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<OpTagger> tagger;  // null: per-op times are host wall times
};

bool cuda_backend_built();
// CUDA devices visible to this process (0 without a driver or device, or without CUDA support).
int cuda_device_count();

// Collective over `base` (the cuda backend picks the device by node-local rank).
// `predicted_peak_bytes` (the plan's predicted peak per GPU, 0 = unknown) goes into the CUDA
// backend's out-of-memory message.
Expected<BackendSetup> make_backend(const std::string& name, const Plan& plan, MPI_Comm base, int64_t predicted_peak_bytes = 0);
// Collective over `base`.
ProcessGroups make_backend_groups(Backend& be, MPI_Comm base, const ParallelConfig& p);
// GEMM speed of this backend in GFLOP/s: single-core sgemm on the CPU, the device GEMM on CUDA.
double backend_peak_gflops(Backend& be);

}  // namespace mplan::exec
