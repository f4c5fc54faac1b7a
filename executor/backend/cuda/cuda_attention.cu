// Flash attention on CUDA (fp32, SIMT): scores are never stored in global memory, the forward keeps
// only the output and the log-sum-exp per row, the backward recomputes probabilities tile by tile.
// Tiles of 32 queries x 32 keys, 256 threads = 8 warps; a warp owns 4 rows of the tile it
// accumulates (queries in the forward and dQ kernels, keys in the dK/dV kernel) with one lane per
// key (or query) while scoring and one lane per head-dimension column (in chunks of 32, NC chunks)
// while accumulating; probabilities move between the two layouts by warp shuffles, so the only
// shared memory is the Q/K/V/dO tiles (padded where lanes stride across rows).
// Masking is by global position (key j visible to query i when kpos[j] <= qpos[i]), as on the CPU,
// so the same kernels serve whole sequences and the key blocks of context-parallel ring attention.
// The backward is deterministic: dK/dV and dQ come from two kernels, each output element owned by
// one block (no atomics). Per-element formulas (exp, merge, dS) are those of kernel_math.h.
#include <climits>
#include <cstdio>
#include <cstdlib>

#include "executor/backend/cuda/cuda_check.h"
#include "executor/backend/cuda/cuda_kernels.h"

