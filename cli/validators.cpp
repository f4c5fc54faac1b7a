// Bounded numeric option validators: integers and finite reals in a stated range, with a short
// message ("--gpus: must be an integer in 1..1048576, got 0"), never NaN or inf.
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "cli/commands.h"

namespace mplan::cli {

CLI::Validator int_range(int64_t lo, int64_t hi) {
  const std::string range = std::to_string(lo) + ".." + std::to_string(hi);
  return CLI::Validator(
      [lo, hi, range](std::string& s) -> std::string {
        errno = 0;
        char* end = nullptr;
        long long v = std::strtoll(s.c_str(), &end, 10);
        if (s.empty() || end == s.c_str() || *end != '\0' || errno == ERANGE || v < lo || v > hi)
          return "must be an integer in " + range + ", got '" + s + "'";
        return {};
      },
      "INT in " + range, "int_range");
}

CLI::Validator real_range(double lo, double hi, bool lo_open) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%s%g, %g]", lo_open ? "(" : "[", lo, hi);
  const std::string range = buf;
  return CLI::Validator(
      [lo, hi, lo_open, range](std::string& s) -> std::string {
        errno = 0;
        char* end = nullptr;
        double v = std::strtod(s.c_str(), &end);
        bool below = lo_open ? !(v > lo) : !(v >= lo);
        if (s.empty() || end == s.c_str() || *end != '\0' || errno == ERANGE || !std::isfinite(v) || below || v > hi)
          return "must be a number in " + range + ", got '" + s + "'";
        return {};
      },
      "NUMBER in " + range, "real_range");
}

}  // namespace mplan::cli
