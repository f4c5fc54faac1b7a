// The busiest expert-parallel rank's load (see moe_load.h).
#include "simulator/moe_load.h"

#include <cmath>
#include <map>
#include <mutex>
#include <vector>

namespace mplan {

namespace {

constexpr double kStep = 1e-3;  // the integration step

// The grid of expected_max_of_normals' integral with the density and distribution function at each
// point: they do not depend on n, so every n computed reuses them (the same doubles as computing them
// inside the integral).
struct NormalGrid {
  std::vector<double> x, phi, Phi;
  NormalGrid() {
    const double inv_sqrt_2pi = 0.3989422804014327;
    for (double v = -10; v <= 10; v += kStep) {
      x.push_back(v);
      phi.push_back(inv_sqrt_2pi * std::exp(-0.5 * v * v));
      Phi.push_back(0.5 * std::erfc(-v / std::sqrt(2.0)));
    }
  }
};

}  // namespace

double expected_max_of_normals(int n) {
  if (n <= 1) return 0;
  static std::mutex mu;
  static std::map<int, double> cache;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(n);
    if (it != cache.end()) return it->second;
  }
  // E[max] = integral of x * n * phi(x) * Phi(x)^(n-1) dx, trapezoid on [-10, 10]
  static const NormalGrid grid;
  double sum = 0;
  for (size_t i = 0; i < grid.x.size(); ++i)
    sum += grid.x[i] * double(n) * grid.phi[i] * std::pow(grid.Phi[i], double(n - 1)) * kStep;
  std::lock_guard<std::mutex> lock(mu);
  cache[n] = sum;
  return sum;
}

double moe_busiest_rank_factor(int num_experts, int top_k, int ep, double tokens_per_rank, bool forced_balance,
                               double expert_cv) {
  if (ep <= 1 || num_experts <= 1 || tokens_per_rank <= 0) return 1.0;
  const double E = num_experts, k = std::min<double>(top_k, E);
  double var = (E - k) / ((E - 1) * tokens_per_rank * k);
  if (!forced_balance) var += expert_cv * expert_cv * double(ep) / E;
  return 1.0 + expected_max_of_normals(ep) * std::sqrt(var);
}

}  // namespace mplan
