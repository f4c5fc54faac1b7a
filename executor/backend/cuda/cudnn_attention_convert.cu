// fp32 <-> bf16 conversion kernels around the cuDNN attention calls (cudnn_attention.h).
#include <cuda_bf16.h>

#include "executor/backend/cuda/cuda_check.h"
#include "executor/backend/cuda/cudnn_attention.h"

namespace mplan::exec::gpu {

namespace {

__global__ void f32_to_bf16_kernel(__nv_bfloat16* dst, const float* src, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = __float2bfloat16_rn(src[i]);
}

__global__ void bf16_to_f32_kernel(float* dst, const __nv_bfloat16* src, int64_t n, bool accumulate) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float x = __bfloat162float(src[i]);
    dst[i] = accumulate ? dst[i] + x : x;
  }
}

unsigned grid_for(int64_t n) {
  const int64_t blocks = (n + 255) / 256;
  return unsigned(blocks < 4096 ? (blocks > 0 ? blocks : 1) : 4096);
}

}  // namespace

void f32_to_bf16(void* dst, const float* src, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  f32_to_bf16_kernel<<<grid_for(n), 256, 0, stream>>>(static_cast<__nv_bfloat16*>(dst), src, n);
  MPLAN_CUDA_CHECK(cudaGetLastError());
}

void bf16_to_f32(float* dst, const void* src, int64_t n, bool accumulate, cudaStream_t stream) {
  if (n <= 0) return;
  bf16_to_f32_kernel<<<grid_for(n), 256, 0, stream>>>(dst, static_cast<const __nv_bfloat16*>(src), n, accumulate);
  MPLAN_CUDA_CHECK(cudaGetLastError());
}

}  // namespace mplan::exec::gpu
