// Levenberg-Marquardt with a forward-difference Jacobian and Marquardt's diagonal scaling.
#include "profiles/least_squares.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mplan::profiles {

namespace {

double half_sq(const std::vector<double>& r) {
  double s = 0;
  for (double v : r) s += v * v;
  return std::isfinite(s) ? 0.5 * s : std::numeric_limits<double>::infinity();
}

// Solves A x = b (A n x n, row-major) by Gaussian elimination with partial pivoting; false if singular.
bool solve(std::vector<double> A, std::vector<double> b, std::vector<double>& x) {
  const size_t n = b.size();
  for (size_t c = 0; c < n; ++c) {
    size_t piv = c;
    for (size_t r = c + 1; r < n; ++r)
      if (std::abs(A[r * n + c]) > std::abs(A[piv * n + c])) piv = r;
    if (std::abs(A[piv * n + c]) < 1e-300) return false;
    if (piv != c) {
      for (size_t k = 0; k < n; ++k) std::swap(A[c * n + k], A[piv * n + k]);
      std::swap(b[c], b[piv]);
    }
    for (size_t r = c + 1; r < n; ++r) {
      double f = A[r * n + c] / A[c * n + c];
      for (size_t k = c; k < n; ++k) A[r * n + k] -= f * A[c * n + k];
      b[r] -= f * b[c];
    }
  }
  x.assign(n, 0);
  for (size_t i = n; i-- > 0;) {
    double s = b[i];
    for (size_t k = i + 1; k < n; ++k) s -= A[i * n + k] * x[k];
    x[i] = s / A[i * n + i];
  }
  return true;
}

}  // namespace

LsqResult levenberg_marquardt(const ResidualFn& f, std::vector<double> x, int max_iter) {
  const size_t n = x.size();
  std::vector<double> r, rt;
  f(x, r);
  const size_t m = r.size();
  double cost = half_sq(r);
  double lambda = 1e-3;
  LsqResult out;
  if (n == 0 || m == 0) return {x, cost, 0};
  std::vector<double> J(m * n), JtJ(n * n), Jtr(n), step, xt(n);
  int it = 0;
  for (; it < max_iter; ++it) {
    for (size_t j = 0; j < n; ++j) {
      double h = 1e-7 * std::max(1.0, std::abs(x[j]));
      xt = x;
      xt[j] += h;
      f(xt, rt);
      for (size_t i = 0; i < m; ++i) J[i * n + j] = (rt[i] - r[i]) / h;
    }
    std::fill(JtJ.begin(), JtJ.end(), 0.0);
    std::fill(Jtr.begin(), Jtr.end(), 0.0);
    for (size_t i = 0; i < m; ++i)
      for (size_t a = 0; a < n; ++a) {
        Jtr[a] += J[i * n + a] * r[i];
        for (size_t b = 0; b < n; ++b) JtJ[a * n + b] += J[i * n + a] * J[i * n + b];
      }
    bool improved = false;
    for (int tries = 0; tries < 30 && !improved; ++tries) {
      std::vector<double> A = JtJ, b(n);
      for (size_t a = 0; a < n; ++a) {
        A[a * n + a] += lambda * std::max(JtJ[a * n + a], 1e-12);
        b[a] = -Jtr[a];
      }
      if (!solve(A, b, step)) {
        lambda *= 10;
        continue;
      }
      for (size_t a = 0; a < n; ++a) xt[a] = x[a] + step[a];
      f(xt, rt);
      double c = half_sq(rt);
      if (c < cost) {
        double rel = (cost - c) / std::max(cost, 1e-300);
        x = xt;
        r = rt;
        cost = c;
        lambda = std::max(lambda / 3, 1e-12);
        improved = true;
        if (rel < 1e-14) return {x, cost, it + 1};
      } else {
        lambda *= 4;
      }
    }
    if (!improved) break;
  }
  return {x, cost, it};
}

LsqResult least_squares_multistart(const ResidualFn& f, const std::vector<std::vector<double>>& starts) {
  LsqResult best;
  best.cost = std::numeric_limits<double>::infinity();
  for (const auto& s : starts) {
    LsqResult r = levenberg_marquardt(f, s);
    if (r.cost < best.cost || best.x.empty()) best = r;
  }
  return best;
}

}  // namespace mplan::profiles
