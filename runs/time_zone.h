// Time zones of training logs. Megatron-LM, Megatron-Bridge and NeMo print the host's local time
// without a zone; Slurm scripts often print one (`START TIME: Tue Jun 11 10:11:02 CEST 2024`, the
// output of date(1)). started_at is stored in UTC, so a local time is converted with the zone the log
// states, else the one given with --tz: a fixed offset, UTC, or an IANA name read from the system's
// time-zone database (date/tz over tzdata, with the POSIX TZ rule of the zone file for later years).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace date {
class time_zone;
}  // namespace date

namespace mplan::runs {

class TimeZone {
 public:
  // "UTC", "Z", "+02:00", "-0530", "UTC+2", "GMT-03:30", or an IANA name ("Europe/Berlin") of the
  // system's time-zone database. Errors name the spec and the accepted forms.
  static Expected<TimeZone> parse(const std::string& spec);
  static TimeZone fixed(int offset_s, std::string name);

  const std::string& name() const { return name_; }
  // Offset east of UTC (seconds) in effect at `utc` (seconds since the epoch).
  int offset_at_utc(int64_t utc) const;
  // Seconds since the epoch (UTC) of a wall-clock time in this zone, given as seconds since the
  // epoch as if that wall clock were UTC. A time in a DST overlap takes the earlier instant (the
  // offset before the change); one in a DST gap, which no clock showed, the instant of the change.
  int64_t local_to_utc(int64_t local) const;

 private:
  std::string name_;
  int fixed_offset_ = 0;
  const date::time_zone* zone_ = nullptr;  // IANA zone (owned by date's database); nullptr: fixed offset
  int64_t last_transition_ = 0;            // of the zone file; later instants follow its POSIX rule
  std::string footer_;                     // that rule, e.g. "CET-1CEST,M3.5.0,M10.5.0/3" ("" when none)
};

// A zone stated in a log line, with the wall-clock time the line states in it.
struct StatedZone {
  std::string zone;             // "CEST", "+02:00"
  std::optional<int> offset_s;  // empty when the abbreviation names several zones (CST, IST, AST)
  std::string local_time;       // "2024-06-11 10:11:02"
  int line = 0;
};

// date(1) output ("Tue Jun 11 10:11:02 CEST 2024", also with AM/PM) or an ISO 8601 time with an
// offset ("2024-06-11T10:11:02+02:00") anywhere in the line.
std::optional<StatedZone> zone_in_line(const std::string& line);
// Offset of an unambiguous zone abbreviation (CEST = +7200); nullopt when unknown or ambiguous.
std::optional<int> zone_abbreviation_offset(const std::string& abbreviation);
bool zone_abbreviation_ambiguous(const std::string& abbreviation);

// "YYYY-MM-DD HH:MM:SS" (optionally with fractional seconds or a 'T') -> seconds since the epoch as
// if it were UTC; nullopt when malformed.
std::optional<int64_t> parse_wall_clock(const std::string& text);
// Seconds since the epoch -> "YYYY-MM-DDTHH:MM:SSZ".
std::string format_utc_iso(int64_t utc);

}  // namespace mplan::runs
