// CPU kernels: embeddings, vocabulary-parallel softmax cross-entropy, MoE routing and row
// permutation, and the AdamW update.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

#include "executor/backend/cpu/cpu_backend.h"
#include "executor/backend/kernel_math.h"

namespace mplan::exec {

// out (N, C) = wte[tok - vstart] when vstart <= tok < vstart + rows, else 0
void CpuBackend::embedding_forward(float* out, const int32_t* tokens, const float* wte, int64_t N, int64_t C, int64_t vstart,
                                   int64_t rows) {
  for (int64_t n = 0; n < N; ++n) {
    int64_t r = int64_t(tokens[n]) - vstart;
    float* o = out + n * C;
    if (r >= 0 && r < rows)
      std::memcpy(o, wte + r * C, size_t(C) * sizeof(float));
    else
      std::memset(o, 0, size_t(C) * sizeof(float));
  }
}

void CpuBackend::embedding_backward(float* dwte, const float* dout, const int32_t* tokens, int64_t N, int64_t C, int64_t vstart,
                                    int64_t rows) {
  for (int64_t n = 0; n < N; ++n) {
    int64_t r = int64_t(tokens[n]) - vstart;
    if (r < 0 || r >= rows) continue;
    float* d = dwte + r * C;
    const float* g = dout + n * C;
    for (int64_t c = 0; c < C; ++c) d[c] += g[c];
  }
}

void CpuBackend::position_forward(float* out, const float* wpe, const int32_t* pos, int64_t N, int64_t C) {
  for (int64_t n = 0; n < N; ++n) {
    const float* p = wpe + int64_t(pos[n]) * C;
    float* o = out + n * C;
    for (int64_t c = 0; c < C; ++c) o[c] += p[c];
  }
}

void CpuBackend::position_backward(float* dwpe, const float* dout, const int32_t* pos, int64_t N, int64_t C) {
  for (int64_t n = 0; n < N; ++n) {
    float* d = dwpe + int64_t(pos[n]) * C;
    const float* g = dout + n * C;
    for (int64_t c = 0; c < C; ++c) d[c] += g[c];
  }
}

// ---------------------------------------------------------------------------------------------
// cross-entropy over a vocabulary shard: logits (N, V) with `valid` real columns
void CpuBackend::xent_rowmax(float* rowmax, const float* logits, int64_t N, int64_t V, int64_t valid) {
  for (int64_t n = 0; n < N; ++n) {
    const float* l = logits + n * V;
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t c = 0; c < valid; ++c) m = l[c] > m ? l[c] : m;
    rowmax[n] = m;
  }
}

void CpuBackend::xent_sumexp_target(float* sumexp, float* tlogit, float* logits, const float* gmax, const int32_t* targets,
                                    int64_t N, int64_t V, int64_t valid, int64_t vstart) {
  for (int64_t n = 0; n < N; ++n) {
    float* l = logits + n * V;
    const float m = gmax[n];
    int64_t t = int64_t(targets[n]) - vstart;
    tlogit[n] = (t >= 0 && t < valid) ? l[t] : 0.0f;
    for (int64_t c = 0; c < valid; ++c) l[c] = km::vexp(l[c] - m);
    double s = 0;
    for (int64_t c = 0; c < valid; ++c) s += l[c];
    sumexp[n] = float(s);
  }
}

// in place: dlogits (N, V) = (softmax - onehot(target)) * dloss[n]; padded columns get 0
void CpuBackend::xent_backward(float* logits, const float* gmax, const float* gsumexp, const int32_t* targets, const float* dloss,
                               int64_t N, int64_t V, int64_t valid, int64_t vstart) {
  for (int64_t n = 0; n < N; ++n) {
    float* l = logits + n * V;
    (void)gmax;  // the forward already subtracted it
    const float inv = 1.0f / gsumexp[n], d = dloss[n];
    const int64_t t = int64_t(targets[n]) - vstart;
    for (int64_t c = 0; c < valid; ++c) l[c] = km::xent_grad(l[c], inv, d);
    if (t >= 0 && t < valid) l[t] -= d;
    for (int64_t c = valid; c < V; ++c) l[c] = 0;
  }
}

// ---------------------------------------------------------------------------------------------
// MoE routing: probs (N, E) = softmax(logits); idx, weights (N, k) = top-k logits (ties: lower
// expert first), weights = softmax over the chosen logits
void CpuBackend::moe_route_forward(float* probs, int32_t* idx, float* weights, const float* logits, int64_t N, int64_t E,
                                   int64_t k) {
  std::vector<int32_t> order(static_cast<size_t>(E));
  for (int64_t n = 0; n < N; ++n) {
    const float* l = logits + n * E;
    float m = l[0];
    for (int64_t e = 1; e < E; ++e) m = std::max(m, l[e]);
    double s = 0;
    for (int64_t e = 0; e < E; ++e) s += std::exp(l[e] - m);
    for (int64_t e = 0; e < E; ++e) probs[n * E + e] = float(std::exp(l[e] - m) / s);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](int32_t a, int32_t b) { return km::topk_before(l[a], a, l[b], b); });
    float mk = l[order[0]];
    double sk = 0;
    for (int64_t j = 0; j < k; ++j) sk += std::exp(l[order[size_t(j)]] - mk);
    for (int64_t j = 0; j < k; ++j) {
      idx[n * k + j] = order[size_t(j)];
      weights[n * k + j] = float(std::exp(l[order[size_t(j)]] - mk) / sk);
    }
  }
}

void CpuBackend::moe_route_backward(float* dlogits, const float* dweights, const float* dprobs, const float* probs,
                                    const int32_t* idx, const float* weights, int64_t N, int64_t E, int64_t k) {
  for (int64_t n = 0; n < N; ++n) km::moe_route_backward_row(dlogits, dweights, dprobs, probs, idx, weights, n, E, k);
}

void CpuBackend::gather_rows(float* dst, const float* src, const int32_t* rows, int64_t n, int64_t C) {
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * C, src + int64_t(rows[i]) * C, size_t(C) * sizeof(float));
}

void CpuBackend::scatter_add_rows(float* dst, const float* src, const int32_t* rows, const float* w, int64_t n, int64_t C) {
  for (int64_t i = 0; i < n; ++i) {
    float* d = dst + int64_t(rows[i]) * C;
    const float* s = src + i * C;
    const float wi = w ? w[i] : 1.0f;
    for (int64_t c = 0; c < C; ++c) d[c] += wi * s[c];
  }
}

void CpuBackend::scale_rows(float* x, const float* s, int64_t n, int64_t C) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < C; ++c) x[i * C + c] *= s[i];
}

void CpuBackend::row_dot(float* out, const float* a, const float* b, int64_t n, int64_t C) {
  for (int64_t i = 0; i < n; ++i) {
    float s = 0;
    for (int64_t c = 0; c < C; ++c) s += a[i * C + c] * b[i * C + c];
    out[i] = s;
  }
}

// ---------------------------------------------------------------------------------------------
// AdamW exactly as torch.optim.AdamW (decoupled weight decay, bias-corrected moments)
void CpuBackend::adamw(float* param, const float* grad, float* m, float* v, int64_t n, const AdamWArgs& a) {
  const km::AdamWConsts k = km::adamw_consts(a.lr, a.beta1, a.beta2, a.eps, a.weight_decay, a.step);
  float* __restrict p = param;
  const float* __restrict g = grad;
  float* __restrict mm = m;
  float* __restrict vv = v;
  for (int64_t i = 0; i < n; ++i) km::adamw_update(&p[i], g[i], &mm[i], &vv[i], k);
}

}  // namespace mplan::exec
