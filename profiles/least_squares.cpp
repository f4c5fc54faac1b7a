// Levenberg-Marquardt through Eigen's MINPACK port (unsupported/Eigen/NonLinearOptimization, Debian
// libeigen3-dev) with a forward-difference Jacobian (Eigen::NumericalDiff), and the multistart loop.
#include "profiles/least_squares.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <unsupported/Eigen/NonLinearOptimization>
#include <unsupported/Eigen/NumericalDiff>

namespace mplan::profiles {

namespace {

// A residual that is not finite (a prediction that failed) counts as this large, finite miss, so
// that MINPACK rejects the step that produced it instead of stopping on NaN.
constexpr double kNonFiniteResidual = 1e6;

// The residual function in the form Eigen's LM and NumericalDiff expect. MINPACK needs at least as
// many residuals as parameters: a fit with fewer rows gets zero residuals appended (they change
// neither the cost nor the minimum; the damping keeps the step defined).
struct Residuals {
  using Scalar = double;
  using InputType = Eigen::VectorXd;
  using ValueType = Eigen::VectorXd;
  using JacobianType = Eigen::MatrixXd;
  enum { InputsAtCompileTime = Eigen::Dynamic, ValuesAtCompileTime = Eigen::Dynamic };

  const ResidualFn* f;
  Eigen::Index n, m;  // parameters, residuals (after padding)
  mutable std::vector<double> x, r;

  Eigen::Index inputs() const { return n; }
  Eigen::Index values() const { return m; }
  int operator()(const Eigen::VectorXd& in, Eigen::VectorXd& out) const {
    x.assign(in.data(), in.data() + in.size());
    (*f)(x, r);
    out.setZero(m);
    for (size_t i = 0; i < r.size() && Eigen::Index(i) < m; ++i)
      out[Eigen::Index(i)] = std::isfinite(r[i]) ? r[i] : kNonFiniteResidual;
    return 0;
  }
};

double half_sq(const std::vector<double>& r) {
  double s = 0;
  for (double v : r) s += v * v;
  return std::isfinite(s) ? 0.5 * s : std::numeric_limits<double>::infinity();
}

}  // namespace

LsqResult levenberg_marquardt(const ResidualFn& f, std::vector<double> x, int max_iter) {
  std::vector<double> r;
  f(x, r);
  const double cost0 = half_sq(r);
  if (x.empty() || r.empty()) return {x, cost0, 0};
  Residuals fn{&f, Eigen::Index(x.size()), Eigen::Index(std::max(r.size(), x.size())), {}, {}};
  Eigen::NumericalDiff<Residuals> diff(fn);
  Eigen::LevenbergMarquardt<Eigen::NumericalDiff<Residuals>> lm(diff);
  // Tolerances near double precision: the fit stops when a step changes neither the cost nor the
  // parameters by more than 1e-12 relatively (MINPACK's defaults, 1.5e-8, stop earlier than needed).
  lm.parameters.ftol = 1e-12;
  lm.parameters.xtol = 1e-12;
  lm.parameters.maxfev = Eigen::Index(max_iter) * (fn.n + 1);
  Eigen::VectorXd v = Eigen::Map<const Eigen::VectorXd>(x.data(), fn.n);
  lm.minimize(v);
  std::vector<double> best(v.data(), v.data() + v.size());
  f(best, r);
  const double cost = half_sq(r);
  if (!(cost <= cost0)) return {x, cost0, int(lm.iter)};  // never worse than the start
  return {best, cost, int(lm.iter)};
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
