// The one timestamp format of mplan's files and databases: ISO 8601 in UTC to the second,
// "YYYY-MM-DDTHH:MM:SSZ" (sorts as text; SQLite's strftime('%Y-%m-%dT%H:%M:%SZ') writes the same).
#pragma once
#include <ctime>
#include <string>

namespace mplan {

// `t` (seconds since the epoch) as "YYYY-MM-DDTHH:MM:SSZ" (thread-safe: gmtime_r).
std::string utc_iso(std::time_t t);
// The current time in that format.
std::string utc_now_iso();

}  // namespace mplan
