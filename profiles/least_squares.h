// Small dense nonlinear least squares (Levenberg-Marquardt, numeric Jacobian: Eigen's MINPACK port)
// for the calibration fit: a handful of parameters, up to a few thousand residuals.
#pragma once
#include <functional>
#include <vector>

namespace mplan::profiles {

// residuals(x, r): fills r (size fixed across calls) for parameters x.
using ResidualFn = std::function<void(const std::vector<double>& x, std::vector<double>& r)>;

struct LsqResult {
  std::vector<double> x;
  double cost = 0;  // sum of squared residuals / 2
  int iterations = 0;
};

// Minimises from x0 with at most max_iter * (parameters + 1) evaluations of f besides the Jacobian's;
// the result is never worse than x0.
LsqResult levenberg_marquardt(const ResidualFn& f, std::vector<double> x0, int max_iter = 300);

// LM from every start in `starts`; the lowest cost wins.
LsqResult least_squares_multistart(const ResidualFn& f, const std::vector<std::vector<double>>& starts);

}  // namespace mplan::profiles
