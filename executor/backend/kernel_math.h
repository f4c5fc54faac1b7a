// Per-element and per-row math shared by the CPU backend (cpu/*.cpp) and the CUDA kernels
// (cuda/*.cu): one definition of every formula (activations and their derivatives, norm
// application and gradients, RoPE rotation, AdamW update, cross-entropy gradient, online-softmax
// merge, router order and backward, bf16 rounding), compiled as plain inline functions by the host
// compiler and as __host__ __device__ functions by nvcc. The CPU tests therefore run the exact arithmetic the
// GPU kernels run; only reductions (their order) and exp/log/sin/cos library calls may differ.
// Everything here is branch-free or nearly so, so the CPU loops that call it still vectorise.
#pragma once
#include <cstdint>
#include <cstring>

#include <cmath>

#if defined(__CUDACC__)
#define MPLAN_HD __host__ __device__ __forceinline__
#else
#define MPLAN_HD inline
#endif

namespace mplan::exec::km {

// ---- bit casts (a 4-byte memcpy, which both compilers turn into a register move) ----
template <class To, class From>
MPLAN_HD To bit_cast(From v) {
  static_assert(sizeof(To) == sizeof(From));
  To t;
  memcpy(&t, &v, sizeof t);
  return t;
}
MPLAN_HD float bits_to_float(uint32_t b) { return bit_cast<float>(b); }
MPLAN_HD uint32_t float_to_bits(float f) { return bit_cast<uint32_t>(f); }

// ---- exp ----
// Branch-free fp32 exp (the CPU kernels' inner loops vectorise with it; glibc's expf is a library
// call that blocks vectorisation without -ffast-math). Cody-Waite range reduction x = n ln2 + r and
// a degree-6 polynomial for e^r: relative error below 2 ulp over the whole range; +-inf and NaN pass
// through (NaN losses must stay NaN), underflow flushes to 0. The GPU kernels use the same function,
// so softmax, GELU and SiLU give the same values on both backends.
MPLAN_HD float vexp(float x) {
  const float hi = 88.72283935546875f, lo = -103.972084045410f;
  float xc = x > hi ? hi : x;
  xc = xc < lo ? lo : xc;
  const float log2e = 1.44269504088896341f;
  // round to nearest with the 1.5 * 2^23 trick (vectorises without SSE4.1 roundps)
  const float magic = 12582912.0f;
  float n = (xc * log2e + magic) - magic;
  // r = x - n ln2 in two steps (ln2 split into a short high part and a correction)
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // 2^n in two halves so that n down to -150 (denormal results) stays representable
  int32_t ni = int32_t(n);
  int32_t n1 = ni / 2, n2 = ni - n1;
  float s1 = bits_to_float(uint32_t(n1 + 127) << 23), s2 = bits_to_float(uint32_t(n2 + 127) << 23);
  float y = p * s1 * s2;
  const float inf = bits_to_float(0x7f800000u);
  y = x > hi ? inf : y;
  y = x < lo ? 0.0f : y;
  return x != x ? x : y;
}

// Library exp/log/sqrt/pow/sin/cos in float: std:: on the host; on the device nvcc maps the same std::
// calls to the CUDA math library (expf ...). Both are accurate to a few ulp, not bitwise equal.
MPLAN_HD float lexp(float x) { return std::exp(x); }
MPLAN_HD float llog(float x) { return std::log(x); }
MPLAN_HD float lsqrt(float x) { return std::sqrt(x); }
MPLAN_HD float lpow(float b, float e) { return std::pow(b, e); }
MPLAN_HD void lsincos(float a, float* s, float* c) {
#if defined(__CUDA_ARCH__)
  sincosf(a, s, c);
#else
  *s = std::sin(a);
  *c = std::cos(a);
#endif
}
MPLAN_HD float fmax2(float a, float b) { return a > b ? a : b; }
MPLAN_HD bool is_finite(float x) { return (float_to_bits(x) & 0x7f800000u) != 0x7f800000u; }

// ---- bf16: round to nearest even, as __float2bfloat16_rn (NaN stays a quiet NaN) ----
MPLAN_HD float bf16_round(float x) {
  uint32_t b = float_to_bits(x);
  if ((b & 0x7fffffffu) > 0x7f800000u) return bits_to_float((b | 0x00400000u) & 0xffff0000u);
  b += 0x7fffu + ((b >> 16) & 1u);
  return bits_to_float(b & 0xffff0000u);
}

// ---- activations ----
constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2/pi)
// tanh through one exp; saturates correctly at +-inf
MPLAN_HD float tanh_via_exp(float a) { return 1.0f - 2.0f / (1.0f + vexp(2.0f * a)); }
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))  (GPT-2's tanh approximation)
MPLAN_HD float gelu_forward(float x) { return 0.5f * x * (1.0f + tanh_via_exp(kGeluScale * (x + 0.044715f * x * x * x))); }
MPLAN_HD float gelu_backward(float x, float dout) {
  float cube = 0.044715f * x * x * x;
  float t = tanh_via_exp(kGeluScale * (x + cube));
  float sech2 = 1.0f - t * t;
  float local = 0.5f * (1.0f + t) + x * 0.5f * sech2 * kGeluScale * (1.0f + 3.0f * 0.044715f * x * x);
  return local * dout;
}
MPLAN_HD float sigmoid(float x) { return 1.0f / (1.0f + vexp(-x)); }
// swiglu: out = silu(gate) * up
MPLAN_HD float swiglu_forward(float gate, float up) { return gate / (1.0f + vexp(-gate)) * up; }
MPLAN_HD void swiglu_backward(float gate, float up, float dout, float* dgate, float* dup) {
  float s = sigmoid(gate);
  *dup = dout * gate * s;
  *dgate = dout * up * s * (1.0f + gate * (1.0f - s));
}
MPLAN_HD float sqrelu_forward(float x) {
  float r = x > 0 ? x : 0.0f;
  return r * r;
}
MPLAN_HD float sqrelu_backward(float x, float dout) { return x > 0 ? 2.0f * x * dout : 0.0f; }

// ---- norms over a row of C: the row statistics come from a reduction (order differs per backend);
// the per-element application and gradients are these ----
// 1/sqrt(var + eps) in double, as the CPU reference computes it
MPLAN_HD float rstd_from_var(double var, float eps) {
#if defined(__CUDA_ARCH__)
  return float(1.0 / sqrt(var + double(eps)));
#else
  return float(1.0 / std::sqrt(var + double(eps)));
#endif
}
// layernorm: out = (x - mean) * rstd * w + b
MPLAN_HD float layernorm_apply(float x, float mean, float rstd, float w, float b) { return (x - mean) * rstd * w + b; }
// dx = (w dy - mean(w dy) - xhat mean(w dy xhat)) rstd, with a = mean(w dy), bb = mean(w dy xhat)
MPLAN_HD float layernorm_dx(float x, float dy, float w, float mean, float rstd, float a, float bb) {
  float norm = (x - mean) * rstd;
  return (w * dy - a - norm * bb) * rstd;
}
MPLAN_HD float layernorm_xhat(float x, float mean, float rstd) { return (x - mean) * rstd; }
// rmsnorm: out = x * rstd * w
MPLAN_HD float rmsnorm_apply(float x, float rstd, float w) { return x * rstd * w; }
// c = mean_i(w_i dy_i x_i) rstd^2  (per row); dx_j = rstd (w_j dy_j - x_j c)
MPLAN_HD float rmsnorm_row_coef(double dot_mean, float rstd) { return float(dot_mean) * rstd * rstd; }
MPLAN_HD float rmsnorm_dx(float x, float dy, float w, float rstd, float c) { return rstd * (w * dy - x * c); }

// ---- rotary embedding (rotate-half): pair (i, i + D/2) rotated by pos * base^(-2i/D) ----
MPLAN_HD float rope_inv_freq(int64_t i, int64_t D, float base) { return 1.0f / lpow(base, float(2 * i) / float(D)); }
// sign = +1 forward, -1 backward (the transpose of a rotation is the rotation by the negative angle)
MPLAN_HD void rope_cos_sin(int32_t pos, float inv_freq, float sign, float* c, float* s) {
  float sn, cs;
  lsincos(float(pos) * inv_freq, &sn, &cs);
  *c = cs;
  *s = sign * sn;
}
MPLAN_HD void rope_rotate(float* a, float* b, float c, float s) {
  float x = *a, y = *b;
  *a = x * c - y * s;
  *b = x * s + y * c;
}

// ---- attention ----
// key j is visible to query i when kpos[j] <= qpos[i] (causal by global position)
MPLAN_HD bool attn_visible(int32_t kpos, int32_t qpos) { return kpos <= qpos; }
// Merges a running (out, lse) with a block's partial result (acc / l, lse_b = m + log l):
// out = out * wa + acc * wb; returns the new lse.
MPLAN_HD float lse_merge(float lse_a, float lse_b, float inv_l, float* wa, float* wb) {
  const float mx = fmax2(lse_a, lse_b);
  const float lnew = mx + llog(lexp(lse_a - mx) + lexp(lse_b - mx));
  *wa = lexp(lse_a - lnew);
  *wb = lexp(lse_b - lnew) * inv_l;
  return lnew;
}
// backward: dS = P (dP - delta) scale
MPLAN_HD float attn_dscore(float p, float dp, float delta, float scale) { return p * (dp - delta) * scale; }

// ---- softmax / cross-entropy / router ----
// dlogit = softmax * dloss (the target column then subtracts dloss)
MPLAN_HD float xent_grad(float e, float inv_sumexp, float dloss) { return e * inv_sumexp * dloss; }
// softmax backward of one element: p (dp - sum_j p_j dp_j)
MPLAN_HD float softmax_backward(float p, float dp, float dot) { return p * (dp - dot); }
// top-k order of the router: larger logit first, ties to the lower expert index
MPLAN_HD bool topk_before(float la, int32_t a, float lb, int32_t b) { return la > lb || (la == lb && a < b); }

// Router backward of token n: dlogits (N, E) from the gradient of its k top-k weights (a softmax over
// the chosen logits, idx their experts; dweights null when no weight had a gradient) and of its full
// probabilities (N, E; dprobs null when no auxiliary loss used them).
MPLAN_HD void moe_route_backward_row(float* dlogits, const float* dweights, const float* dprobs, const float* probs,
                                     const int32_t* idx, const float* weights, int64_t n, int64_t E, int64_t k) {
  float* dl = dlogits + n * E;
  for (int64_t e = 0; e < E; ++e) dl[e] = 0;
  if (dweights) {
    const float* w = weights + n * k;
    const float* dw = dweights + n * k;
    float s = 0;
    for (int64_t j = 0; j < k; ++j) s += w[j] * dw[j];
    for (int64_t j = 0; j < k; ++j) dl[idx[n * k + j]] += softmax_backward(w[j], dw[j], s);
  }
  if (dprobs) {
    const float* p = probs + n * E;
    const float* dp = dprobs + n * E;
    float s = 0;
    for (int64_t e = 0; e < E; ++e) s += p[e] * dp[e];
    for (int64_t e = 0; e < E; ++e) dl[e] += softmax_backward(p[e], dp[e], s);
  }
}

// ---- AdamW (torch.optim.AdamW: decoupled weight decay, bias-corrected moments) ----
struct AdamWConsts {
  float decay = 1, step_size = 0, inv_bc2_sqrt = 1, b1 = 0.9f, b2 = 0.95f, c1 = 0.1f, c2 = 0.05f, eps = 1e-8f;
};
inline AdamWConsts adamw_consts(float lr, float beta1, float beta2, float eps, float weight_decay, int step) {
  AdamWConsts k;
  const float bc1 = 1.0f - lpow(beta1, float(step));
  const float bc2 = 1.0f - lpow(beta2, float(step));
  k.step_size = lr / bc1;
  k.inv_bc2_sqrt = 1.0f / lsqrt(bc2);
  k.decay = 1.0f - lr * weight_decay;
  k.b1 = beta1, k.b2 = beta2, k.c1 = 1.0f - beta1, k.c2 = 1.0f - beta2, k.eps = eps;
  return k;
}
// one element: p (fp32 master), m, v updated in place
MPLAN_HD void adamw_update(float* p, float g, float* m, float* v, const AdamWConsts& k) {
  const float mi = k.b1 * *m + k.c1 * g;
  const float vi = k.b2 * *v + k.c2 * g * g;
  *m = mi;
  *v = vi;
  *p = *p * k.decay - k.step_size * mi / (lsqrt(vi) * k.inv_bc2_sqrt + k.eps);
}

// ---- parameter initialisation: counter-based normal values (CPU init and the GPU init kernel) ----
MPLAN_HD uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
// Element gi of a normal(0, stddev) tensor whose name hashes to name_key (fnv1a of the logical
// name, computed once per tensor): Box-Muller in double on a counter-based hash; elements 2i and
// 2i+1 share one pair of uniforms. The host (glibc) and the device (CUDA libm, <= 2 ulp in double)
// may differ in the last bit of the double; after rounding to float they agree except where the
// double lies within a few ulp of a float rounding boundary.
MPLAN_HD float init_normal(uint64_t seed, uint64_t name_key, int64_t gi, float stddev) {
  const uint64_t h = splitmix64(seed ^ splitmix64(name_key ^ splitmix64(uint64_t(gi / 2))));
  const double u1 = (double(h >> 11) + 0.5) * (1.0 / 9007199254740992.0);
  const double u2 = double(splitmix64(h) >> 11) * (1.0 / 9007199254740992.0);
  const double a = 6.283185307179586 * u2;
#if defined(__CUDA_ARCH__)
  const double r = sqrt(-2.0 * log(u1));
  return float(double(stddev) * r * ((gi % 2) ? sin(a) : cos(a)));
#else
  const double r = std::sqrt(-2.0 * std::log(u1));
  return float(double(stddev) * r * ((gi % 2) ? std::sin(a) : std::cos(a)));
#endif
}

}  // namespace mplan::exec::km
