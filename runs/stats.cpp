// Robust statistics: median, MAD, range.
#include "runs/stats.h"

#include <algorithm>
#include <cmath>

namespace mplan::runs {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  size_t n = v.size(), mid = n / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  double hi = v[mid];
  if (n % 2 == 1) return hi;
  double lo = *std::max_element(v.begin(), v.begin() + mid);
  return 0.5 * (lo + hi);
}

double mad(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double m = median(v);
  std::vector<double> dev;
  dev.reserve(v.size());
  for (double x : v) dev.push_back(std::fabs(x - m));
  return median(std::move(dev));
}

double value_range(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return *hi - *lo;
}

}  // namespace mplan::runs
