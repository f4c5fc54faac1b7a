// CPU kernels: elementwise helpers, GEMMs (OpenBLAS), LayerNorm/RMSNorm, RoPE and activations.
#include <cblas.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "executor/backend/blas_config.h"
#include "executor/backend/cpu/cpu_backend.h"
#include "executor/backend/kernel_math.h"

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
void CpuBackend::matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int64_t M, int64_t K,
                                int64_t N, bool accumulate) {
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
void CpuBackend::matmul_backward_input(float* dinp, const float* dout, const float* weight, int64_t M, int64_t K, int64_t N,
                                       bool accumulate) {
  if (M == 0 || K == 0) return;
  if (N == 0) {
    if (!accumulate) zero(dinp, M * K);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(M), int(K), int(N), 1.0f, dout, int(N), weight, int(K),
              accumulate ? 1.0f : 0.0f, dinp, int(K));
}

// dweight (N, K) += dout (M, N)^T @ inp (M, K); dbias (N) += sum_m dout[m]
void CpuBackend::matmul_backward_weight(float* dweight, float* dbias, const float* dout, const float* inp, int64_t M, int64_t K,
                                        int64_t N) {
  if (M == 0 || N == 0) return;
  if (K > 0)
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, int(N), int(K), int(M), 1.0f, dout, int(N), inp, int(K), 1.0f, dweight,
                int(K));
  if (dbias) {
    for (int64_t m = 0; m < M; ++m) {
      const float* d = dout + m * N;
      for (int64_t n = 0; n < N; ++n) dbias[n] += d[n];
    }
  }
}

// ---------------------------------------------------------------------------------------------
// layernorm: inp (N, C) -> out (N, C), mean (N), rstd (N)
void CpuBackend::layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w, const float* b,
                                   int64_t N, int64_t C, float eps) {
  for (int64_t n = 0; n < N; ++n) {
    const float* x = inp + n * C;
    double m = 0;
    for (int64_t i = 0; i < C; ++i) m += x[i];
    m /= double(C);
    double v = 0;
    for (int64_t i = 0; i < C; ++i) v += (x[i] - m) * (x[i] - m);
    v /= double(C);
    float s = km::rstd_from_var(v, eps);
    float* o = out + n * C;
    float mf = float(m);
    for (int64_t i = 0; i < C; ++i) o[i] = km::layernorm_apply(x[i], mf, s, w[i], b ? b[i] : 0.0f);
    mean[n] = mf;
    rstd[n] = s;
  }
}

// dinp (N, C) (+)= d/dx; dw (C), db (C) += ...
void CpuBackend::layernorm_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp, const float* w,
                                    const float* mean, const float* rstd, int64_t N, int64_t C, bool accumulate) {
  for (int64_t n = 0; n < N; ++n) {
    const float* x = inp + n * C;
    const float* d = dout + n * C;
    float m = mean[n], s = rstd[n];
    double dnorm_mean = 0, dnorm_norm_mean = 0;
    for (int64_t i = 0; i < C; ++i) {
      float norm = km::layernorm_xhat(x[i], m, s);
      float dnorm = w[i] * d[i];
      dnorm_mean += dnorm;
      dnorm_norm_mean += double(dnorm) * norm;
    }
    float a = float(dnorm_mean / double(C)), bb = float(dnorm_norm_mean / double(C));
    float* di = dinp + n * C;
    for (int64_t i = 0; i < C; ++i) {
      float norm = km::layernorm_xhat(x[i], m, s);
      if (db) db[i] += d[i];
      if (dw) dw[i] += norm * d[i];
      float g = km::layernorm_dx(x[i], d[i], w[i], m, s, a, bb);
      di[i] = accumulate ? di[i] + g : g;
    }
  }
}

