// Time zones of training logs. Megatron-LM, Megatron-Bridge and NeMo print the host's local time
// without a zone; Slurm scripts often print one (`START TIME: Tue Jun 11 10:11:02 CEST 2024`, the
// output of date(1)). started_at is stored in UTC, so a local time is converted with the zone the log
// states, else the one given with --tz: a fixed offset, UTC, or an IANA name read from the system's
// zoneinfo files (TZif, with the POSIX TZ rule of the file's footer for later years).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace mplan::runs {

class TimeZone {
 public:
  // "UTC", "Z", "+02:00", "-0530", "UTC+2", "GMT-03:30", or an IANA name ("Europe/Berlin") looked up
  // under `zoneinfo_dir`. Errors name the spec and the accepted forms.
  static Expected<TimeZone> parse(const std::string& spec, const std::string& zoneinfo_dir = "/usr/share/zoneinfo");
  static TimeZone fixed(int offset_s, std::string name);

  const std::string& name() const { return name_; }
  // Offset east of UTC (seconds) in effect at `utc` (seconds since the epoch).
  int offset_at_utc(int64_t utc) const;
  // Seconds since the epoch (UTC) of a wall-clock time in this zone, given as seconds since the
  // epoch as if that wall clock were UTC. Times in a DST gap or overlap take one of the offsets.
  int64_t local_to_utc(int64_t local) const;

  // Zone rules of a TZif file (public for tests of the footer rule): transitions (UTC seconds) with
  // the offset that starts at each, the offset before the first, and the POSIX TZ footer.
  struct Rule {
    int std_offset = 0, dst_offset = 0;  // east of UTC, seconds
    bool has_dst = false;
    // Mm.w.d/time of the start and end of DST (local time, seconds after midnight).
    int start_month = 0, start_week = 0, start_day = 0, start_time = 7200;
    int end_month = 0, end_week = 0, end_day = 0, end_time = 7200;
  };
  static std::optional<Rule> parse_posix_tz(const std::string& footer);

 private:
  std::string name_;
  int fixed_offset_ = 0;
  bool is_fixed_ = true;
  std::vector<int64_t> transitions_;
  std::vector<int> offsets_;  // offset starting at transitions_[i]
  int initial_offset_ = 0;
  std::optional<Rule> footer_;
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
