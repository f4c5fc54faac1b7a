// ISO 8601 UTC timestamps (see time_format.h).
#include "core/time_format.h"

namespace mplan {

std::string utc_iso(std::time_t t) {
  std::tm tm{};
  if (!gmtime_r(&t, &tm)) return "";
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string utc_now_iso() { return utc_iso(std::time(nullptr)); }

}  // namespace mplan
