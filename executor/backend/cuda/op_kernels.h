// The executor's CUDA backend ops as the kernel source of `mplan profile --backend cuda`
// (profiles::OpKernels): the profile's attention, norm, activation, residual and RoPE rows time the
// very kernels `mplan train --backend cuda` runs, called through the Backend interface as the
// layers call them. `op_kernel_call` is the pure mapping from a layer op of the profile's grid to
// the backend call and its shapes (host-tested).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/model_spec.h"
#include "core/ops.h"
#include "profiles/cuda_profiler.h"

namespace mplan::exec {

class CudaBackend;

enum class BackendCall { none, attention, layernorm, rmsnorm, act, add, rope };

// One backend call standing for a layer op at sequence length T, batch 1: N = tokens, C = hidden,
// F = activation width, H / Hkv / D = heads, query groups, head dim.
struct OpKernelCall {
  BackendCall call = BackendCall::none;
  int64_t N = 0, C = 0, F = 0, H = 0, Hkv = 0, D = 0;
  bool has_backward = false;
};
OpKernelCall op_kernel_call(const Op& op, const ModelSpec& m, int64_t T);

// Owns a CUDA backend on `device` (fp32, as `mplan train` runs a plan's non-GEMM ops), with the attention
// `mplan train` would use (MPLAN_ATTENTION: the fp32 kernels or cuDNN). nullptr and `error` set when
// MPLAN_ATTENTION names no known attention.
std::unique_ptr<profiles::OpKernels> make_backend_op_kernels(int device, std::string* error);

class BackendOpKernels final : public profiles::OpKernels {
 public:
  explicit BackendOpKernels(std::unique_ptr<CudaBackend> be);
  ~BackendOpKernels() override;
  std::string impl() const override;
  std::string dtype() const override { return "fp32"; }
  bool prepare(const Op& op, const ModelSpec& m, int64_t T, std::function<void()>* fwd, std::function<void()>* bwd) override;
  void sync() override;

 private:
  struct Buffers;
  std::unique_ptr<CudaBackend> owned_;
  CudaBackend& be_;
  std::unique_ptr<Buffers> buf_;
};

}  // namespace mplan::exec
