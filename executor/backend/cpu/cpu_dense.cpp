// CPU kernels: elementwise helpers, GEMMs (OpenBLAS), LayerNorm/RMSNorm, RoPE and activations.
#include <cblas.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "executor/backend/blas_config.h"
#include "executor/backend/cpu/cpu_backend.h"
#include "executor/backend/cpu/vec_math.h"

namespace mplan::exec {

std::string CpuBackend::describe() const { return "cpu fp32, " + blas_description(); }

void CpuBackend::zero(float* x, int64_t n) { std::memset(x, 0, size_t(n) * sizeof(float)); }
void CpuBackend::copy(float* dst, const float* src, int64_t n) {
  if (dst != src) std::memmove(dst, src, size_t(n) * sizeof(float));
}
void CpuBackend::add(float* out, const float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}
void CpuBackend::accumulate(float* dst, const float* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
}
void CpuBackend::scale(float* x, float s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}
double CpuBackend::sum_squares(const float* x, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += double(x[i]) * double(x[i]);
  return s;
}
bool CpuBackend::all_finite(const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) return false;
  return true;
}

void CpuBackend::add_bias(float* out, const float* bias, int64_t M, int64_t N) {
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) out[m * N + n] += bias[n];
}
void CpuBackend::bias_backward(float* dbias, const float* dout, int64_t M, int64_t N) {
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) dbias[n] += dout[m * N + n];
}

// ---------------------------------------------------------------------------------------------
// matmul: out (M, N) = inp (M, K) @ weight (N, K)^T + bias (N)
void CpuBackend::matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int64_t M,
                                int64_t K, int64_t N, bool accumulate) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    if (!accumulate) zero(out, M * N);
  } else {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(M), int(N), int(K), 1.0f, inp, int(K), weight, int(K),
                accumulate ? 1.0f : 0.0f, out, int(N));
  }
  if (bias) {
    for (int64_t m = 0; m < M; ++m) {
      float* o = out + m * N;
      for (int64_t n = 0; n < N; ++n) o[n] += bias[n];
    }
  }
}

// dinp (M, K) (+)= dout (M, N) @ weight (N, K)
void CpuBackend::matmul_backward_input(float* dinp, const float* dout, const float* weight, int64_t M, int64_t K,
                                       int64_t N, bool accumulate) {
  if (M == 0 || K == 0) return;
  if (N == 0) {
    if (!accumulate) zero(dinp, M * K);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(M), int(K), int(N), 1.0f, dout, int(N), weight, int(K),
              accumulate ? 1.0f : 0.0f, dinp, int(K));
}

// dweight (N, K) += dout (M, N)^T @ inp (M, K); dbias (N) += sum_m dout[m]
void CpuBackend::matmul_backward_weight(float* dweight, float* dbias, const float* dout, const float* inp, int64_t M,
                                        int64_t K, int64_t N) {
  if (M == 0 || N == 0) return;
  if (K > 0)
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, int(N), int(K), int(M), 1.0f, dout, int(N), inp, int(K), 1.0f,
                dweight, int(K));
  if (dbias) {
    for (int64_t m = 0; m < M; ++m) {
      const float* d = dout + m * N;
      for (int64_t n = 0; n < N; ++n) dbias[n] += d[n];
    }
  }
}

// ---------------------------------------------------------------------------------------------
// layernorm: inp (N, C) -> out (N, C), mean (N), rstd (N)
void CpuBackend::layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w,
                                   const float* b, int64_t N, int64_t C, float eps) {
  for (int64_t n = 0; n < N; ++n) {
    const float* x = inp + n * C;
    double m = 0;
    for (int64_t i = 0; i < C; ++i) m += x[i];
    m /= double(C);
    double v = 0;
    for (int64_t i = 0; i < C; ++i) v += (x[i] - m) * (x[i] - m);
    v /= double(C);
    float s = float(1.0 / std::sqrt(v + double(eps)));
    float* o = out + n * C;
    float mf = float(m);
    for (int64_t i = 0; i < C; ++i) o[i] = (x[i] - mf) * s * w[i] + (b ? b[i] : 0.0f);
    mean[n] = mf;
    rstd[n] = s;
  }
}

// dinp (N, C) (+)= d/dx; dw (C), db (C) += ...
void CpuBackend::layernorm_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                                    const float* w, const float* mean, const float* rstd, int64_t N, int64_t C,
                                    bool accumulate) {
  for (int64_t n = 0; n < N; ++n) {
    const float* x = inp + n * C;
    const float* d = dout + n * C;
    float m = mean[n], s = rstd[n];
    double dnorm_mean = 0, dnorm_norm_mean = 0;
    for (int64_t i = 0; i < C; ++i) {
      float norm = (x[i] - m) * s;
      float dnorm = w[i] * d[i];
      dnorm_mean += dnorm;
      dnorm_norm_mean += double(dnorm) * norm;
    }
    float a = float(dnorm_mean / double(C)), bb = float(dnorm_norm_mean / double(C));
    float* di = dinp + n * C;
    for (int64_t i = 0; i < C; ++i) {
      float norm = (x[i] - m) * s;
      float dnorm = w[i] * d[i];
      if (db) db[i] += d[i];
      if (dw) dw[i] += norm * d[i];
      float g = (dnorm - a - norm * bb) * s;
      di[i] = accumulate ? di[i] + g : g;
    }
  }
}

// rmsnorm: out = x * rstd * w, rstd = 1/sqrt(mean(x^2) + eps)
void CpuBackend::rmsnorm_forward(float* out, float* rstd, const float* inp, const float* w, int64_t N, int64_t C,
                                 float eps) {
  for (int64_t n = 0; n < N; ++n) {
    const float* x = inp + n * C;
    double ss = 0;
    for (int64_t i = 0; i < C; ++i) ss += double(x[i]) * x[i];
    float s = float(1.0 / std::sqrt(ss / double(C) + double(eps)));
    float* o = out + n * C;
    for (int64_t i = 0; i < C; ++i) o[i] = x[i] * s * w[i];
    rstd[n] = s;
  }
}

