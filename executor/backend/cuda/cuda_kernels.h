// Host launchers of the CUDA backend's kernels (cuda_kernels.cu: element-wise, reductions, norms,
// RoPE, activations, embeddings, cross-entropy, MoE routing, AdamW, bf16 conversion;
// cuda_attention.cu: flash attention). fp32 storage, fp32 math (per-element formulas from
// kernel_math.h); every launcher only enqueues on `s`. All index arrays passed here are device
// (or managed) memory; the backend stages host index arrays before calling.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "executor/backend/cuda/launch_config.h"
#include "executor/backend/kernel_math.h"

namespace mplan::exec::gpu {

// ---- element-wise ----
void fill_zero(float* x, int64_t n, cudaStream_t s);
void copy(float* dst, const float* src, int64_t n, cudaStream_t s);  // dst == src or disjoint
void add(float* out, const float* a, const float* b, int64_t n, cudaStream_t s);
void accumulate(float* dst, const float* src, int64_t n, cudaStream_t s);
void scale(float* x, float v, int64_t n, cudaStream_t s);
void to_bf16(__nv_bfloat16* dst, const float* src, int64_t n, cudaStream_t s);
// dst (rows, ld_dst) row-major: its first `cols` columns = src (rows, cols) row-major in bf16, the
// rest zero
void to_bf16_rows(__nv_bfloat16* dst, int64_t ld_dst, const float* src, int64_t rows, int64_t cols, cudaStream_t s);
// dst (rows, cols) of row stride ld_dst = src (rows, cols) of row stride ld_src (disjoint)
void copy_rows(float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows, int64_t cols, cudaStream_t s);
// p (rows, cols) = km::init_normal(seed, name_key, global_rows[i] * full_cols + col_begin + j, stddev)
// (or `constant` when !normal); rows whose global row is < 0 (padding) are 0
void init_param(float* p, const int64_t* global_rows, int64_t rows, int64_t cols, int64_t full_cols, int64_t col_begin,
                uint64_t seed, uint64_t name_key, bool normal, float stddev, float constant, cudaStream_t s);

// ---- reductions: result[0] (device double) = sum of squares / count of non-finite values;
// partials holds reduce_launch(n).grid doubles ----
void sum_squares(double* result, double* partials, const float* x, int64_t n, cudaStream_t s);
void count_nonfinite(double* result, double* partials, const float* x, int64_t n, cudaStream_t s);

// ---- bias: out (M, N) += bias (N); dbias (N) += column sums of dout (M, N) through `scratch`
// (column_reduce_launch(M, N).scratch_elems() floats) ----
void add_bias(float* out, const float* bias, int64_t M, int64_t N, cudaStream_t s);
void bias_backward(float* dbias, float* scratch, const float* dout, int64_t M, int64_t N, cudaStream_t s);

// ---- norms over rows of C ----
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w, const float* b, int64_t N,
                       int64_t C, float eps, cudaStream_t s);
void layernorm_backward(float* dinp, float* dw, float* db, float* scratch, const float* dout, const float* inp, const float* w,
                        const float* mean, const float* rstd, int64_t N, int64_t C, bool accumulate, cudaStream_t s);
void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* w, int64_t N, int64_t C, float eps, cudaStream_t s);
void rmsnorm_backward(float* dinp, float* dw, float* scratch, const float* dout, const float* inp, const float* w,
                      const float* rstd, int64_t N, int64_t C, bool accumulate, cudaStream_t s);

// ---- RoPE in place on x (N, H, D); sign +1 forward, -1 backward ----
void rope(float* x, const int32_t* pos, int64_t N, int64_t H, int64_t D, float base, float sign, cudaStream_t s);

// ---- activations (kind: 0 gelu, 1 swiglu, 2 squared relu) ----
void act_forward(int kind, float* out, const float* inp, int64_t N, int64_t F, cudaStream_t s);
void act_backward(int kind, float* dinp, const float* dout, const float* inp, int64_t N, int64_t F, cudaStream_t s);

// ---- rows ----
// out (N, C) = wte[tok - vstart] for owned tokens, else 0
void embedding_forward(float* out, const int32_t* tokens, const float* wte, int64_t N, int64_t C, int64_t vstart, int64_t rows,
                       cudaStream_t s);
// out (N, C) += wpe[pos]
void position_forward(float* out, const float* wpe, const int32_t* pos, int64_t N, int64_t C, cudaStream_t s);
// Deterministic scatter-add in CSR form: for u < n_dst, dst[dst_rows[u]] += sum over e in
// [offsets[u], offsets[u+1]) of (w ? w[src_idx[e]] : 1) * src[src_idx[e]], in e order (the CPU's order).
void scatter_add_csr(float* dst, const float* src, const int32_t* dst_rows, const int32_t* offsets, const int32_t* src_idx,
                     const float* w, int64_t n_dst, int64_t C, cudaStream_t s);
void gather_rows(float* dst, const float* src, const int32_t* rows, int64_t n, int64_t C, cudaStream_t s);
void scale_rows(float* x, const float* sc, int64_t n, int64_t C, cudaStream_t s);
void row_dot(float* out, const float* a, const float* b, int64_t n, int64_t C, cudaStream_t s);

// ---- vocabulary-parallel cross-entropy (see Backend) ----
void xent_rowmax(float* rowmax, const float* logits, int64_t N, int64_t V, int64_t valid, cudaStream_t s);
void xent_sumexp_target(float* sumexp, float* tlogit, float* logits, const float* gmax, const int32_t* targets, int64_t N,
                        int64_t V, int64_t valid, int64_t vstart, cudaStream_t s);
void xent_backward(float* logits, const float* gsumexp, const int32_t* targets, const float* dloss, int64_t N, int64_t V,
                   int64_t valid, int64_t vstart, cudaStream_t s);

// ---- MoE router ----
void moe_route_forward(float* probs, int32_t* idx, float* weights, const float* logits, int64_t N, int64_t E, int64_t k,
                       cudaStream_t s);
void moe_route_backward(float* dlogits, const float* dweights, const float* dprobs, const float* probs, const int32_t* idx,
                        const float* weights, int64_t N, int64_t E, int64_t k, cudaStream_t s);

// ---- AdamW: fp32 master weights, moments updated in place ----
void adamw(float* param, const float* grad, float* m, float* v, int64_t n, const km::AdamWConsts& c, cudaStream_t s);

// ---- flash attention (cuda_attention.cu) ----
struct AttnDims {
  int64_t B = 0, Tq = 0, Tk = 0, Hq = 0, Hkv = 0, D = 0, Dv = 0;
  float scale = 1.0f;
};
// Raises every attention kernel's dynamic shared-memory limit to what the device's opt-in limit per
// block leaves after the kernel's static shared memory (once per device). Returns the dynamic bytes
// every attention kernel may then be launched with (the `max_smem_bytes` of attention_launch), or -1
// on error (printed).
int64_t attention_set_smem_limit(int64_t optin_bytes);
void attention_forward(float* out, float* lse, const float* q, const float* k, const float* v, const int32_t* qpos,
                       const int32_t* kpos, const AttnDims& a, bool merge, const AttnLaunch& l, cudaStream_t s);
void attention_prepare(float* delta, const float* dout, const float* out, const AttnDims& a, cudaStream_t s);
void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* lse, const float* delta, const float* q,
                        const float* k, const float* v, const int32_t* qpos, const int32_t* kpos, const AttnDims& a,
                        const AttnLaunch& l_dq, const AttnLaunch& l_dkv, cudaStream_t s);

}  // namespace mplan::exec::gpu
