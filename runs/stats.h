// Small robust statistics used by run summaries and regression detection: median, MAD, range.
#pragma once
#include <vector>

namespace mplan::runs {

// Median of `v` (0 when empty); the mean of the two middle values for an even count.
double median(std::vector<double> v);
// Median absolute deviation from the median (unscaled; x1.4826 estimates a normal sigma).
double mad(const std::vector<double>& v);
// max - min (0 when fewer than two values).
double value_range(const std::vector<double>& v);

constexpr double kMadToSigma = 1.4826;
// Asymptotic standard error of a median relative to the sample sigma: sqrt(pi/2).
constexpr double kMedianStdErrFactor = 1.2533;

}  // namespace mplan::runs
