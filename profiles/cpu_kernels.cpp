// fp32 CPU kernels for the profiler (see cpu_kernels.h).
#include "profiles/cpu_kernels.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace mplan::profiles::cpu {

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias, int64_t N,
                       int64_t C) {
  const float eps = 1e-5f;
  for (int64_t i = 0; i < N; ++i) {
    const float* x = inp + i * C;
    float m = 0;
    for (int64_t c = 0; c < C; ++c) m += x[c];
    m /= float(C);
    float v = 0;
    for (int64_t c = 0; c < C; ++c) v += (x[c] - m) * (x[c] - m);
    float s = 1.0f / std::sqrt(v / float(C) + eps);
    float* o = out + i * C;
    for (int64_t c = 0; c < C; ++c) o[c] = (x[c] - m) * s * weight[c] + bias[c];
    mean[i] = m;
    rstd[i] = s;
  }
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp, const float* weight,
                        const float* mean, const float* rstd, int64_t N, int64_t C) {
  for (int64_t i = 0; i < N; ++i) {
    const float* dy = dout + i * C;
    const float* x = inp + i * C;
    float* dx = dinp + i * C;
    float m = mean[i], s = rstd[i];
    float dnorm_mean = 0, dnorm_norm_mean = 0;
    for (int64_t c = 0; c < C; ++c) {
      float norm = (x[c] - m) * s;
      float dnorm = weight[c] * dy[c];
      dnorm_mean += dnorm;
      dnorm_norm_mean += dnorm * norm;
    }
    dnorm_mean /= float(C);
    dnorm_norm_mean /= float(C);
    for (int64_t c = 0; c < C; ++c) {
      float norm = (x[c] - m) * s;
      float dnorm = weight[c] * dy[c];
      dbias[c] += dy[c];
      dweight[c] += norm * dy[c];
      dx[c] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
    }
  }
}

namespace {
constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2/pi)
}

void gelu_forward(float* out, const float* inp, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float x = inp[i];
    out[i] = 0.5f * x * (1.0f + std::tanh(kGeluScale * (x + 0.044715f * x * x * x)));
  }
}

void gelu_backward(float* dinp, const float* inp, const float* dout, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float x = inp[i];
    float u = kGeluScale * (x + 0.044715f * x * x * x);
    float t = std::tanh(u);
    float sech2 = 1.0f - t * t;
    float local = 0.5f * (1.0f + t) + 0.5f * x * sech2 * kGeluScale * (1.0f + 3.0f * 0.044715f * x * x);
    dinp[i] += local * dout[i];
  }
}

void residual_forward(float* out, const float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

namespace {
void rope_rotate(float* x, int64_t T, int64_t H, int64_t D, float sign) {
  const int64_t half = D / 2;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < half; ++j) {
      float freq = std::pow(10000.0f, -2.0f * float(j) / float(D));
      float ang = sign * float(t) * freq, c = std::cos(ang), s = std::sin(ang);
      for (int64_t h = 0; h < H; ++h) {
        float* p = x + (t * H + h) * D;
        float a = p[j], b = p[j + half];
        p[j] = a * c - b * s;
        p[j + half] = a * s + b * c;
      }
    }
}
}  // namespace

void rope_forward(float* x, int64_t T, int64_t H, int64_t D) { rope_rotate(x, T, H, D, 1.0f); }
void rope_backward(float* dx, int64_t T, int64_t H, int64_t D) { rope_rotate(dx, T, H, D, -1.0f); }

void attention_forward(float* out, float* lse, const float* q, const float* k, const float* v, float* scores, int64_t B,
                       int64_t H, int64_t T, int64_t D) {
  const float scale = 1.0f / std::sqrt(float(D));
  for (int64_t bh = 0; bh < B * H; ++bh) {
    const float* Q = q + bh * T * D;
    const float* K = k + bh * T * D;
    const float* V = v + bh * T * D;
    // scores (T, T) = scale * Q K^T
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(T), int(T), int(D), scale, Q, int(D), K, int(D), 0.0f, scores,
                int(T));
    for (int64_t i = 0; i < T; ++i) {
      float* row = scores + i * T;
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j <= i; ++j) mx = std::max(mx, row[j]);
      float sum = 0;
      for (int64_t j = 0; j <= i; ++j) sum += (row[j] = std::exp(row[j] - mx));
      float inv = 1.0f / sum;
      for (int64_t j = 0; j <= i; ++j) row[j] *= inv;
      for (int64_t j = i + 1; j < T; ++j) row[j] = 0;
      lse[bh * T + i] = mx + std::log(sum);
    }
    // out (T, D) = P V
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(T), int(D), int(T), 1.0f, scores, int(T), V, int(D), 0.0f,
                out + bh * T * D, int(D));
  }
}

