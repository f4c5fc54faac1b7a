// Summary statistics of samples, with one definition used by every part of mplan:
// the q-quantile of n sorted values is the linear interpolation between the closest ranks,
//   pos = q * (n - 1),  quantile = v[floor(pos)] + (pos - floor(pos)) * (v[floor(pos) + 1] - v[floor(pos)])
// (Hyndman & Fan type 7: R's and NumPy's default). The median is the 0.5-quantile, i.e. the middle
// value for an odd count and the mean of the two middle values for an even count. Empty input gives 0.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace mplan::stats {

// The q-quantile (q in [0, 1]) of values already sorted ascending.
inline double quantile_sorted(const std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  double pos = std::clamp(q, 0.0, 1.0) * double(v.size() - 1);
  size_t lo = size_t(std::floor(pos)), hi = std::min(v.size() - 1, lo + 1);
  double f = pos - double(lo);
  return v[lo] + f * (v[hi] - v[lo]);
}

inline double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return quantile_sorted(v, q);
}

inline double median(std::vector<double> v) { return quantile(std::move(v), 0.5); }

// Median, 10th and 90th percentile of repeated measurements.
struct Summary {
  double median = 0, p10 = 0, p90 = 0;
  int n = 0;
};

inline Summary summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {quantile_sorted(v, 0.5), quantile_sorted(v, 0.1), quantile_sorted(v, 0.9), int(v.size())};
}

// Median absolute deviation from the median (unscaled; x kMadToSigma estimates a normal sigma).
inline double mad(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double m = median(v);
  std::vector<double> dev;
  dev.reserve(v.size());
  for (double x : v) dev.push_back(std::fabs(x - m));
  return median(std::move(dev));
}

// max - min (0 when fewer than two values).
inline double value_range(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return *hi - *lo;
}

constexpr double kMadToSigma = 1.4826;
// Asymptotic standard error of a median relative to the sample sigma: sqrt(pi/2).
constexpr double kMedianStdErrFactor = 1.2533;

}  // namespace mplan::stats