namespace mplan::exec::gpu {

namespace {

constexpr int BQ = kAttnBQ, BK = kAttnBK, NT = kAttnThreads, NW = NT / 32, RPW = BQ / NW;
static_assert(BQ == 32 && BK == 32 && RPW * NW == BQ && RPW * NW == BK, "tile shape assumed below");

#include "executor/backend/cuda/device_reduce.cuh"

// element (b, t, h, d) of a (B, T, H, Dim) tensor
__device__ __forceinline__ int64_t at(int64_t b, int64_t t, int64_t h, int64_t d, int64_t T, int64_t H, int64_t Dim) {
  return ((b * T + t) * H + h) * Dim + d;
}

// rows [r0, r0 + n) of head h of x (B, T, H, Dim) -> smem (BQ or BK rows, row stride ld), zero padded
__device__ void load_rows(float* sm, int ld, const float* x, int64_t b, int64_t r0, int n, int64_t h, int64_t T, int64_t H,
                          int64_t Dim) {
  const int rows = BQ;  // == BK
  for (int e = threadIdx.x; e < rows * Dim; e += NT) {
    const int r = e / int(Dim), d = e % int(Dim);
    sm[r * ld + d] = r < n ? x[at(b, r0 + r, h, d, T, H, Dim)] : 0.0f;
  }
}

// The query tile of this block (grid: Tq tiles, Hq, B): batch, query head, first query, its KV head, and
// how many queries it holds.
struct QueryTile {
  int64_t b, h, i0, hk;
  int bq;
};
__device__ __forceinline__ QueryTile query_tile(const AttnDims& a) {
  const int64_t b = blockIdx.z, h = blockIdx.y, i0 = int64_t(blockIdx.x) * BQ;
  return {b, h, i0, h / (a.Hq / a.Hkv), int(min(int64_t(BQ), a.Tq - i0))};
}

// After a barrier, warp 0 writes the largest of the tile's 32 query positions to *qmax.
__device__ __forceinline__ void publish_max_position(const int* qp, int* qmax) {
  __syncthreads();
  if (threadIdx.x < 32) {
    const int m = warp_max_int(qp[threadIdx.x]);
    if (threadIdx.x == 0) *qmax = m;
  }
}

// Positions, log-sum-exp and delta of the query tile at i0 of head h (bq rows; padding rows masked).
__device__ __forceinline__ void load_query_stats(int* qp, float* ls, float* dl, const int32_t* qpos, const float* lse,
                                                 const float* delta, int64_t b, int64_t h, int64_t i0, int bq,
                                                 const AttnDims& a) {
  if (threadIdx.x < BQ) {
    const int t = threadIdx.x;
    qp[t] = t < bq ? qpos[i0 + t] : INT_MIN;
    ls[t] = t < bq ? lse[(b * a.Hq + h) * a.Tq + i0 + t] : neg_inf();
    dl[t] = t < bq ? delta[(b * a.Hq + h) * a.Tq + i0 + t] : 0.0f;
  }
}

// The key tile at j0 of KV head hk (bk keys) for a query tile: its positions into kp and, unless no key
// of it is visible to a query up to *qmax (then false, nothing loaded), its K rows into Ks (row stride
// ldk) and V rows into Vs (ldv). Every thread of the block calls it (it holds barriers).
__device__ bool load_key_tile(int* kp, float* Ks, int ldk, float* Vs, int ldv, const float* k, const float* v,
                              const int32_t* kpos, int64_t b, int64_t j0, int bk, int64_t hk, const AttnDims& a,
                              const int* qmax) {
  __syncthreads();  // the previous tile is consumed; *qmax is written
  if (threadIdx.x < BK) kp[threadIdx.x] = threadIdx.x < bk ? kpos[j0 + threadIdx.x] : INT_MAX;
  __syncthreads();
  if (!__syncthreads_or(threadIdx.x < BK && kp[threadIdx.x] <= *qmax)) return false;  // fully masked tile
  load_rows(Ks, ldk, k, b, j0, bk, hk, a.Tk, a.Hkv, a.D);
  load_rows(Vs, ldv, v, b, j0, bk, hk, a.Tk, a.Hkv, a.Dv);
  __syncthreads();
  return true;
}

// acc[r][c] += sum_j s_j[r] x[j][lane + 32 c] over the n rows j of x (row stride ld, ncols columns),
// s_j being lane j's s (this warp's RPW rows of a score-like tile, one lane per column j).
template <int NC>
__device__ __forceinline__ void warp_rows_accumulate(float (&acc)[RPW][NC], const float (&s)[RPW], const float* x, int ld,
                                                     int ncols, int n, int lane) {
  for (int j = 0; j < n; ++j) {
    float sj[RPW];
#pragma unroll
    for (int r = 0; r < RPW; ++r) sj[r] = __shfl_sync(0xffffffffu, s[r], j);
#pragma unroll
    for (int c = 0; c < NC; ++c) {
      const int d = lane + 32 * c;
      const float xv = d < ncols ? x[j * ld + d] : 0.0f;
#pragma unroll
      for (int r = 0; r < RPW; ++r) acc[r][c] += sj[r] * xv;
    }
  }
}

// s[r] += dot(row warp * RPW + r of `rows` (row stride ld), x) over n columns, for this warp's RPW rows
// (x: one row per lane, in shared memory).
__device__ __forceinline__ void warp_rows_dot(float (&s)[RPW], const float* rows, int ld, const float* x, int n, int warp) {
  for (int d = 0; d < n; ++d) {
    const float xv = x[d];
#pragma unroll
    for (int r = 0; r < RPW; ++r) s[r] += rows[(warp * RPW + r) * ld + d] * xv;
  }
}

// ---------------------------------------------------------------------------------------------
// forward: grid (Tq tiles, Hq, B)

template <int NC>
__global__ void __launch_bounds__(NT) attn_forward_kernel(float* out, float* lse, const float* q, const float* k, const float* v,
                                                          const int32_t* qpos, const int32_t* kpos, AttnDims a, bool merge) {
  extern __shared__ float smem[];
  const int D = int(a.D), Dv = int(a.Dv);
  float* Qs = smem;               // (BQ, D)
  float* Ks = Qs + BQ * D;        // (BK, D + 1)
  float* Vs = Ks + BK * (D + 1);  // (BK, Dv)
  __shared__ int qp[BQ], kp[BK];
  __shared__ int s_qmax;
  const auto [b, h, i0, hk, bq] = query_tile(a);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;

  load_rows(Qs, D, q, b, i0, bq, h, a.Tq, a.Hq, D);
  if (threadIdx.x < BQ) qp[threadIdx.x] = threadIdx.x < bq ? qpos[i0 + threadIdx.x] : INT_MIN;
  publish_max_position(qp, &s_qmax);
  float acc[RPW][NC], m_run[RPW], l_run[RPW];
#pragma unroll
  for (int r = 0; r < RPW; ++r) {
    m_run[r] = neg_inf(), l_run[r] = 0.0f;
#pragma unroll
    for (int c = 0; c < NC; ++c) acc[r][c] = 0.0f;
  }
  for (int64_t j0 = 0; j0 < a.Tk; j0 += BK) {
    const int bk = int(min(int64_t(BK), a.Tk - j0));
    if (!load_key_tile(kp, Ks, D + 1, Vs, Dv, k, v, kpos, b, j0, bk, hk, a, &s_qmax)) continue;
    // scores of this warp's rows, lane = key
    float s[RPW];
#pragma unroll
    for (int r = 0; r < RPW; ++r) s[r] = 0.0f;
    warp_rows_dot(s, Qs, D, Ks + lane * (D + 1), D, warp);
#pragma unroll
    for (int r = 0; r < RPW; ++r) {
      const int i = warp * RPW + r;
      const bool vis = i < bq && lane < bk && km::attn_visible(kp[lane], qp[i]);
      const float sc = vis ? s[r] * a.scale : neg_inf();
      const float mn = fmaxf(m_run[r], warp_max(sc));
      float p = 0.0f, corr = 1.0f;
      if (mn != neg_inf()) {
        corr = km::vexp(m_run[r] - mn);
        p = km::vexp(sc - mn);
        l_run[r] = l_run[r] * corr + warp_sum(p);
        m_run[r] = mn;
      }
#pragma unroll
      for (int c = 0; c < NC; ++c) acc[r][c] *= corr;
      s[r] = p;
    }
    // acc (row, lane + 32 c) += sum_j p_j V[j]
    warp_rows_accumulate(acc, s, Vs, Dv, Dv, bk, lane);
  }
#pragma unroll
  for (int r = 0; r < RPW; ++r) {
    const int i = warp * RPW + r;
    if (i >= bq) continue;
    float* o = out + at(b, i0 + i, h, 0, a.Tq, a.Hq, Dv);
    float* li = lse + (b * a.Hq + h) * a.Tq + i0 + i;
    const float lold = *li;
    __syncwarp();
    if (l_run[r] == 0.0f) {  // no visible key in this block
      if (!merge) {
#pragma unroll
        for (int c = 0; c < NC; ++c)
          if (lane + 32 * c < Dv) o[lane + 32 * c] = 0.0f;
        if (lane == 0) *li = neg_inf();
      }
      continue;
    }
    const float lb = m_run[r] + km::llog(l_run[r]), inv = 1.0f / l_run[r];
    if (!merge || lold == neg_inf()) {
#pragma unroll
      for (int c = 0; c < NC; ++c)
        if (lane + 32 * c < Dv) o[lane + 32 * c] = acc[r][c] * inv;
      if (lane == 0) *li = lb;
    } else {  // merge with the running result of earlier key blocks
      float wa, wb;
      const float lnew = km::lse_merge(lold, lb, inv, &wa, &wb);
#pragma unroll
      for (int c = 0; c < NC; ++c) {
        const int d = lane + 32 * c;
        if (d < Dv) o[d] = o[d] * wa + acc[r][c] * wb;
      }
      if (lane == 0) *li = lnew;
    }
  }
}

// delta (B, Hq, Tq) = rowsum(dout * out): one warp per row
__global__ void attn_prepare_kernel(float* delta, const float* dout, const float* out, AttnDims a) {
  const int64_t row = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= a.B * a.Hq * a.Tq) return;
  const int64_t i = row % a.Tq, bh = row / a.Tq, h = bh % a.Hq, b = bh / a.Hq;
  const int64_t off = at(b, i, h, 0, a.Tq, a.Hq, a.Dv);
  float s = 0;
  for (int64_t d = lane; d < a.Dv; d += 32) s += dout[off + d] * out[off + d];
  s = warp_sum(s);
  if (lane == 0) delta[row] = s;
}

// ---------------------------------------------------------------------------------------------
// backward dQ: grid (Tq tiles, Hq, B); dQ (+)= dS K per query tile, over all key tiles

template <int NC>
__global__ void __launch_bounds__(NT)
    attn_backward_dq_kernel(float* dq, const float* dout, const float* lse, const float* delta, const float* q, const float* k,
                            const float* v, const int32_t* qpos, const int32_t* kpos, AttnDims a) {
  extern __shared__ float smem[];
  const int D = int(a.D), Dv = int(a.Dv);
  float* Qs = smem;               // (BQ, D)
  float* dOs = Qs + BQ * D;       // (BQ, Dv)
  float* Ks = dOs + BQ * Dv;      // (BK, D + 1)
  float* Vs = Ks + BK * (D + 1);  // (BK, Dv + 1)
  __shared__ int qp[BQ], kp[BK];
  __shared__ float ls[BQ], dl[BQ];
  __shared__ int s_qmax;
  const auto [b, h, i0, hk, bq] = query_tile(a);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;

  load_rows(Qs, D, q, b, i0, bq, h, a.Tq, a.Hq, D);
  load_rows(dOs, Dv, dout, b, i0, bq, h, a.Tq, a.Hq, Dv);
  load_query_stats(qp, ls, dl, qpos, lse, delta, b, h, i0, bq, a);
  publish_max_position(qp, &s_qmax);
  float acc[RPW][NC];
#pragma unroll
  for (int r = 0; r < RPW; ++r)
#pragma unroll
    for (int c = 0; c < NC; ++c) acc[r][c] = 0.0f;
  for (int64_t j0 = 0; j0 < a.Tk; j0 += BK) {
    const int bk = int(min(int64_t(BK), a.Tk - j0));
    if (!load_key_tile(kp, Ks, D + 1, Vs, Dv + 1, k, v, kpos, b, j0, bk, hk, a, &s_qmax)) continue;
    float s[RPW], dp[RPW];
#pragma unroll
    for (int r = 0; r < RPW; ++r) s[r] = dp[r] = 0.0f;
    warp_rows_dot(s, Qs, D, Ks + lane * (D + 1), D, warp);
    warp_rows_dot(dp, dOs, Dv, Vs + lane * (Dv + 1), Dv, warp);
#pragma unroll
    for (int r = 0; r < RPW; ++r) {
      const int i = warp * RPW + r;
      const bool vis = i < bq && lane < bk && ls[i] != neg_inf() && km::attn_visible(kp[lane], qp[i]);
      const float p = vis ? km::vexp(s[r] * a.scale - ls[i]) : 0.0f;
      s[r] = km::attn_dscore(p, dp[r], dl[i], a.scale);  // s becomes dS
    }
    warp_rows_accumulate(acc, s, Ks, D + 1, D, bk, lane);  // dQ += dS K
  }
#pragma unroll
  for (int r = 0; r < RPW; ++r) {
    const int i = warp * RPW + r;
    if (i >= bq) continue;
    float* o = dq + at(b, i0 + i, h, 0, a.Tq, a.Hq, D);
#pragma unroll
    for (int c = 0; c < NC; ++c)
      if (lane + 32 * c < D) o[lane + 32 * c] += acc[r][c];
  }
}

// ---------------------------------------------------------------------------------------------
// backward dK, dV: grid (Tk tiles, Hkv, B); over every query head of the group and query tile:
// dV (+)= P^T dO, dK (+)= dS^T Q

template <int NC>
__global__ void __launch_bounds__(NT)
    attn_backward_dkv_kernel(float* dk, float* dv, const float* dout, const float* lse, const float* delta, const float* q,
                             const float* k, const float* v, const int32_t* qpos, const int32_t* kpos, AttnDims a) {
  extern __shared__ float smem[];
  const int D = int(a.D), Dv = int(a.Dv);
  float* Qs = smem;                 // (BQ, D + 1)
  float* dOs = Qs + BQ * (D + 1);   // (BQ, Dv + 1)
  float* Ks = dOs + BQ * (Dv + 1);  // (BK, D)
  float* Vs = Ks + BK * D;          // (BK, Dv)
  __shared__ int qp[BQ], kp[BK];
  __shared__ float ls[BQ], dl[BQ];
  __shared__ int s_kmin;
  const int64_t b = blockIdx.z, hk = blockIdx.y, j0 = int64_t(blockIdx.x) * BK;
  const int64_t group = a.Hq / a.Hkv;
  const int bk = int(min(int64_t(BK), a.Tk - j0));
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;

  load_rows(Ks, D, k, b, j0, bk, hk, a.Tk, a.Hkv, D);
  load_rows(Vs, Dv, v, b, j0, bk, hk, a.Tk, a.Hkv, Dv);
  if (threadIdx.x < BK) kp[threadIdx.x] = threadIdx.x < bk ? kpos[j0 + threadIdx.x] : INT_MAX;
  __syncthreads();
  if (warp == 0) {
    const int m = warp_min_int(kp[lane]);
    if (lane == 0) s_kmin = m;
  }
  float adk[RPW][NC], adv[RPW][NC];
#pragma unroll
  for (int r = 0; r < RPW; ++r)
#pragma unroll
    for (int c = 0; c < NC; ++c) adk[r][c] = adv[r][c] = 0.0f;
  for (int64_t h = hk * group; h < (hk + 1) * group; ++h)
    for (int64_t i0 = 0; i0 < a.Tq; i0 += BQ) {
      const int bq = int(min(int64_t(BQ), a.Tq - i0));
      __syncthreads();
      load_query_stats(qp, ls, dl, qpos, lse, delta, b, h, i0, bq, a);
      __syncthreads();
      if (!__syncthreads_or(threadIdx.x < BQ && qp[threadIdx.x] >= s_kmin)) continue;
      load_rows(Qs, D + 1, q, b, i0, bq, h, a.Tq, a.Hq, D);
      load_rows(dOs, Dv + 1, dout, b, i0, bq, h, a.Tq, a.Hq, Dv);
      __syncthreads();
      // lane = query i of the tile; rows r = this warp's keys
      float s[RPW], dp[RPW];
#pragma unroll
      for (int r = 0; r < RPW; ++r) s[r] = dp[r] = 0.0f;
      warp_rows_dot(s, Ks, D, Qs + lane * (D + 1), D, warp);
      warp_rows_dot(dp, Vs, Dv, dOs + lane * (Dv + 1), Dv, warp);
      float p[RPW];
#pragma unroll
      for (int r = 0; r < RPW; ++r) {
        const int j = warp * RPW + r;
        const bool vis = lane < bq && j < bk && ls[lane] != neg_inf() && km::attn_visible(kp[j], qp[lane]);
        p[r] = vis ? km::vexp(s[r] * a.scale - ls[lane]) : 0.0f;
        s[r] = km::attn_dscore(p[r], dp[r], dl[lane], a.scale);  // dS
      }
      for (int i = 0; i < bq; ++i) {
        float pi[RPW], dsi[RPW];
#pragma unroll
        for (int r = 0; r < RPW; ++r) {
          pi[r] = __shfl_sync(0xffffffffu, p[r], i);
          dsi[r] = __shfl_sync(0xffffffffu, s[r], i);
        }
#pragma unroll
        for (int c = 0; c < NC; ++c) {
          const int d = lane + 32 * c;
          const float ov = d < Dv ? dOs[i * (Dv + 1) + d] : 0.0f;
          const float qv = d < D ? Qs[i * (D + 1) + d] : 0.0f;
#pragma unroll
          for (int r = 0; r < RPW; ++r) {
            adv[r][c] += pi[r] * ov;
            adk[r][c] += dsi[r] * qv;
          }
        }
      }
    }
#pragma unroll
  for (int r = 0; r < RPW; ++r) {
    const int j = warp * RPW + r;
    if (j >= bk) continue;
    float* ok = dk + at(b, j0 + j, hk, 0, a.Tk, a.Hkv, D);
    float* ov = dv + at(b, j0 + j, hk, 0, a.Tk, a.Hkv, Dv);
#pragma unroll
    for (int c = 0; c < NC; ++c) {
      const int d = lane + 32 * c;
      if (d < D) ok[d] += adk[r][c];
      if (d < Dv) ov[d] += adv[r][c];
    }
  }
}

dim3 grid_of(const AttnLaunch& l) { return dim3(unsigned(l.grid_x), unsigned(l.grid_y), unsigned(l.grid_z)); }

}  // namespace

