// CUDA kernels of the backend except attention: element-wise ops, deterministic reductions
// (fixed partial counts, no atomics), norms (one warp per row, double row statistics as on the CPU),
// RoPE, activations, embeddings and row scatter (CSR, in the CPU's order), cross-entropy (one block
// per row), MoE routing (one thread per token), AdamW, bf16 conversion. Launch shapes come from
// launch_config.h; per-element formulas from kernel_math.h.
#include "executor/backend/cuda/cuda_kernels.h"

#include "executor/backend/cuda/cuda_check.h"

namespace mplan::exec::gpu {

namespace {

#include "executor/backend/cuda/device_reduce.cuh"

// ---------------------------------------------------------------------------------------------
// element-wise

__global__ void fill_zero_kernel(float* x, int64_t n) {
  for (int64_t i = gtid(); i < n; i += gstride()) x[i] = 0.0f;
}
__global__ void copy_kernel(float* dst, const float* src, int64_t n) {
  for (int64_t i = gtid(); i < n; i += gstride()) dst[i] = src[i];
}
__global__ void add_kernel(float* out, const float* a, const float* b, int64_t n) {
  for (int64_t i = gtid(); i < n; i += gstride()) out[i] = a[i] + b[i];
}
__global__ void accumulate_kernel(float* dst, const float* src, int64_t n) {
  for (int64_t i = gtid(); i < n; i += gstride()) dst[i] += src[i];
}
__global__ void scale_kernel(float* x, float v, int64_t n) {
  for (int64_t i = gtid(); i < n; i += gstride()) x[i] *= v;
}
// parameter initialisation: the counter-based values of km::init_normal (the CPU init's function)
__global__ void init_param_kernel(float* p, const int64_t* grow, int64_t rows, int64_t cols, int64_t full_cols, int64_t col_begin,
                                  uint64_t seed, uint64_t name_key, bool normal, float stddev, float constant) {
  const int64_t n = rows * cols;
  for (int64_t e = gtid(); e < n; e += gstride()) {
    const int64_t i = e / cols, j = e - i * cols, gr = grow[i];
    p[e] = gr < 0 ? 0.0f : normal ? km::init_normal(seed, name_key, gr * full_cols + col_begin + j, stddev) : constant;
  }
}
__global__ void to_bf16_kernel(__nv_bfloat16* dst, const float* src, int64_t n) {
  for (int64_t i = gtid(); i < n; i += gstride()) dst[i] = __float2bfloat16_rn(src[i]);
}
// four elements per thread: one 16-byte load, one 8-byte store (src 16-byte, dst 8-byte aligned)
__global__ void to_bf16_x4_kernel(uint2* dst, const float4* src, int64_t n4) {
  for (int64_t i = gtid(); i < n4; i += gstride()) {
    const float4 v = src[i];
    const __nv_bfloat162 lo = __floats2bfloat162_rn(v.x, v.y), hi = __floats2bfloat162_rn(v.z, v.w);
    uint2 o;
    o.x = *reinterpret_cast<const uint32_t*>(&lo);
    o.y = *reinterpret_cast<const uint32_t*>(&hi);
    dst[i] = o;
  }
}
__global__ void to_bf16_rows_kernel(__nv_bfloat16* dst, int64_t ld_dst, const float* src, int64_t rows, int64_t cols) {
  const int64_t n = rows * ld_dst;
  for (int64_t e = gtid(); e < n; e += gstride()) {
    const int64_t r = e / ld_dst, c = e - r * ld_dst;
    dst[e] = c < cols ? __float2bfloat16_rn(src[r * cols + c]) : __float2bfloat16_rn(0.0f);
  }
}
__global__ void copy_rows_kernel(float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  for (int64_t e = gtid(); e < n; e += gstride()) {
    const int64_t r = e / cols, c = e - r * cols;
    dst[r * ld_dst + c] = src[r * ld_src + c];
  }
}

// ---------------------------------------------------------------------------------------------
// reductions

template <bool kNonFinite>
__global__ void reduce_partials_kernel(double* part, const float* x, int64_t n) {
  double acc = 0;
  for (int64_t i = gtid(); i < n; i += gstride()) {
    const float v = x[i];
    if (kNonFinite)
      acc += km::is_finite(v) ? 0.0 : 1.0;
    else
      acc += double(v) * double(v);
  }
  acc = block_sum(acc);
  if (threadIdx.x == 0) part[blockIdx.x] = acc;
}
__global__ void reduce_finish_kernel(double* result, const double* part, int64_t n) {
  double acc = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) acc += part[i];
  acc = block_sum(acc);
  if (threadIdx.x == 0) result[0] = acc;
}

template <bool kNonFinite>
void reduce(double* result, double* partials, const float* x, int64_t n, cudaStream_t s) {
  ReduceLaunch l = reduce_launch(n);
  if (l.grid == 0) {
    MPLAN_CUDA_CHECK(cudaMemsetAsync(result, 0, sizeof(double), s));
    return;
  }
  reduce_partials_kernel<kNonFinite><<<unsigned(l.grid), l.block, 0, s>>>(partials, x, n);
  reduce_finish_kernel<<<1, kBlock, 0, s>>>(result, partials, l.grid);
  check_launch("reduce");
}

// ---------------------------------------------------------------------------------------------
// column sums (deterministic): partials (chunks, N), then one pass adding the chunks in order

struct ColPlain {  // dout[r, c]
  const float* d;
  int64_t N;
  __device__ float operator()(int64_t r, int64_t c) const { return d[r * N + c]; }
};
struct ColLnDw {  // dout * xhat
  const float *d, *x, *mean, *rstd;
  int64_t N;
  __device__ float operator()(int64_t r, int64_t c) const {
    return km::layernorm_xhat(x[r * N + c], mean[r], rstd[r]) * d[r * N + c];
  }
};
struct ColRmsDw {  // dout * x * rstd
  const float *d, *x, *rstd;
  int64_t N;
  __device__ float operator()(int64_t r, int64_t c) const { return d[r * N + c] * x[r * N + c] * rstd[r]; }
};

template <class F>
__global__ void column_partials_kernel(float* part, int64_t M, int64_t N, int64_t rows_per_chunk, F f) {
  __shared__ float sm[kColRowLanes][kColTile + 1];
  const int64_t col = int64_t(blockIdx.x) * kColTile + threadIdx.x;
  const int64_t r0 = int64_t(blockIdx.y) * rows_per_chunk;
  const int64_t r1 = min(M, r0 + rows_per_chunk);
  float acc = 0;
  if (col < N)
    for (int64_t r = r0 + threadIdx.y; r < r1; r += kColRowLanes) acc += f(r, col);
  sm[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && col < N) {
    float t = 0;
    for (int y = 0; y < kColRowLanes; ++y) t += sm[y][threadIdx.x];
    part[int64_t(blockIdx.y) * N + col] = t;
  }
}
__global__ void column_finish_kernel(float* dst, const float* part, int64_t chunks, int64_t N) {
  for (int64_t c = gtid(); c < N; c += gstride()) {
    float t = 0;
    for (int64_t k = 0; k < chunks; ++k) t += part[k * N + c];
    dst[c] += t;
  }
}

template <class F>
void column_sums(float* dst, float* scratch, int64_t M, int64_t N, F f, cudaStream_t s) {
  ColumnReduceLaunch l = column_reduce_launch(M, N);
  if (l.chunks == 0) return;
  dim3 grid(unsigned(l.grid_x), unsigned(l.chunks)), block(kColTile, kColRowLanes);
  column_partials_kernel<<<grid, block, 0, s>>>(scratch, M, N, l.rows_per_chunk, f);
  Launch1D fin = elementwise_launch(N);
  column_finish_kernel<<<unsigned(fin.grid), fin.block, 0, s>>>(dst, scratch, l.chunks, N);
  check_launch("column_sums");
}

__global__ void add_bias_kernel(float* out, const float* bias, int64_t M, int64_t N) {
  for (int64_t i = gtid(); i < M * N; i += gstride()) out[i] += bias[i % N];
}

// ---------------------------------------------------------------------------------------------
// norms: one warp per row, row statistics in double (as the CPU reference)

__device__ __forceinline__ int64_t warp_row() { return int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32; }

__global__ void layernorm_forward_kernel(float* out, float* mean, float* rstd, const float* inp, const float* w, const float* b,
                                         int64_t N, int64_t C, float eps) {
  const int64_t n = warp_row();
  const int lane = threadIdx.x % 32;
  if (n >= N) return;
  const float* x = inp + n * C;
  double m = 0;
  for (int64_t i = lane; i < C; i += 32) m += x[i];
  m = warp_sum(m) / double(C);
  double v = 0;
  for (int64_t i = lane; i < C; i += 32) v += (double(x[i]) - m) * (double(x[i]) - m);
  v = warp_sum(v) / double(C);
  const float s = km::rstd_from_var(v, eps), mf = float(m);
  float* o = out + n * C;
  for (int64_t i = lane; i < C; i += 32) o[i] = km::layernorm_apply(x[i], mf, s, w[i], b ? b[i] : 0.0f);
  if (lane == 0) mean[n] = mf, rstd[n] = s;
}

__global__ void layernorm_dx_kernel(float* dinp, const float* dout, const float* inp, const float* w, const float* mean,
                                    const float* rstd, int64_t N, int64_t C, bool accumulate) {
  const int64_t n = warp_row();
  const int lane = threadIdx.x % 32;
  if (n >= N) return;
  const float* x = inp + n * C;
  const float* d = dout + n * C;
  const float m = mean[n], s = rstd[n];
  double a = 0, bb = 0;
  for (int64_t i = lane; i < C; i += 32) {
    const float dnorm = w[i] * d[i];
    a += dnorm;
    bb += double(dnorm) * km::layernorm_xhat(x[i], m, s);
  }
  const float af = float(warp_sum(a) / double(C)), bf = float(warp_sum(bb) / double(C));
  float* di = dinp + n * C;
  for (int64_t i = lane; i < C; i += 32) {
    const float g = km::layernorm_dx(x[i], d[i], w[i], m, s, af, bf);
    di[i] = accumulate ? di[i] + g : g;
  }
}

__global__ void rmsnorm_forward_kernel(float* out, float* rstd, const float* inp, const float* w, int64_t N, int64_t C,
                                       float eps) {
  const int64_t n = warp_row();
  const int lane = threadIdx.x % 32;
  if (n >= N) return;
  const float* x = inp + n * C;
  double ss = 0;
  for (int64_t i = lane; i < C; i += 32) ss += double(x[i]) * x[i];
  const float s = km::rstd_from_var(warp_sum(ss) / double(C), eps);
  float* o = out + n * C;
  for (int64_t i = lane; i < C; i += 32) o[i] = km::rmsnorm_apply(x[i], s, w[i]);
  if (lane == 0) rstd[n] = s;
}

__global__ void rmsnorm_dx_kernel(float* dinp, const float* dout, const float* inp, const float* w, const float* rstd, int64_t N,
                                  int64_t C, bool accumulate) {
  const int64_t n = warp_row();
  const int lane = threadIdx.x % 32;
  if (n >= N) return;
  const float* x = inp + n * C;
  const float* d = dout + n * C;
  const float s = rstd[n];
  double dot = 0;
  for (int64_t i = lane; i < C; i += 32) dot += double(w[i]) * d[i] * x[i];
  const float c = km::rmsnorm_row_coef(warp_sum(dot) / double(C), s);
  float* di = dinp + n * C;
  for (int64_t i = lane; i < C; i += 32) {
    const float g = km::rmsnorm_dx(x[i], d[i], w[i], s, c);
    di[i] = accumulate ? di[i] + g : g;
  }
}

// ---------------------------------------------------------------------------------------------
// RoPE: one thread per (token, head, pair)

__global__ void rope_kernel(float* x, const int32_t* pos, int64_t N, int64_t H, int64_t D, float base, float sign) {
  const int64_t half = D / 2, total = N * H * half;
  for (int64_t e = gtid(); e < total; e += gstride()) {
    const int64_t i = e % half, nh = e / half, n = nh / H;
    float c, sn;
    km::rope_cos_sin(pos[n], km::rope_inv_freq(i, D, base), sign, &c, &sn);
    float* v = x + nh * D;
    km::rope_rotate(&v[i], &v[i + half], c, sn);
  }
}

// ---------------------------------------------------------------------------------------------
// activations

__global__ void act_forward_kernel(int kind, float* out, const float* inp, int64_t N, int64_t F) {
  for (int64_t e = gtid(); e < N * F; e += gstride()) {
    if (kind == 1) {
      const int64_t n = e / F, i = e % F;
      out[e] = km::swiglu_forward(inp[n * 2 * F + i], inp[n * 2 * F + F + i]);
    } else {
      out[e] = kind == 0 ? km::gelu_forward(inp[e]) : km::sqrelu_forward(inp[e]);
    }
  }
}
__global__ void act_backward_kernel(int kind, float* dinp, const float* dout, const float* inp, int64_t N, int64_t F) {
  for (int64_t e = gtid(); e < N * F; e += gstride()) {
    if (kind == 1) {
      const int64_t n = e / F, i = e % F;
      float dg, du;
      km::swiglu_backward(inp[n * 2 * F + i], inp[n * 2 * F + F + i], dout[e], &dg, &du);
      dinp[n * 2 * F + i] = dg;
      dinp[n * 2 * F + F + i] = du;
    } else {
      dinp[e] = kind == 0 ? km::gelu_backward(inp[e], dout[e]) : km::sqrelu_backward(inp[e], dout[e]);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// rows

__global__ void embedding_forward_kernel(float* out, const int32_t* tokens, const float* wte, int64_t N, int64_t C,
                                         int64_t vstart, int64_t rows) {
  for (int64_t e = gtid(); e < N * C; e += gstride()) {
    const int64_t n = e / C, c = e % C, r = int64_t(tokens[n]) - vstart;
    out[e] = (r >= 0 && r < rows) ? wte[r * C + c] : 0.0f;
  }
}
__global__ void position_forward_kernel(float* out, const float* wpe, const int32_t* pos, int64_t N, int64_t C) {
  for (int64_t e = gtid(); e < N * C; e += gstride()) {
    const int64_t n = e / C, c = e % C;
    out[e] += wpe[int64_t(pos[n]) * C + c];
  }
}
// grid.x = destination rows, grid.y = column blocks
__global__ void scatter_add_csr_kernel(float* dst, const float* src, const int32_t* dst_rows, const int32_t* offsets,
                                       const int32_t* src_idx, const float* w, int64_t C) {
  const int64_t u = blockIdx.x, c = int64_t(blockIdx.y) * blockDim.x + threadIdx.x;
  if (c >= C) return;
  float* d = dst + int64_t(dst_rows[u]) * C + c;
  float acc = *d;
  for (int32_t e = offsets[u]; e < offsets[u + 1]; ++e) {
    const int64_t i = src_idx[e];
    acc += (w ? w[i] : 1.0f) * src[i * C + c];
  }
  *d = acc;
}
__global__ void gather_rows_kernel(float* dst, const float* src, const int32_t* rows, int64_t n, int64_t C) {
  for (int64_t e = gtid(); e < n * C; e += gstride()) dst[e] = src[int64_t(rows[e / C]) * C + e % C];
}
__global__ void scale_rows_kernel(float* x, const float* sc, int64_t n, int64_t C) {
  for (int64_t e = gtid(); e < n * C; e += gstride()) x[e] *= sc[e / C];
}
__global__ void row_dot_kernel(float* out, const float* a, const float* b, int64_t n, int64_t C) {
  const int64_t r = warp_row();
  const int lane = threadIdx.x % 32;
  if (r >= n) return;
  float s = 0;
  for (int64_t i = lane; i < C; i += 32) s += a[r * C + i] * b[r * C + i];
  s = warp_sum(s);
  if (lane == 0) out[r] = s;
}

// ---------------------------------------------------------------------------------------------
// cross-entropy: one block per row

// Launched with up to kMaxRowBlock (1024) threads: without __launch_bounds__ the compiler may use more
// than 64 registers per thread and a 1024-thread launch fails ("too many resources requested").
__global__ void __launch_bounds__(kMaxRowBlock) xent_rowmax_kernel(float* rowmax, const float* logits, int64_t V, int64_t valid) {
  const float* l = logits + int64_t(blockIdx.x) * V;
  float m = neg_inf();
  for (int64_t c = threadIdx.x; c < valid; c += blockDim.x) m = fmaxf(m, l[c]);
  m = block_max(m);
  if (threadIdx.x == 0) rowmax[blockIdx.x] = m;
}
__global__ void __launch_bounds__(kMaxRowBlock)
    xent_sumexp_target_kernel(float* sumexp, float* tlogit, float* logits, const float* gmax, const int32_t* targets, int64_t V,
                              int64_t valid, int64_t vstart) {
  const int64_t n = blockIdx.x;
  float* l = logits + n * V;
  const float m = gmax[n];
  const int64_t t = int64_t(targets[n]) - vstart;
  if (threadIdx.x == 0) tlogit[n] = (t >= 0 && t < valid) ? l[t] : 0.0f;
  __syncthreads();  // the target logit is read before it is overwritten
  double s = 0;
  for (int64_t c = threadIdx.x; c < valid; c += blockDim.x) {
    const float e = km::vexp(l[c] - m);
    l[c] = e;
    s += e;
  }
  s = block_sum(s);
  if (threadIdx.x == 0) sumexp[n] = float(s);
}
__global__ void __launch_bounds__(kMaxRowBlock)
    xent_backward_kernel(float* logits, const float* gsumexp, const int32_t* targets, const float* dloss, int64_t V,
                         int64_t valid, int64_t vstart) {
  const int64_t n = blockIdx.x;
  float* l = logits + n * V;
  const float inv = 1.0f / gsumexp[n], d = dloss[n];
  const int64_t t = int64_t(targets[n]) - vstart;
  for (int64_t c = threadIdx.x; c < V; c += blockDim.x) l[c] = c < valid ? km::xent_grad(l[c], inv, d) : 0.0f;
  __syncthreads();
  if (threadIdx.x == 0 && t >= 0 && t < valid) l[t] -= d;
}

// ---------------------------------------------------------------------------------------------
// MoE router: one thread per token. The j-th choice is the best expert ordered after the (j-1)-th
// (km::topk_before is a strict total order), so no "taken" set is needed.

__global__ void moe_route_forward_kernel(float* probs, int32_t* idx, float* weights, const float* logits, int64_t N, int64_t E,
                                         int64_t k) {
  for (int64_t n = gtid(); n < N; n += gstride()) {
    const float* l = logits + n * E;
    float m = l[0];
    for (int64_t e = 1; e < E; ++e) m = fmaxf(m, l[e]);
    double s = 0;
    for (int64_t e = 0; e < E; ++e) s += km::lexp(l[e] - m);
    for (int64_t e = 0; e < E; ++e) probs[n * E + e] = float(double(km::lexp(l[e] - m)) / s);
    int32_t prev = -1;
    for (int64_t j = 0; j < k; ++j) {
      int32_t best = -1;
      for (int32_t e = 0; e < int32_t(E); ++e) {
        if (prev >= 0 && !km::topk_before(l[prev], prev, l[e], e)) continue;
        if (best < 0 || km::topk_before(l[e], e, l[best], best)) best = e;
      }
      idx[n * k + j] = best;
      prev = best;
    }
    const float mk = l[idx[n * k]];
    double sk = 0;
    for (int64_t j = 0; j < k; ++j) sk += km::lexp(l[idx[n * k + j]] - mk);
    for (int64_t j = 0; j < k; ++j) weights[n * k + j] = float(double(km::lexp(l[idx[n * k + j]] - mk)) / sk);
  }
}
__global__ void moe_route_backward_kernel(float* dlogits, const float* dweights, const float* dprobs, const float* probs,
                                          const int32_t* idx, const float* weights, int64_t N, int64_t E, int64_t k) {
  for (int64_t n = gtid(); n < N; n += gstride())
    km::moe_route_backward_row(dlogits, dweights, dprobs, probs, idx, weights, n, E, k);
}

// ---------------------------------------------------------------------------------------------
// AdamW

__global__ void adamw_kernel(float* p, const float* g, float* m, float* v, int64_t n, km::AdamWConsts c) {
  for (int64_t i = gtid(); i < n; i += gstride()) km::adamw_update(&p[i], g[i], &m[i], &v[i], c);
}
// four elements per thread through 16-byte loads and stores (the same per-element update)
__global__ void adamw_x4_kernel(float4* p, const float4* g, float4* m, float4* v, int64_t n4, km::AdamWConsts c) {
  for (int64_t i = gtid(); i < n4; i += gstride()) {
    float4 pp = p[i], mm = m[i], vv = v[i];
    const float4 gg = g[i];
    km::adamw_update(&pp.x, gg.x, &mm.x, &vv.x, c);
    km::adamw_update(&pp.y, gg.y, &mm.y, &vv.y, c);
    km::adamw_update(&pp.z, gg.z, &mm.z, &vv.z, c);
    km::adamw_update(&pp.w, gg.w, &mm.w, &vv.w, c);
    p[i] = pp, m[i] = mm, v[i] = vv;
  }
}

// Launches `kernel` on a grid of `grid` blocks of `block` threads (nothing for an empty grid).
template <class Kernel, class... Args>
void launch_grid(const char* what, int64_t grid, int block, cudaStream_t s, Kernel kernel, Args... args) {
  if (grid == 0) return;
  kernel<<<unsigned(grid), block, 0, s>>>(args...);
  check_launch(what);
}
template <class Kernel, class... Args>
void launch_1d(const char* what, int64_t n, cudaStream_t s, Kernel kernel, Args... args) {
  const Launch1D l = elementwise_launch(n);
  launch_grid(what, l.grid, l.block, s, kernel, args...);
}
template <class Kernel, class... Args>
void launch_rows(const char* what, int64_t rows, cudaStream_t s, Kernel kernel, Args... args) {
  const RowLaunch l = warp_per_row_launch(rows);
  launch_grid(what, l.grid, l.block, s, kernel, args...);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// launchers

void fill_zero(float* x, int64_t n, cudaStream_t s) { launch_1d("fill_zero", n, s, fill_zero_kernel, x, n); }
void copy(float* dst, const float* src, int64_t n, cudaStream_t s) {
  if (dst != src) launch_1d("copy", n, s, copy_kernel, dst, src, n);
}
void add(float* out, const float* a, const float* b, int64_t n, cudaStream_t s) {
  launch_1d("add", n, s, add_kernel, out, a, b, n);
}
void accumulate(float* dst, const float* src, int64_t n, cudaStream_t s) {
  launch_1d("accumulate", n, s, accumulate_kernel, dst, src, n);
}
void scale(float* x, float v, int64_t n, cudaStream_t s) { launch_1d("scale", n, s, scale_kernel, x, v, n); }
void init_param(float* p, const int64_t* global_rows, int64_t rows, int64_t cols, int64_t full_cols, int64_t col_begin,
                uint64_t seed, uint64_t name_key, bool normal, float stddev, float constant, cudaStream_t s) {
  launch_1d("init_param", rows * cols, s, init_param_kernel, p, global_rows, rows, cols, full_cols, col_begin, seed, name_key,
            normal, stddev, constant);
}
void to_bf16(__nv_bfloat16* dst, const float* src, int64_t n, cudaStream_t s) {
  if (n % 4 == 0 && reinterpret_cast<uintptr_t>(src) % 16 == 0 && reinterpret_cast<uintptr_t>(dst) % 8 == 0) {
    launch_1d("to_bf16", n / 4, s, to_bf16_x4_kernel, reinterpret_cast<uint2*>(dst), reinterpret_cast<const float4*>(src), n / 4);
    return;
  }
  launch_1d("to_bf16", n, s, to_bf16_kernel, dst, src, n);
}
void to_bf16_rows(__nv_bfloat16* dst, int64_t ld_dst, const float* src, int64_t rows, int64_t cols, cudaStream_t s) {
  launch_1d("to_bf16_rows", rows * ld_dst, s, to_bf16_rows_kernel, dst, ld_dst, src, rows, cols);
}
void copy_rows(float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows, int64_t cols, cudaStream_t s) {
  launch_1d("copy_rows", rows * cols, s, copy_rows_kernel, dst, ld_dst, src, ld_src, rows, cols);
}

void sum_squares(double* result, double* partials, const float* x, int64_t n, cudaStream_t s) {
  reduce<false>(result, partials, x, n, s);
}
void count_nonfinite(double* result, double* partials, const float* x, int64_t n, cudaStream_t s) {
  reduce<true>(result, partials, x, n, s);
}

void add_bias(float* out, const float* bias, int64_t M, int64_t N, cudaStream_t s) {
  launch_1d("add_bias", M * N, s, add_bias_kernel, out, bias, M, N);
}
void bias_backward(float* dbias, float* scratch, const float* dout, int64_t M, int64_t N, cudaStream_t s) {
  column_sums(dbias, scratch, M, N, ColPlain{dout, N}, s);
}

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w, const float* b, int64_t N,
                       int64_t C, float eps, cudaStream_t s) {
  launch_rows("layernorm_forward", N, s, layernorm_forward_kernel, out, mean, rstd, inp, w, b, N, C, eps);
}
void layernorm_backward(float* dinp, float* dw, float* db, float* scratch, const float* dout, const float* inp, const float* w,
                        const float* mean, const float* rstd, int64_t N, int64_t C, bool accumulate, cudaStream_t s) {
  // weight/bias gradients first: they read dout, which dinp may alias (in place, as the CPU allows)
  if (db) column_sums(db, scratch, N, C, ColPlain{dout, C}, s);
  if (dw) column_sums(dw, scratch, N, C, ColLnDw{dout, inp, mean, rstd, C}, s);
  launch_rows("layernorm_backward", N, s, layernorm_dx_kernel, dinp, dout, inp, w, mean, rstd, N, C, accumulate);
}
void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* w, int64_t N, int64_t C, float eps, cudaStream_t s) {
  launch_rows("rmsnorm_forward", N, s, rmsnorm_forward_kernel, out, rstd, inp, w, N, C, eps);
}
void rmsnorm_backward(float* dinp, float* dw, float* scratch, const float* dout, const float* inp, const float* w,
                      const float* rstd, int64_t N, int64_t C, bool accumulate, cudaStream_t s) {
  if (dw) column_sums(dw, scratch, N, C, ColRmsDw{dout, inp, rstd, C}, s);  // before dinp (may alias dout)
  launch_rows("rmsnorm_backward", N, s, rmsnorm_dx_kernel, dinp, dout, inp, w, rstd, N, C, accumulate);
}

void rope(float* x, const int32_t* pos, int64_t N, int64_t H, int64_t D, float base, float sign, cudaStream_t s) {
  launch_1d("rope", N * H * (D / 2), s, rope_kernel, x, pos, N, H, D, base, sign);
}

void act_forward(int kind, float* out, const float* inp, int64_t N, int64_t F, cudaStream_t s) {
  launch_1d("act_forward", N * F, s, act_forward_kernel, kind, out, inp, N, F);
}
void act_backward(int kind, float* dinp, const float* dout, const float* inp, int64_t N, int64_t F, cudaStream_t s) {
  launch_1d("act_backward", N * F, s, act_backward_kernel, kind, dinp, dout, inp, N, F);
}

void embedding_forward(float* out, const int32_t* tokens, const float* wte, int64_t N, int64_t C, int64_t vstart, int64_t rows,
                       cudaStream_t s) {
  launch_1d("embedding_forward", N * C, s, embedding_forward_kernel, out, tokens, wte, N, C, vstart, rows);
}
void position_forward(float* out, const float* wpe, const int32_t* pos, int64_t N, int64_t C, cudaStream_t s) {
  launch_1d("position_forward", N * C, s, position_forward_kernel, out, wpe, pos, N, C);
}
void scatter_add_csr(float* dst, const float* src, const int32_t* dst_rows, const int32_t* offsets, const int32_t* src_idx,
                     const float* w, int64_t n_dst, int64_t C, cudaStream_t s) {
  if (n_dst == 0 || C == 0) return;
  dim3 grid(unsigned(n_dst), unsigned((C + kBlock - 1) / kBlock));
  scatter_add_csr_kernel<<<grid, kBlock, 0, s>>>(dst, src, dst_rows, offsets, src_idx, w, C);
  check_launch("scatter_add_csr");
}
void gather_rows(float* dst, const float* src, const int32_t* rows, int64_t n, int64_t C, cudaStream_t s) {
  launch_1d("gather_rows", n * C, s, gather_rows_kernel, dst, src, rows, n, C);
}
void scale_rows(float* x, const float* sc, int64_t n, int64_t C, cudaStream_t s) {
  launch_1d("scale_rows", n * C, s, scale_rows_kernel, x, sc, n, C);
}
void row_dot(float* out, const float* a, const float* b, int64_t n, int64_t C, cudaStream_t s) {
  launch_rows("row_dot", n, s, row_dot_kernel, out, a, b, n, C);
}

void xent_rowmax(float* rowmax, const float* logits, int64_t N, int64_t V, int64_t valid, cudaStream_t s) {
  BlockRowLaunch l = block_per_row_launch(N, valid);
  if (l.grid == 0) return;
  xent_rowmax_kernel<<<unsigned(l.grid), l.block, 0, s>>>(rowmax, logits, V, valid);
  check_launch("xent_rowmax");
}
void xent_sumexp_target(float* sumexp, float* tlogit, float* logits, const float* gmax, const int32_t* targets, int64_t N,
                        int64_t V, int64_t valid, int64_t vstart, cudaStream_t s) {
  BlockRowLaunch l = block_per_row_launch(N, valid);
  if (l.grid == 0) return;
  xent_sumexp_target_kernel<<<unsigned(l.grid), l.block, 0, s>>>(sumexp, tlogit, logits, gmax, targets, V, valid, vstart);
  check_launch("xent_sumexp_target");
}
void xent_backward(float* logits, const float* gsumexp, const int32_t* targets, const float* dloss, int64_t N, int64_t V,
                   int64_t valid, int64_t vstart, cudaStream_t s) {
  BlockRowLaunch l = block_per_row_launch(N, V);
  if (l.grid == 0) return;
  xent_backward_kernel<<<unsigned(l.grid), l.block, 0, s>>>(logits, gsumexp, targets, dloss, V, valid, vstart);
  check_launch("xent_backward");
}

void moe_route_forward(float* probs, int32_t* idx, float* weights, const float* logits, int64_t N, int64_t E, int64_t k,
                       cudaStream_t s) {
  launch_1d("moe_route_forward", N, s, moe_route_forward_kernel, probs, idx, weights, logits, N, E, k);
}
void moe_route_backward(float* dlogits, const float* dweights, const float* dprobs, const float* probs, const int32_t* idx,
                        const float* weights, int64_t N, int64_t E, int64_t k, cudaStream_t s) {
  launch_1d("moe_route_backward", N, s, moe_route_backward_kernel, dlogits, dweights, dprobs, probs, idx, weights, N, E, k);
}

void adamw(float* param, const float* grad, float* m, float* v, int64_t n, const km::AdamWConsts& c, cudaStream_t s) {
  auto a16 = [](const void* q) { return reinterpret_cast<uintptr_t>(q) % 16 == 0; };
  int64_t head = 0;
  if (a16(param) && a16(grad) && a16(m) && a16(v)) {
    const int64_t n4 = n / 4;
    launch_1d("adamw", n4, s, adamw_x4_kernel, reinterpret_cast<float4*>(param), reinterpret_cast<const float4*>(grad),
              reinterpret_cast<float4*>(m), reinterpret_cast<float4*>(v), n4, c);
    head = n4 * 4;
  }
  launch_1d("adamw", n - head, s, adamw_kernel, param + head, grad + head, m + head, v + head, n - head, c);
}

}  // namespace mplan::exec::gpu
