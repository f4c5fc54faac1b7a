// Device helpers shared by the CUDA kernel files (cuda_kernels.cu, cuda_attention.cu): -inf, grid-
// stride indices, warp reductions by shuffles, block reductions through shared memory, and the launch
// error check. Included inside an anonymous namespace of mplan::exec::gpu (internal to each file).
#pragma once

__device__ __forceinline__ float neg_inf() { return -__int_as_float(0x7f800000); }

__device__ __forceinline__ int64_t gtid() { return int64_t(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t gstride() { return int64_t(gridDim.x) * blockDim.x; }

template <class T>
__device__ __forceinline__ T warp_sum(T v) {
  for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int off = 16; off > 0; off /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}
__device__ __forceinline__ int warp_max_int(int v) {
  for (int off = 16; off > 0; off /= 2) v = max(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}
__device__ __forceinline__ int warp_min_int(int v) {
  for (int off = 16; off > 0; off /= 2) v = min(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}

struct WarpSum {
  template <class T>
  __device__ T operator()(T v) const {
    return warp_sum(v);
  }
};
struct WarpMax {
  __device__ float operator()(float v) const { return warp_max(v); }
};

// Reduction over the block (blockDim.x a multiple of 32, <= 1024) by warps, then warp 0 over the
// warps' partials (`identity` for the lanes past the last warp); the result is valid in every thread.
template <class T, class WarpReduce>
__device__ T block_reduce(T v, T identity, WarpReduce reduce) {
  __shared__ T part[32];
  __shared__ T total;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = reduce(v);
  if (lane == 0) part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    T x = lane < warps ? part[lane] : identity;
    x = reduce(x);
    if (lane == 0) total = x;
  }
  __syncthreads();
  T r = total;
  __syncthreads();  // `part`/`total` may be reused by a following call
  return r;
}
template <class T>
__device__ T block_sum(T v) {
  return block_reduce(v, T(0), WarpSum{});
}
__device__ __forceinline__ float block_max(float v) { return block_reduce(v, neg_inf(), WarpMax{}); }

// Launch-configuration errors surface here; asynchronous faults at the backend's next sync.
// fatal_error (cuda_check.h) names host, rank and the caller's file:line and aborts the whole MPI job
// (a plain abort() of one rank can leave the others waiting in a collective).
inline void check_launch(const char* what, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  cudaError_t e = cudaPeekAtLastError();
  if (e != cudaSuccess) fatal_error(what, cudaGetErrorString(e), file, line);
}