void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* q, const float* k, const float* v,
                        const float* out, const float* lse, float* p, float* dp, float* rowdot, int64_t B, int64_t H, int64_t T,
                        int64_t D) {
  const float scale = 1.0f / std::sqrt(float(D));
  for (int64_t bh = 0; bh < B * H; ++bh) {
    const int64_t o = bh * T * D;
    // recompute P from the saved log-sum-exp
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(T), int(T), int(D), scale, q + o, int(D), k + o, int(D), 0.0f, p,
                int(T));
    for (int64_t i = 0; i < T; ++i) {
      float* row = p + i * T;
      for (int64_t j = 0; j <= i; ++j) row[j] = std::exp(row[j] - lse[bh * T + i]);
      for (int64_t j = i + 1; j < T; ++j) row[j] = 0;
      float s = 0;
      for (int64_t d = 0; d < D; ++d) s += dout[o + i * D + d] * out[o + i * D + d];
      rowdot[i] = s;
    }
    // dV (T, D) = P^T dO ; dP (T, T) = dO V^T
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, int(T), int(D), int(T), 1.0f, p, int(T), dout + o, int(D), 0.0f, dv + o,
                int(D));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(T), int(T), int(D), 1.0f, dout + o, int(D), v + o, int(D), 0.0f, dp,
                int(T));
    // dS = P * (dP - rowdot), scaled
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = 0; j < T; ++j) dp[i * T + j] = j <= i ? p[i * T + j] * (dp[i * T + j] - rowdot[i]) * scale : 0.0f;
    // dQ = dS K ; dK = dS^T Q
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(T), int(D), int(T), 1.0f, dp, int(T), k + o, int(D), 0.0f, dq + o,
                int(D));
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, int(T), int(D), int(T), 1.0f, dp, int(T), q + o, int(D), 0.0f, dk + o,
                int(D));
  }
}

void crossentropy_forward(float* losses, const float* logits, const int* targets, int64_t N, int64_t V) {
  for (int64_t i = 0; i < N; ++i) {
    const float* row = logits + i * V;
    float mx = *std::max_element(row, row + V);
    double sum = 0;
    for (int64_t j = 0; j < V; ++j) sum += std::exp(row[j] - mx);
    losses[i] = float(std::log(sum) + mx - row[targets[i]]);
  }
}

void crossentropy_backward(float* logits, const int* targets, float dloss, int64_t N, int64_t V) {
  for (int64_t i = 0; i < N; ++i) {
    float* row = logits + i * V;
    float mx = *std::max_element(row, row + V);
    float sum = 0;
    for (int64_t j = 0; j < V; ++j) sum += (row[j] = std::exp(row[j] - mx));
    float inv = dloss / sum;
    for (int64_t j = 0; j < V; ++j) row[j] *= inv;
    row[targets[i]] -= dloss;
  }
}

void embedding_forward(float* out, const int* tokens, const float* wte, int64_t N, int64_t C) {
  for (int64_t i = 0; i < N; ++i) std::copy(wte + int64_t(tokens[i]) * C, wte + int64_t(tokens[i] + 1) * C, out + i * C);
}

void embedding_backward(float* dwte, const int* tokens, const float* dout, int64_t N, int64_t C) {
  for (int64_t i = 0; i < N; ++i) {
    float* d = dwte + int64_t(tokens[i]) * C;
    for (int64_t c = 0; c < C; ++c) d[c] += dout[i * C + c];
  }
}

void adamw_update(float* params, const float* grads, float* m, float* v, int64_t n, float lr, float beta1, float beta2, float eps,
                  float weight_decay, int step) {
  float c1 = 1.0f - std::pow(beta1, float(step)), c2 = 1.0f - std::pow(beta2, float(step));
  for (int64_t i = 0; i < n; ++i) {
    float g = grads[i];
    m[i] = beta1 * m[i] + (1 - beta1) * g;
    v[i] = beta2 * v[i] + (1 - beta2) * g * g;
    float mh = m[i] / c1, vh = v[i] / c2;
    params[i] -= lr * (mh / (std::sqrt(vh) + eps) + weight_decay * params[i]);
  }
}

}  // namespace mplan::profiles::cpu
