// Time zones: fixed offsets and the zones training logs state (date(1) output, ISO 8601 offsets, zone
// abbreviations) are read here; IANA zones, DST rules and civil-date arithmetic are Howard Hinnant's
// date/tz (Debian libhowardhinnant-date-dev, over the system's tzdata), with the POSIX TZ rule of a
// zone file's footer (date/ptz.h) for instants after the file's last transition.
#include "runs/time_zone.h"

#include <date/date.h>
#include <date/tz.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

// date 3.0.1's ptz.h names hh_mm_ss unqualified under `using namespace date; using namespace
// std::chrono;`, which C++20 makes ambiguous (std::chrono::hh_mm_ss). The macro and the alias make its
// unqualified use and its one qualified use (date::hh_mm_ss) both name date's.
namespace date {
namespace date = ::date;  // NOLINT(misc-unused-alias-decls)
}  // namespace date
#define hh_mm_ss date::hh_mm_ss
#include <date/ptz.h>
#undef hh_mm_ss

namespace mplan::runs {

namespace {

using Seconds = std::chrono::seconds;
// Where Debian's date/tz (built with USE_OS_TZDB) reads the zone files: tzdata's directory.
constexpr const char* kZoneinfoDir = "/usr/share/zoneinfo";

date::sys_seconds sys(int64_t s) { return date::sys_seconds{Seconds{s}}; }

bool is_digits(const std::string& s, size_t a, size_t n) {
  if (a + n > s.size()) return false;
  for (size_t i = a; i < a + n; ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

// "+02:00", "-0530", "+2", "-03:30" -> seconds east; nullopt when malformed.
std::optional<int> parse_offset(const std::string& s) {
  if (s.size() < 2 || (s[0] != '+' && s[0] != '-')) return std::nullopt;
  int sign = s[0] == '-' ? -1 : 1;
  std::string r = s.substr(1);
  int h = 0, m = 0;
  if (is_digits(r, 0, r.size()) && (r.size() == 1 || r.size() == 2))
    h = std::stoi(r);
  else if (r.size() == 4 && is_digits(r, 0, 4))
    h = std::stoi(r.substr(0, 2)), m = std::stoi(r.substr(2));
  else if (r.size() == 5 && r[2] == ':' && is_digits(r, 0, 2) && is_digits(r, 3, 2))
    h = std::stoi(r.substr(0, 2)), m = std::stoi(r.substr(3));
  else if (r.size() == 4 && r[1] == ':' && is_digits(r, 0, 1) && is_digits(r, 2, 2))
    h = std::stoi(r.substr(0, 1)), m = std::stoi(r.substr(2));
  else
    return std::nullopt;
  if (h > 14 || m > 59) return std::nullopt;
  return sign * (h * 3600 + m * 60);
}

std::string offset_name(int off) {
  char buf[16];
  int a = off < 0 ? -off : off;
  std::snprintf(buf, sizeof buf, "%c%02d:%02d", off < 0 ? '-' : '+', a / 3600, a / 60 % 60);
  return buf;
}

// ---- zone abbreviations ---------------------------------------------------------------------

const std::map<std::string, int>& abbreviations() {
  static const std::map<std::string, int> m = {
      {"UTC", 0},       {"GMT", 0},      {"Z", 0},        {"WET", 0},      {"WEST", 3600},  {"BST", 3600},   {"CET", 3600},
      {"CEST", 7200},   {"MET", 3600},   {"MEST", 7200},  {"EET", 7200},   {"EEST", 10800}, {"MSK", 10800},  {"EST", -18000},
      {"EDT", -14400},  {"CDT", -18000}, {"MST", -25200}, {"MDT", -21600}, {"PST", -28800}, {"PDT", -25200}, {"AKST", -32400},
      {"AKDT", -28800}, {"HST", -36000}, {"JST", 32400},  {"KST", 32400},  {"HKT", 28800},  {"SGT", 28800},  {"AWST", 28800},
      {"ACST", 34200},  {"ACDT", 37800}, {"AEST", 36000}, {"AEDT", 39600}, {"NZST", 43200}, {"NZDT", 46800}, {"PKT", 18000},
  };
  return m;
}

bool is_month(const std::string& s, int& month) {
  static const char* names[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  for (int i = 0; i < 12; ++i)
    if (s == names[i]) return month = i + 1, true;
  return false;
}

bool is_weekday(const std::string& s) {
  for (const char* d : {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"})
    if (s == d) return true;
  return false;
}

bool hms(const std::string& s, int& h, int& m, int& sec) {
  if (s.size() != 8 || s[2] != ':' || s[5] != ':' || !is_digits(s, 0, 2) || !is_digits(s, 3, 2) || !is_digits(s, 6, 2))
    return false;
  h = std::stoi(s.substr(0, 2)), m = std::stoi(s.substr(3, 2)), sec = std::stoi(s.substr(6, 2));
  return h < 24 && m < 60 && sec < 61;
}

std::string wall(int64_t y, int mo, int d, int h, int mi, int s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04lld-%02d-%02d %02d:%02d:%02d", static_cast<long long>(y), mo, d, h, mi, s);
  return buf;
}

// date(1): "Tue Jun 11 10:11:02 CEST 2024" / "Tue Jun 11 10:11:02 AM CEST 2024".
std::optional<StatedZone> date_command_zone(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> w;
  for (std::string t; in >> t;) w.push_back(t);
  for (size_t i = 0; i + 6 <= w.size(); ++i) {
    int month = 0, h, mi, s;
    if (!is_weekday(w[i]) || !is_month(w[i + 1], month)) continue;
    if (!is_digits(w[i + 2], 0, w[i + 2].size()) || w[i + 2].size() > 2 || !hms(w[i + 3], h, mi, s)) continue;
    size_t z = i + 4;
    if (z < w.size() && (w[z] == "AM" || w[z] == "PM")) {
      if (h == 12) h = 0;
      if (w[z] == "PM") h += 12;
      ++z;
    }
    if (z + 1 >= w.size() || w[z + 1].size() != 4 || !is_digits(w[z + 1], 0, 4)) continue;
    std::string zone = w[z];
    bool alpha = !zone.empty() &&
                 std::all_of(zone.begin(), zone.end(), [](char c) { return std::isupper(static_cast<unsigned char>(c)); });
    auto numeric = parse_offset(zone);
    if (!alpha && !numeric) continue;
    StatedZone sz;
    sz.zone = zone;
    sz.offset_s = numeric ? numeric : zone_abbreviation_offset(zone);
    if (alpha && !sz.offset_s && !zone_abbreviation_ambiguous(zone)) continue;  // not a zone we know
    sz.local_time = wall(std::stoll(w[z + 1]), month, std::stoi(w[i + 2]), h, mi, s);
    return sz;
  }
  return std::nullopt;
}

// ISO 8601 with an offset: "2024-06-11T10:11:02+02:00", "...02.123-0500".
std::optional<StatedZone> iso_zone(const std::string& line) {
  for (size_t p = line.find('T'); p != std::string::npos; p = line.find('T', p + 1)) {
    if (p < 10 || !is_digits(line, p - 10, 4) || line[p - 6] != '-' || line[p - 3] != '-') continue;
    size_t q = p + 9;
    if (q > line.size() || line[p + 3] != ':' || line[p + 6] != ':') continue;
    while (q < line.size() && (line[q] == '.' || std::isdigit(static_cast<unsigned char>(line[q])))) ++q;
    if (q >= line.size() || (line[q] != '+' && line[q] != '-')) continue;
    size_t e = q + 1;
    while (e < line.size() && (std::isdigit(static_cast<unsigned char>(line[e])) || line[e] == ':')) ++e;
    auto off = parse_offset(line.substr(q, e - q));
    if (!off) continue;
    StatedZone sz;
    sz.zone = offset_name(*off);
    sz.offset_s = off;
    sz.local_time = line.substr(p - 10, 10) + " " + line.substr(p + 1, 8);
    return sz;
  }
  return std::nullopt;
}

}  // namespace

std::optional<int64_t> parse_wall_clock(const std::string& t) {
  if (t.size() < 19 || !is_digits(t, 0, 4) || t[4] != '-' || !is_digits(t, 5, 2) || t[7] != '-' || !is_digits(t, 8, 2) ||
      (t[10] != ' ' && t[10] != 'T'))
    return std::nullopt;
  int h, mi, s;
  if (!hms(t.substr(11, 8), h, mi, s)) return std::nullopt;
  const date::year_month_day ymd{date::year{std::stoi(t.substr(0, 4))}, date::month{unsigned(std::stoi(t.substr(5, 2)))},
                                 date::day{unsigned(std::stoi(t.substr(8, 2)))}};
  if (!ymd.ok()) return std::nullopt;  // month 13, 30 February, 31 April
  const date::sys_seconds tp = date::sys_days{ymd} + std::chrono::hours{h} + std::chrono::minutes{mi} + Seconds{s};
  return tp.time_since_epoch().count();
}

std::string format_utc_iso(int64_t utc) { return date::format("%FT%TZ", sys(utc)); }

std::optional<int> zone_abbreviation_offset(const std::string& a) {
  auto it = abbreviations().find(a);
  if (it == abbreviations().end()) return std::nullopt;
  return it->second;
}

bool zone_abbreviation_ambiguous(const std::string& a) { return a == "CST" || a == "IST" || a == "AST"; }

std::optional<StatedZone> zone_in_line(const std::string& line) {
  if (auto z = date_command_zone(line)) return z;
  return iso_zone(line);
}

TimeZone TimeZone::fixed(int offset_s, std::string name) {
  TimeZone z;
  z.name_ = std::move(name);
  z.fixed_offset_ = offset_s;
  return z;
}

namespace {

// The POSIX TZ rule on the last line of a TZif file (RFC 8536, section 3.3), "" when it has none.
std::string tzif_footer(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string b = ss.str();
  if (b.size() < 2 || b.back() != '\n') return "";
  const size_t nl = b.rfind('\n', b.size() - 2);
  return nl == std::string::npos ? "" : b.substr(nl + 1, b.size() - nl - 2);
}

}  // namespace

Expected<TimeZone> TimeZone::parse(const std::string& spec) {
  const std::string forms = "; write UTC, an offset such as +02:00 or UTC-5, or an IANA zone name such as Europe/Berlin";
  if (spec.empty()) return Error("--tz: empty" + forms);
  if (spec == "UTC" || spec == "Z" || spec == "GMT") return fixed(0, "UTC");
  std::string rest = spec;
  if (rest.rfind("UTC", 0) == 0 || rest.rfind("GMT", 0) == 0) rest = rest.substr(3);
  if (!rest.empty() && (rest[0] == '+' || rest[0] == '-')) {
    auto off = parse_offset(rest);
    if (!off) return Error("--tz: '" + spec + "' is not a valid UTC offset" + forms);
    return fixed(*off, offset_name(*off));
  }
  TimeZone z;
  z.name_ = spec;
  try {
    z.zone_ = date::locate_zone(spec);
  } catch (const std::exception& e) {
    return Error("--tz: no zone '" + spec + "' in the system's time-zone database (Debian package tzdata: " + e.what() + ")" +
                 forms);
  }
  // date/tz reads the zone file's transitions; after the last one the file's POSIX rule applies.
  z.last_transition_ = z.zone_->get_info(date::sys_days{date::year{9999} / 1 / 1}).begin.time_since_epoch().count();
  std::string footer = tzif_footer(std::string(kZoneinfoDir) + "/" + std::string(z.zone_->name()));
  if (!footer.empty()) {
    try {
      (void)Posix::time_zone{footer};
      z.footer_ = std::move(footer);
    } catch (const std::exception&) {  // a rule date/ptz cannot read: the last transition's offset stays
    }
  }
  return z;
}

int TimeZone::offset_at_utc(int64_t utc) const {
  if (zone_ == nullptr) return fixed_offset_;
  if (utc >= last_transition_ && !footer_.empty()) return int(Posix::time_zone{footer_}.get_info(sys(utc)).offset.count());
  return int(zone_->get_info(sys(utc)).offset.count());
}

int64_t TimeZone::local_to_utc(int64_t local) const {
  if (zone_ == nullptr) return local - fixed_offset_;
  const date::local_seconds lt{Seconds{local}};
  date::sys_seconds u = zone_->to_sys(lt, date::choose::earliest);
  if (u.time_since_epoch().count() >= last_transition_ && !footer_.empty())
    u = Posix::time_zone{footer_}.to_sys(lt, date::choose::earliest);
  return u.time_since_epoch().count();
}

}  // namespace mplan::runs