int64_t attention_set_smem_limit(int64_t optin_bytes) {
  // The opt-in limit bounds static + dynamic shared memory of a block: each kernel may request at
  // most optin - its static shared memory (the qp/kp/ls/dl arrays) as dynamic memory; asking for
  // the whole opt-in amount fails with cudaErrorInvalidValue.
  const struct {
    const void* f;
    const char* name;
  } kernels[] = {
      {reinterpret_cast<const void*>(attn_forward_kernel<4>), "attn_forward_kernel<4>"},
      {reinterpret_cast<const void*>(attn_forward_kernel<8>), "attn_forward_kernel<8>"},
      {reinterpret_cast<const void*>(attn_backward_dq_kernel<4>), "attn_backward_dq_kernel<4>"},
      {reinterpret_cast<const void*>(attn_backward_dq_kernel<8>), "attn_backward_dq_kernel<8>"},
      {reinterpret_cast<const void*>(attn_backward_dkv_kernel<4>), "attn_backward_dkv_kernel<4>"},
      {reinterpret_cast<const void*>(attn_backward_dkv_kernel<8>), "attn_backward_dkv_kernel<8>"},
  };
  int64_t usable = optin_bytes;
  for (const auto& k : kernels) {
    cudaFuncAttributes attr{};
    cudaError_t e = cudaFuncGetAttributes(&attr, k.f);
    if (e == cudaSuccess) {
      const int64_t dyn = attention_dynamic_smem_limit(optin_bytes, int64_t(attr.sharedSizeBytes));
      e = cudaFuncSetAttribute(k.f, cudaFuncAttributeMaxDynamicSharedMemorySize, int(dyn));
      if (dyn < usable) usable = dyn;
    }
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      fprintf(stderr, "CUDA: setting the dynamic shared memory limit of %s failed: %s\n", k.name, cudaGetErrorString(e));
      return -1;
    }
  }
  return usable;
}

