// `mplan profile --backend cuda`: the kernel and collective measurements on NVIDIA GPUs, timed by
// CUPTI activity records (CONCURRENT_KERNEL with RUNTIME/DRIVER and external correlation around
// every repetition): cuBLASLt GEMMs (bf16, and fp8 where the GPU has it) over a grid of transformer
// shapes, the attention kernel forward/backward and memory-bound ops (the executor's backend ops
// when given, see OpKernels), and NCCL collectives over 2..N local GPUs. Without a CUDA device it
// returns an error saying so (the command exits 2).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/model_spec.h"
#include "core/ops.h"
#include "core/status.h"

namespace mplan::profiles {

// The kernels behind the attention and memory-bound rows. `mplan profile --backend cuda` passes the
// executor's CUDA backend ops (the cli wires them in; the profiles do not link the executor), so the
// rows time the kernels `mplan train --backend cuda` runs; without it the profiler's own bf16
// kernels (profiles/cuda_kernels.cu) are timed.
class OpKernels {
 public:
  virtual ~OpKernels() = default;
  virtual std::string impl() const = 0;   // the rows' `impl`
  virtual std::string dtype() const = 0;  // the rows' `dtype` (what the kernels compute in)
  // Launchers of layer op `op` of the grid model `m` at sequence length T (batch 1), forward and
  // backward (bwd may stay empty); false when this source has no kernel for the op.
  virtual bool prepare(const Op& op, const ModelSpec& m, int64_t T, std::function<void()>* fwd, std::function<void()>* bwd) = 0;
  virtual void sync() = 0;  // waits for the launched kernels
};

struct CudaProfileOptions {
  std::string db;
  bool quick = false;
  bool collectives = true;
  bool progress = true;
  std::string cluster;  // preset the GPUs belong to ("" = guessed from the GPU name)
  std::string command;
  OpKernels* ops = nullptr;  // the executor's backend ops (nullptr: the profiler's own kernels)
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
