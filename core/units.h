// Units and conversion constants. Names carry units: time_s, size_bytes, bw_gbps (1e9 B/s), peak_tflops.
#pragma once
#include <cstdint>

namespace mplan {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kGB = 1e9;
constexpr double kTera = 1e12;
constexpr double kMicro = 1e-6;

inline double bytes_to_gib(double b) { return b / kGiB; }
inline double gib_to_bytes(double g) { return g * kGiB; }

}  // namespace mplan
