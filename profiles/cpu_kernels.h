// Simple, correct fp32 CPU kernels the profiler times for the non-GEMM ops of a transformer layer
// (llm.c style: <layer>_forward / <layer>_backward, shapes in comments). GEMMs inside attention use
// OpenBLAS cblas_sgemm. These stand in for the executor's CPU backend until it provides its own.
#pragma once
#include <cstdint>

namespace mplan::profiles::cpu {

// out = inp (N, C) normalised per row, * weight + bias; mean, rstd (N) saved for backward.
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias, int64_t N,
                       int64_t C);
// dinp, dweight, dbias accumulate.
void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp, const float* weight,
                        const float* mean, const float* rstd, int64_t N, int64_t C);

// tanh-approximate GELU, elementwise over n.
void gelu_forward(float* out, const float* inp, int64_t n);
void gelu_backward(float* dinp, const float* inp, const float* dout, int64_t n);

// out = a + b (n); backward of a residual is the identity on both branches (a copy).
void residual_forward(float* out, const float* a, const float* b, int64_t n);

// Rotary embedding in place on x (T, H, D) with positions 0..T-1; backward rotates by -angle.
void rope_forward(float* x, int64_t T, int64_t H, int64_t D);
void rope_backward(float* dx, int64_t T, int64_t H, int64_t D);

// Causal scaled-dot-product attention per (batch, head): q, k, v, out (B, H, T, D); lse (B, H, T)
// the log-sum-exp of each score row for backward; scores (T, T) scratch.
void attention_forward(float* out, float* lse, const float* q, const float* k, const float* v, float* scores, int64_t B,
                       int64_t H, int64_t T, int64_t D);
// Recomputes the probabilities from lse (flash-attention style); dq, dk, dv overwritten;
// scratch: two (T, T) buffers and one (T) buffer.
void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* q, const float* k, const float* v,
                        const float* out, const float* lse, float* p, float* dp, float* rowdot, int64_t B, int64_t H, int64_t T,
                        int64_t D);

// Softmax cross-entropy over logits (N, V) with integer targets; losses (N). Backward writes
// dlogits = (softmax - onehot) * dloss in place of the logits.
void crossentropy_forward(float* losses, const float* logits, const int* targets, int64_t N, int64_t V);
void crossentropy_backward(float* logits_to_dlogits, const int* targets, float dloss, int64_t N, int64_t V);

// out (N, C) = wte[tokens]; backward adds dout rows into dwte.
void embedding_forward(float* out, const int* tokens, const float* wte, int64_t N, int64_t C);
void embedding_backward(float* dwte, const int* tokens, const float* dout, int64_t N, int64_t C);

// One AdamW step over n parameters (fp32 params, grads and moments).
void adamw_update(float* params, const float* grads, float* m, float* v, int64_t n, float lr, float beta1, float beta2, float eps,
                  float weight_decay, int step);

}  // namespace mplan::profiles::cpu