// dx_j = r * (w_j dy_j - x_j r^2 mean_i(w_i dy_i x_i)); dw_i += dy_i x_i r
void CpuBackend::rmsnorm_backward(float* dinp, float* dw, const float* dout, const float* inp, const float* w,
                                  const float* rstd, int64_t N, int64_t C, bool accumulate) {
  for (int64_t n = 0; n < N; ++n) {
    const float* x = inp + n * C;
    const float* d = dout + n * C;
    float s = rstd[n];
    double dot = 0;
    for (int64_t i = 0; i < C; ++i) dot += double(w[i]) * d[i] * x[i];
    float c = float(dot / double(C)) * s * s;
    float* di = dinp + n * C;
    for (int64_t i = 0; i < C; ++i) {
      if (dw) dw[i] += d[i] * x[i] * s;
      float g = s * (w[i] * d[i] - x[i] * c);
      di[i] = accumulate ? di[i] + g : g;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// rope (rotate-half): x (N, H, D); pair (i, i + D/2) rotated by pos * base^(-2i/D)
namespace {
void rope_apply(float* x, const int32_t* pos, int64_t N, int64_t H, int64_t D, float base, float sign) {
  const int64_t half = D / 2;
  std::vector<float> inv(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) inv[size_t(i)] = 1.0f / std::pow(base, float(2 * i) / float(D));
  std::vector<float> cs(static_cast<size_t>(half)), sn(static_cast<size_t>(half));
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t i = 0; i < half; ++i) {
      float ang = float(pos[n]) * inv[size_t(i)];
      cs[size_t(i)] = std::cos(ang);
      sn[size_t(i)] = sign * std::sin(ang);
    }
    for (int64_t h = 0; h < H; ++h) {
      float* v = x + (n * H + h) * D;
      for (int64_t i = 0; i < half; ++i) {
        float a = v[i], b = v[i + half];
        v[i] = a * cs[size_t(i)] - b * sn[size_t(i)];
        v[i + half] = a * sn[size_t(i)] + b * cs[size_t(i)];
      }
    }
  }
}
}  // namespace

void CpuBackend::rope_forward(float* x, const int32_t* pos, int64_t N, int64_t H, int64_t D, float base) {
  rope_apply(x, pos, N, H, D, base, 1.0f);
}
// the transpose of a rotation is the rotation by the negative angle
void CpuBackend::rope_backward(float* dx, const int32_t* pos, int64_t N, int64_t H, int64_t D, float base) {
  rope_apply(dx, pos, N, H, D, base, -1.0f);
}

// ---------------------------------------------------------------------------------------------
// activations
namespace {
constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2/pi)
inline float silu(float x) { return x / (1.0f + vexp(-x)); }
// tanh through one exp (vectorisable vexp); saturates correctly at +-inf
inline float fast_tanh(float a) { return 1.0f - 2.0f / (1.0f + vexp(2.0f * a)); }
}  // namespace

void CpuBackend::act_forward(ActKind a, float* out, const float* inp, int64_t N, int64_t F) {
  switch (a) {
    case ActKind::gelu:  // out (N, F) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
      for (int64_t i = 0; i < N * F; ++i) {
        float x = inp[i];
        out[i] = 0.5f * x * (1.0f + fast_tanh(kGeluScale * (x + 0.044715f * x * x * x)));
      }
      break;
    case ActKind::squared_relu:  // out = relu(x)^2
      for (int64_t i = 0; i < N * F; ++i) {
        float x = inp[i] > 0 ? inp[i] : 0.0f;
        out[i] = x * x;
      }
      break;
    case ActKind::swiglu:  // inp (N, 2F) = [gate | up]; out (N, F) = silu(gate) * up
      for (int64_t n = 0; n < N; ++n) {
        const float* g = inp + n * 2 * F;
        const float* u = g + F;
        float* o = out + n * F;
        for (int64_t i = 0; i < F; ++i) o[i] = silu(g[i]) * u[i];
      }
      break;
  }
}

void CpuBackend::act_backward(ActKind a, float* dinp, const float* dout, const float* inp, int64_t N, int64_t F) {
  switch (a) {
    case ActKind::gelu:
      for (int64_t i = 0; i < N * F; ++i) {
        float x = inp[i];
        float cube = 0.044715f * x * x * x;
        float arg = kGeluScale * (x + cube);
        float t = fast_tanh(arg);
        float sech2 = 1.0f - t * t;
        float local = 0.5f * (1.0f + t) + x * 0.5f * sech2 * kGeluScale * (1.0f + 3.0f * 0.044715f * x * x);
        dinp[i] = local * dout[i];
      }
      break;
    case ActKind::squared_relu:
      for (int64_t i = 0; i < N * F; ++i) dinp[i] = inp[i] > 0 ? 2.0f * inp[i] * dout[i] : 0.0f;
      break;
    case ActKind::swiglu:
      for (int64_t n = 0; n < N; ++n) {
        const float* g = inp + n * 2 * F;
        const float* u = g + F;
        const float* d = dout + n * F;
        float* dg = dinp + n * 2 * F;
        float* du = dg + F;
        for (int64_t i = 0; i < F; ++i) {
          float s = 1.0f / (1.0f + vexp(-g[i]));
          du[i] = d[i] * g[i] * s;
          dg[i] = d[i] * u[i] * s * (1.0f + g[i] * (1.0f - s));
        }
      }
      break;
  }
}

}  // namespace mplan::exec
