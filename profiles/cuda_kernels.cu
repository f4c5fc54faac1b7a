// Simple CUDA kernels for the GPU profiler (see cuda_kernels.h).
#include "profiles/cuda_kernels.h"

namespace mplan::profiles::cuda {

namespace {

constexpr int kMaxD = 128;
using bf16 = __nv_bfloat16;

__device__ float f(bf16 x) { return __bfloat162float(x); }
__device__ bf16 b(float x) { return __float2bfloat16(x); }

// One thread per (b, h, query i): online softmax over keys 0..i.
__global__ void attn_fwd_kernel(bf16* out, float* lse, const bf16* q, const bf16* k, const bf16* v, int H, int T, int D,
                                float scale) {
  int bh = blockIdx.y, i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= T) return;
  const size_t o = size_t(bh) * T * D;
  float qi[kMaxD], acc[kMaxD];
  for (int d = 0; d < D; ++d) qi[d] = f(q[o + size_t(i) * D + d]) * scale, acc[d] = 0;
  float m = -1e30f, l = 0;
  for (int j = 0; j <= i; ++j) {
    float s = 0;
    for (int d = 0; d < D; ++d) s += qi[d] * f(k[o + size_t(j) * D + d]);
    float mn = fmaxf(m, s), corr = __expf(m - mn), p = __expf(s - mn);
    l = l * corr + p;
    for (int d = 0; d < D; ++d) acc[d] = acc[d] * corr + p * f(v[o + size_t(j) * D + d]);
    m = mn;
  }
  for (int d = 0; d < D; ++d) out[o + size_t(i) * D + d] = b(acc[d] / l);
  lse[size_t(bh) * T + i] = m + __logf(l);
}

// rowdot_i = sum_d dout_i,d * out_i,d
__global__ void attn_rowdot_kernel(float* rowdot, const bf16* dout, const bf16* out, int T, int D) {
  int bh = blockIdx.y, i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= T) return;
  const size_t o = size_t(bh) * T * D + size_t(i) * D;
  float s = 0;
  for (int d = 0; d < D; ++d) s += f(dout[o + d]) * f(out[o + d]);
  rowdot[size_t(bh) * T + i] = s;
}

// dQ_i = scale * sum_{j<=i} P_ij (dP_ij - rowdot_i) K_j
__global__ void attn_dq_kernel(bf16* dq, const bf16* dout, const bf16* q, const bf16* k, const bf16* v, const float* lse,
                               const float* rowdot, int T, int D, float scale) {
  int bh = blockIdx.y, i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= T) return;
  const size_t o = size_t(bh) * T * D;
  float acc[kMaxD];
  for (int d = 0; d < D; ++d) acc[d] = 0;
  float L = lse[size_t(bh) * T + i], rd = rowdot[size_t(bh) * T + i];
  for (int j = 0; j <= i; ++j) {
    float s = 0, dp = 0;
    for (int d = 0; d < D; ++d) {
      s += f(q[o + size_t(i) * D + d]) * f(k[o + size_t(j) * D + d]);
      dp += f(dout[o + size_t(i) * D + d]) * f(v[o + size_t(j) * D + d]);
    }
    float p = __expf(s * scale - L), ds = p * (dp - rd) * scale;
    for (int d = 0; d < D; ++d) acc[d] += ds * f(k[o + size_t(j) * D + d]);
  }
  for (int d = 0; d < D; ++d) dq[o + size_t(i) * D + d] = b(acc[d]);
}

// dK_j = scale * sum_{i>=j} dS_ij Q_i ; dV_j = sum_{i>=j} P_ij dO_i
__global__ void attn_dkv_kernel(bf16* dk, bf16* dv, const bf16* dout, const bf16* q, const bf16* k, const bf16* v,
                                const float* lse, const float* rowdot, int T, int D, float scale) {
  int bh = blockIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= T) return;
  const size_t o = size_t(bh) * T * D;
  float ak[kMaxD], av[kMaxD];
  for (int d = 0; d < D; ++d) ak[d] = av[d] = 0;
  for (int i = j; i < T; ++i) {
    float s = 0, dp = 0;
    for (int d = 0; d < D; ++d) {
      s += f(q[o + size_t(i) * D + d]) * f(k[o + size_t(j) * D + d]);
      dp += f(dout[o + size_t(i) * D + d]) * f(v[o + size_t(j) * D + d]);
    }
    float p = __expf(s * scale - lse[size_t(bh) * T + i]);
    float ds = p * (dp - rowdot[size_t(bh) * T + i]) * scale;
    for (int d = 0; d < D; ++d) {
      ak[d] += ds * f(q[o + size_t(i) * D + d]);
      av[d] += p * f(dout[o + size_t(i) * D + d]);
    }
  }
  for (int d = 0; d < D; ++d) dk[o + size_t(j) * D + d] = b(ak[d]), dv[o + size_t(j) * D + d] = b(av[d]);
}

