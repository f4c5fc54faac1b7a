// Summary statistics of repeated timings: median, 10th and 90th percentile (linear interpolation).
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

namespace mplan::profiles {

struct Summary {
  double median = 0, p10 = 0, p90 = 0;
  int n = 0;
};

inline double percentile_sorted(const std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  double pos = q * double(v.size() - 1);
  size_t lo = size_t(std::floor(pos)), hi = std::min(v.size() - 1, lo + 1);
  double f = pos - double(lo);
  return v[lo] * (1 - f) + v[hi] * f;
}

inline Summary summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {percentile_sorted(v, 0.5), percentile_sorted(v, 0.1), percentile_sorted(v, 0.9), int(v.size())};
}

}  // namespace mplan::profiles