void attention_forward(float* out, float* lse, const float* q, const float* k, const float* v, const int32_t* qpos,
                       const int32_t* kpos, const AttnDims& a, bool merge, const AttnLaunch& l, cudaStream_t s) {
  if (l.dim_chunks == 4)
    attn_forward_kernel<4><<<grid_of(l), NT, size_t(l.smem_bytes), s>>>(out, lse, q, k, v, qpos, kpos, a, merge);
  else
    attn_forward_kernel<8><<<grid_of(l), NT, size_t(l.smem_bytes), s>>>(out, lse, q, k, v, qpos, kpos, a, merge);
  check_launch("attention_forward");
}

void attention_prepare(float* delta, const float* dout, const float* out, const AttnDims& a, cudaStream_t s) {
  RowLaunch l = warp_per_row_launch(a.B * a.Hq * a.Tq);
  if (l.grid == 0) return;
  attn_prepare_kernel<<<unsigned(l.grid), l.block, 0, s>>>(delta, dout, out, a);
  check_launch("attention_prepare");
}

void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* lse, const float* delta, const float* q,
                        const float* k, const float* v, const int32_t* qpos, const int32_t* kpos, const AttnDims& a,
                        const AttnLaunch& l_dq, const AttnLaunch& l_dkv, cudaStream_t s) {
  if (l_dq.dim_chunks == 4)
    attn_backward_dq_kernel<4><<<grid_of(l_dq), NT, size_t(l_dq.smem_bytes), s>>>(dq, dout, lse, delta, q, k, v, qpos, kpos, a);
  else
    attn_backward_dq_kernel<8><<<grid_of(l_dq), NT, size_t(l_dq.smem_bytes), s>>>(dq, dout, lse, delta, q, k, v, qpos, kpos, a);
  check_launch("attention_backward_dq");
  if (l_dkv.dim_chunks == 4)
    attn_backward_dkv_kernel<4>
        <<<grid_of(l_dkv), NT, size_t(l_dkv.smem_bytes), s>>>(dk, dv, dout, lse, delta, q, k, v, qpos, kpos, a);
  else
    attn_backward_dkv_kernel<8>
        <<<grid_of(l_dkv), NT, size_t(l_dkv.smem_bytes), s>>>(dk, dv, dout, lse, delta, q, k, v, qpos, kpos, a);
  check_launch("attention_backward_dkv");
}

}  // namespace mplan::exec::gpu
