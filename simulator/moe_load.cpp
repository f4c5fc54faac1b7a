// The busiest expert-parallel rank's load (see moe_load.h).
#include "simulator/moe_load.h"

#include <cmath>
#include <map>
#include <mutex>

namespace mplan {

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
  const double inv_sqrt_2pi = 0.3989422804014327;
  double sum = 0;
  const double h = 1e-3;
  for (double x = -10; x <= 10; x += h) {
    double phi = inv_sqrt_2pi * std::exp(-0.5 * x * x);
    double Phi = 0.5 * std::erfc(-x / std::sqrt(2.0));
    sum += x * double(n) * phi * std::pow(Phi, double(n - 1)) * h;
  }
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