// rmsnorm: out = x * rstd * w, rstd = 1/sqrt(mean(x^2) + eps)
void CpuBackend::rmsnorm_forward(float* out, float* rstd, const float* inp, const float* w, int64_t N, int64_t C, float eps) {
  for (int64_t n = 0; n < N; ++n) {
    const float* x = inp + n * C;
    double ss = 0;
    for (int64_t i = 0; i < C; ++i) ss += double(x[i]) * x[i];
    float s = km::rstd_from_var(ss / double(C), eps);
    float* o = out + n * C;
    for (int64_t i = 0; i < C; ++i) o[i] = km::rmsnorm_apply(x[i], s, w[i]);
    rstd[n] = s;
  }
}

// dx_j = r * (w_j dy_j - x_j r^2 mean_i(w_i dy_i x_i)); dw_i += dy_i x_i r
void CpuBackend::rmsnorm_backward(float* dinp, float* dw, const float* dout, const float* inp, const float* w, const float* rstd,
                                  int64_t N, int64_t C, bool accumulate) {
  for (int64_t n = 0; n < N; ++n) {
    const float* x = inp + n * C;
    const float* d = dout + n * C;
    float s = rstd[n];
    double dot = 0;
    for (int64_t i = 0; i < C; ++i) dot += double(w[i]) * d[i] * x[i];
    float c = km::rmsnorm_row_coef(dot / double(C), s);
    float* di = dinp + n * C;
    for (int64_t i = 0; i < C; ++i) {
      if (dw) dw[i] += d[i] * x[i] * s;
      float g = km::rmsnorm_dx(x[i], d[i], w[i], s, c);
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
  for (int64_t i = 0; i < half; ++i) inv[size_t(i)] = km::rope_inv_freq(i, D, base);
  std::vector<float> cs(static_cast<size_t>(half)), sn(static_cast<size_t>(half));
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t i = 0; i < half; ++i) km::rope_cos_sin(pos[n], inv[size_t(i)], sign, &cs[size_t(i)], &sn[size_t(i)]);
    for (int64_t h = 0; h < H; ++h) {
      float* v = x + (n * H + h) * D;
      for (int64_t i = 0; i < half; ++i) km::rope_rotate(&v[i], &v[i + half], cs[size_t(i)], sn[size_t(i)]);
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
// activations (per-element math in kernel_math.h, shared with the CUDA kernels)
void CpuBackend::act_forward(ActKind a, float* out, const float* inp, int64_t N, int64_t F) {
  switch (a) {
    case ActKind::gelu:  // out (N, F) = gelu(inp)
      for (int64_t i = 0; i < N * F; ++i) out[i] = km::gelu_forward(inp[i]);
      break;
    case ActKind::squared_relu:  // out = relu(x)^2
      for (int64_t i = 0; i < N * F; ++i) out[i] = km::sqrelu_forward(inp[i]);
      break;
    case ActKind::swiglu:  // inp (N, 2F) = [gate | up]; out (N, F) = silu(gate) * up
      for (int64_t n = 0; n < N; ++n) {
        const float* g = inp + n * 2 * F;
        const float* u = g + F;
        float* o = out + n * F;
        for (int64_t i = 0; i < F; ++i) o[i] = km::swiglu_forward(g[i], u[i]);
      }
      break;
  }
}

void CpuBackend::act_backward(ActKind a, float* dinp, const float* dout, const float* inp, int64_t N, int64_t F) {
  switch (a) {
    case ActKind::gelu:
      for (int64_t i = 0; i < N * F; ++i) dinp[i] = km::gelu_backward(inp[i], dout[i]);
      break;
    case ActKind::squared_relu:
      for (int64_t i = 0; i < N * F; ++i) dinp[i] = km::sqrelu_backward(inp[i], dout[i]);
      break;
    case ActKind::swiglu:
      for (int64_t n = 0; n < N; ++n) {
        const float* g = inp + n * 2 * F;
        const float* u = g + F;
        const float* d = dout + n * F;
        float* dg = dinp + n * 2 * F;
        float* du = dg + F;
        for (int64_t i = 0; i < F; ++i) km::swiglu_backward(g[i], u[i], d[i], &dg[i], &du[i]);
      }
      break;
  }
}

}  // namespace mplan::exec
