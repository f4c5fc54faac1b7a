// Reproducible random inputs for kernel tests: std::mt19937 seeded per call, uniform values, so a
// test names its data by a seed (the same seed gives the same values in every suite).
#pragma once
#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace mplan::test {

// n floats uniform in [lo, hi).
inline std::vector<float> randv(int64_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(static_cast<size_t>(std::max<int64_t>(n, 0)));
  for (float& x : v) x = u(rng);
  return v;
}

}  // namespace mplan::test
