// `mplan profile --backend cuda`: the kernel and collective measurements on NVIDIA GPUs, timed by
// CUPTI activity records (CONCURRENT_KERNEL with RUNTIME/DRIVER and external correlation around
// every repetition): cuBLASLt GEMMs (bf16, and fp8 where the GPU has it) over a grid of transformer
// shapes, the attention kernel forward/backward, memory-bound ops, and NCCL collectives over 2..N
// local GPUs. Without a CUDA device it returns an error saying so (the command exits 2).
#pragma once
#include <string>
#include <vector>

#include "core/status.h"

namespace mplan::profiles {

struct CudaProfileOptions {
  std::string db;
  bool quick = false;
  bool collectives = true;
  bool progress = true;
  std::string cluster;  // preset the GPUs belong to ("" = guessed from the GPU name)
  std::string command;
};

struct CudaProfileResult {
  int64_t device_id = 0;
  int kernel_rows = 0, collective_rows = 0;
  bool interrupted = false;
  std::vector<std::string> notes;
};

// False in builds without the CUDA toolkit.
bool cuda_backend_built();
Expected<CudaProfileResult> run_cuda_profile(const CudaProfileOptions& o);

}  // namespace mplan::profiles
