// Simple CUDA kernels the GPU profiler times for the non-GEMM ops (bf16 storage, fp32 math):
// causal attention forward/backward (one thread per query/key row with an online softmax: correct,
// not flash-attention fast; rows name the kernel so a calibration can exclude them), LayerNorm,
// GELU, residual add. Host wrappers launch on `stream`.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace mplan::profiles::cuda {

// q, k, v, out, dout, dq, dk, dv (B, H, T, D) bf16; lse (B, H, T) fp32; D <= 128.
void attention_forward(__nv_bfloat16* out, float* lse, const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v,
                       int B, int H, int T, int D, cudaStream_t stream);
void attention_backward(__nv_bfloat16* dq, __nv_bfloat16* dk, __nv_bfloat16* dv, const __nv_bfloat16* dout,
                        const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, const __nv_bfloat16* out,
                        const float* lse, float* rowdot, int B, int H, int T, int D, cudaStream_t stream);
// x, y (N, C) bf16; weight, bias (C) fp32; mean, rstd (N) fp32.
void layernorm_forward(__nv_bfloat16* y, float* mean, float* rstd, const __nv_bfloat16* x, const float* weight, const float* bias,
                       int N, int C, cudaStream_t stream);
void layernorm_backward(__nv_bfloat16* dx, const __nv_bfloat16* dy, const __nv_bfloat16* x, const float* weight,
                        const float* mean, const float* rstd, int N, int C, cudaStream_t stream);
void gelu_forward(__nv_bfloat16* y, const __nv_bfloat16* x, int64_t n, cudaStream_t stream);
void gelu_backward(__nv_bfloat16* dx, const __nv_bfloat16* x, const __nv_bfloat16* dy, int64_t n, cudaStream_t stream);
void residual_forward(__nv_bfloat16* y, const __nv_bfloat16* a, const __nv_bfloat16* b, int64_t n, cudaStream_t stream);
void fill_random(__nv_bfloat16* x, int64_t n, uint32_t seed, cudaStream_t stream);

}  // namespace mplan::profiles::cuda