// One warp per row.
__global__ void layernorm_fwd_kernel(bf16* y, float* mean, float* rstd, const bf16* x, const float* w, const float* bias, int N,
                                     int C) {
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= N) return;
  const bf16* xr = x + size_t(row) * C;
  float s = 0, ss = 0;
  for (int c = lane; c < C; c += 32) {
    float v = f(xr[c]);
    s += v;
    ss += v * v;
  }
  for (int off = 16; off > 0; off /= 2) {
    s += __shfl_xor_sync(0xffffffff, s, off);
    ss += __shfl_xor_sync(0xffffffff, ss, off);
  }
  float m = s / C, r = rsqrtf(fmaxf(ss / C - m * m, 0.f) + 1e-5f);
  for (int c = lane; c < C; c += 32) y[size_t(row) * C + c] = b((f(xr[c]) - m) * r * w[c] + bias[c]);
  if (lane == 0) mean[row] = m, rstd[row] = r;
}

__global__ void layernorm_bwd_kernel(bf16* dx, const bf16* dy, const bf16* x, const float* w, const float* mean,
                                     const float* rstd, int N, int C) {
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= N) return;
  const size_t o = size_t(row) * C;
  float m = mean[row], r = rstd[row], a = 0, bb = 0;
  for (int c = lane; c < C; c += 32) {
    float n = (f(x[o + c]) - m) * r, d = w[c] * f(dy[o + c]);
    a += d;
    bb += d * n;
  }
  for (int off = 16; off > 0; off /= 2) {
    a += __shfl_xor_sync(0xffffffff, a, off);
    bb += __shfl_xor_sync(0xffffffff, bb, off);
  }
  a /= C, bb /= C;
  for (int c = lane; c < C; c += 32) {
    float n = (f(x[o + c]) - m) * r, d = w[c] * f(dy[o + c]);
    dx[o + c] = b((d - a - n * bb) * r);
  }
}

__device__ float gelu(float x) { return 0.5f * x * (1.f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x))); }

__global__ void gelu_fwd_kernel(bf16* y, const bf16* x, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = b(gelu(f(x[i])));
}
__global__ void gelu_bwd_kernel(bf16* dx, const bf16* x, const bf16* dy, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    float v = f(x[i]), u = 0.7978845608f * (v + 0.044715f * v * v * v), t = tanhf(u);
    float g = 0.5f * (1.f + t) + 0.5f * v * (1.f - t * t) * 0.7978845608f * (1.f + 0.134145f * v * v);
    dx[i] = b(g * f(dy[i]));
  }
}
__global__ void residual_kernel(bf16* y, const bf16* a, const bf16* c, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = b(f(a[i]) + f(c[i]));
}
__global__ void fill_kernel(bf16* x, int64_t n, uint32_t seed) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    uint32_t h = uint32_t(i) * 2654435761u ^ seed;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    x[i] = b(float(h & 0xffff) / 65536.f - 0.5f);
  }
}

dim3 rows_grid(int T, int BH) { return dim3((T + 127) / 128, BH); }
int elementwise_blocks(int64_t n) { return int((n + 255) / 256 < 65535 ? (n + 255) / 256 : 65535); }

}  // namespace

void attention_forward(bf16* out, float* lse, const bf16* q, const bf16* k, const bf16* v, int B, int H, int T, int D,
                       cudaStream_t s) {
  attn_fwd_kernel<<<rows_grid(T, B * H), 128, 0, s>>>(out, lse, q, k, v, H, T, D, rsqrtf(float(D)));
}

void attention_backward(bf16* dq, bf16* dk, bf16* dv, const bf16* dout, const bf16* q, const bf16* k, const bf16* v,
                        const bf16* out, const float* lse, float* rowdot, int B, int H, int T, int D, cudaStream_t s) {
  float scale = 1.0f / sqrtf(float(D));
  attn_rowdot_kernel<<<rows_grid(T, B * H), 128, 0, s>>>(rowdot, dout, out, T, D);
  attn_dq_kernel<<<rows_grid(T, B * H), 128, 0, s>>>(dq, dout, q, k, v, lse, rowdot, T, D, scale);
  attn_dkv_kernel<<<rows_grid(T, B * H), 128, 0, s>>>(dk, dv, dout, q, k, v, lse, rowdot, T, D, scale);
}

void layernorm_forward(bf16* y, float* mean, float* rstd, const bf16* x, const float* w, const float* bias, int N, int C,
                       cudaStream_t s) {
  layernorm_fwd_kernel<<<(N + 7) / 8, 256, 0, s>>>(y, mean, rstd, x, w, bias, N, C);
}
void layernorm_backward(bf16* dx, const bf16* dy, const bf16* x, const float* w, const float* mean, const float* rstd, int N,
                        int C, cudaStream_t s) {
  layernorm_bwd_kernel<<<(N + 7) / 8, 256, 0, s>>>(dx, dy, x, w, mean, rstd, N, C);
}
void gelu_forward(bf16* y, const bf16* x, int64_t n, cudaStream_t s) {
  gelu_fwd_kernel<<<elementwise_blocks(n), 256, 0, s>>>(y, x, n);
}
void gelu_backward(bf16* dx, const bf16* x, const bf16* dy, int64_t n, cudaStream_t s) {
  gelu_bwd_kernel<<<elementwise_blocks(n), 256, 0, s>>>(dx, x, dy, n);
}
void residual_forward(bf16* y, const bf16* a, const bf16* c, int64_t n, cudaStream_t s) {
  residual_kernel<<<elementwise_blocks(n), 256, 0, s>>>(y, a, c, n);
}
void fill_random(bf16* x, int64_t n, uint32_t seed, cudaStream_t s) {
  fill_kernel<<<elementwise_blocks(n), 256, 0, s>>>(x, n, seed);
}

}  // namespace mplan::profiles::cuda
