// cuDNN fused flash attention for the CUDA backend (the default for bf16 plans where the shape allows;
// MPLAN_ATTENTION=simt keeps the fp32 SIMT kernels of cuda_attention.cu, the reference). Forward and
// backward through cuDNN's backend graph API (graphs of cudnn_attention_graph.h), bf16 Q/K/V/O/dO,
// fp32 softmax statistics, causal mask, GQA, head dims 64/128. The executor's tensors are fp32:
// Q/K/V (and O/dO) are converted to bf16 scratch and O/dQ/dK/dV back to fp32 around each call.
// Execution plans are built once per shape and cached; workspaces and scratch come from the
// backend's device pool (so the peak counts them). A cuDNN error names the op, the shapes and
// cuDNN's messages and ends the job.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "executor/backend/cuda/cuda_memory.h"
#include "executor/backend/cuda/cudnn_attention_graph.h"

namespace mplan::exec::gpu {

// MPLAN_ATTENTION: unset or "" = automatic, "simt" = the fp32 kernels, "cudnn" = this path; anything
// else is refused (returns false and sets `error`).
enum class AttentionRequest { automatic, simt, cudnn };
bool attention_request_from_env(AttentionRequest* request, std::string* error);

// The attention a job runs. automatic: cuDNN where the GEMMs are bf16 and cuDNN supports the shape
// (an fp32 plan keeps the exact fp32 kernels); cudnn: cuDNN, or `error` naming what it cannot run;
// simt: the fp32 kernels. `note` says why the fp32 kernels serve a job that could have used cuDNN.
struct AttentionDecision {
  bool cudnn = false;
  std::string note, error;
};
AttentionDecision decide_attention(AttentionRequest request, bool bf16_gemms, const sdpa::Shape& s, int64_t cudnn_version,
                                   int sm);
// The same for CUDA device `device` (its compute capability) and the cuDNN loaded at run time.
AttentionDecision decide_attention_on(int device, AttentionRequest request, bool bf16_gemms, const sdpa::Shape& s);

// cudnnGetVersion() of the library loaded at run time.
int64_t cudnn_runtime_version();
// Creates and finalizes every tensor and node descriptor of `g` (no device or handle needed: the
// part of the graph cuDNN checks before the operation graph); empty, or the first node that cuDNN
// refused with its message.
std::string cudnn_validate_operations(const sdpa::Graph& g, const sdpa::Shape& s);

// Converts fp32 <-> bf16 on `stream` (kernels in cudnn_attention_convert.cu); to_f32 adds into dst
// when `accumulate`.
void f32_to_bf16(void* dst, const float* src, int64_t n, cudaStream_t stream);
void bf16_to_f32(float* dst, const void* src, int64_t n, bool accumulate, cudaStream_t stream);

class CudnnAttention {
 public:
  // Logs cudnnGetVersion() once on stderr; refuses (exit 2, with what is supported) a cuDNN or a
  // GPU the graphs cannot run on.
  CudnnAttention(cudaStream_t stream, int sm, std::shared_ptr<DevicePool> pool);
  ~CudnnAttention();
  CudnnAttention(const CudnnAttention&) = delete;
  CudnnAttention& operator=(const CudnnAttention&) = delete;

  // Exit 2 with what is supported when shape `s` cannot run (called before the first use of a shape).
  void require_supported(const sdpa::Shape& s) const;
  // out (B, Tq, Hq, Dv), lse (B, Hq, Tq) from q, k, v (fp32, the executor's layouts).
  void forward(float* out, float* lse, const float* q, const float* k, const float* v, const sdpa::Shape& s);
  // dq, dk, dv += the gradients (fp32), from the forward's out and lse.
  void backward(float* dq, float* dk, float* dv, const float* dout, const float* out, const float* lse, const float* q,
                const float* k, const float* v, const sdpa::Shape& s);

  struct Plan;  // a finalized execution plan with its workspace size (cudnn_attention.cpp)

 private:
  Plan& plan(bool backward, const sdpa::Shape& s);
  void* scratch(int slot, int64_t bytes);

  cudaStream_t stream_;
  int sm_;
  std::shared_ptr<DevicePool> pool_;
  void* handle_ = nullptr;  // cudnnHandle_t
  std::map<std::tuple<bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>, std::unique_ptr<Plan>> plans_;
  struct Block {
    void* p = nullptr;
    int64_t bytes = 0;
  };
  Block scratch_[10];
};

}  // namespace mplan::exec::gpu
