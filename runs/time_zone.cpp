// Time zones: fixed offsets, zone abbreviations stated in logs, TZif files with their POSIX footer,
// and civil-date arithmetic (proleptic Gregorian calendar, days since 1970-01-01).
#include "runs/time_zone.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

namespace mplan::runs {

namespace {

int64_t days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

void civil_from_days(int64_t z, int64_t& y, int& m, int& d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  d = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  m = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  y = yoe + era * 400 + (m <= 2);
}

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// 0 = Sunday.
int weekday(int64_t days) { return static_cast<int>(((days % 7) + 11) % 7); }

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

// ---- TZif -----------------------------------------------------------------------------------

int64_t be(const std::string& b, size_t pos, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<unsigned char>(b[pos + i]);
  if (bytes == 4) return static_cast<int32_t>(static_cast<uint32_t>(v));
  return static_cast<int64_t>(v);
}

struct TzifData {
  std::vector<int64_t> times;
  std::vector<int> offsets;
  int initial = 0;
  std::string footer;
};

// Reads the version-2+ block (64-bit times) when present, else the version-1 block.
std::optional<TzifData> read_tzif(const std::string& b) {
  auto counts = [&](size_t at, int64_t c[6]) {
    if (at + 44 > b.size() || b.compare(at, 4, "TZif") != 0) return false;
    for (int i = 0; i < 6; ++i) c[i] = be(b, at + 20 + 4 * i, 4);
    return true;
  };
  int64_t c[6];
  if (!counts(0, c)) return std::nullopt;
  auto block_size = [](const int64_t k[6], int tb) { return k[3] * tb + k[3] + k[4] * 6 + k[5] + k[2] * (tb + 4) + k[1] + k[0]; };
  size_t at = 0;
  int tb = 4;
  if (b[4] >= '2') {
    at = 44 + static_cast<size_t>(block_size(c, 4));
    if (!counts(at, c)) return std::nullopt;
    tb = 8;
  }
  size_t p = at + 44;
  if (p + static_cast<size_t>(block_size(c, tb)) > b.size()) return std::nullopt;
  const int64_t timecnt = c[3], typecnt = c[4];
  if (typecnt < 1) return std::nullopt;
  TzifData d;
  std::vector<int> type_off(static_cast<size_t>(typecnt));
  std::vector<bool> type_dst(static_cast<size_t>(typecnt));
  size_t types_at = p + static_cast<size_t>(timecnt) * (tb + 1);
  for (int64_t i = 0; i < typecnt; ++i) {
    type_off[i] = static_cast<int>(be(b, types_at + 6 * i, 4));
    type_dst[i] = b[types_at + 6 * i + 4] != 0;
  }
  for (int64_t i = 0; i < timecnt; ++i) {
    d.times.push_back(be(b, p + tb * i, tb));
    auto idx = static_cast<unsigned char>(b[p + tb * timecnt + i]);
    if (idx >= typecnt) return std::nullopt;
    d.offsets.push_back(type_off[idx]);
  }
  d.initial = type_off[0];
  for (int64_t i = 0; i < typecnt; ++i)
    if (!type_dst[i]) {
      d.initial = type_off[i];
      break;
    }
  if (tb == 8) {
    size_t f = p + static_cast<size_t>(block_size(c, 8));
    if (f < b.size() && b[f] == '\n') {
      size_t e = b.find('\n', f + 1);
      if (e != std::string::npos) d.footer = b.substr(f + 1, e - f - 1);
    }
  }
  return d;
}

// ---- POSIX TZ footer ------------------------------------------------------------------------

struct Cursor {
  const std::string& s;
  size_t i = 0;
  bool name() {
    if (i < s.size() && s[i] == '<') {
      size_t e = s.find('>', i);
      if (e == std::string::npos) return false;
      i = e + 1;
      return true;
    }
    size_t b = i;
    while (i < s.size() && std::isalpha(static_cast<unsigned char>(s[i]))) ++i;
    return i - b >= 3;
  }
  // [+-]hh[:mm[:ss]] -> seconds (POSIX sign: positive = west of UTC)
  std::optional<int> time(bool allow_sign = true) {
    int sign = 1;
    if (allow_sign && i < s.size() && (s[i] == '+' || s[i] == '-')) sign = s[i++] == '-' ? -1 : 1;
    int parts[3] = {0, 0, 0};
    for (int k = 0; k < 3; ++k) {
      size_t b = i;
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
      if (i == b) return k == 0 ? std::nullopt : std::optional<int>(sign * (parts[0] * 3600 + parts[1] * 60));
      parts[k] = std::stoi(s.substr(b, i - b));
      if (k < 2 && i < s.size() && s[i] == ':')
        ++i;
      else
        break;
    }
    return sign * (parts[0] * 3600 + parts[1] * 60 + parts[2]);
  }
  // Mm.w.d[/time]
  bool mrule(int& month, int& week, int& day, int& t) {
    if (i >= s.size() || s[i] != 'M') return false;
    ++i;
    int v[3];
    for (int k = 0; k < 3; ++k) {
      size_t b = i;
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
      if (i == b) return false;
      v[k] = std::stoi(s.substr(b, i - b));
      if (k < 2) {
        if (i >= s.size() || s[i] != '.') return false;
        ++i;
      }
    }
    month = v[0], week = v[1], day = v[2];
    if (month < 1 || month > 12 || week < 1 || week > 5 || day > 6) return false;
    if (i < s.size() && s[i] == '/') {
      ++i;
      auto tt = time();
      if (!tt) return false;
      t = *tt;
    }
    return true;
  }
};

// Local midnight (as days since the epoch) of the w-th weekday d of month m in year y (w = 5: last).
int64_t rule_day(int64_t y, int m, int w, int d) {
  int64_t first = days_from_civil(y, m, 1);
  int64_t day = first + (d - weekday(first) + 7) % 7 + 7 * (w - 1);
  int ny = m == 12 ? 1 : 0;
  int64_t next_month = days_from_civil(y + ny, m == 12 ? 1 : m + 1, 1);
  while (day >= next_month) day -= 7;
  return day;
}

int footer_offset(const TimeZone::Rule& r, int64_t utc) {
  if (!r.has_dst) return r.std_offset;
  int64_t y;
  int m, d;
  civil_from_days(floor_div(utc + r.std_offset, 86400), y, m, d);
  int64_t start = rule_day(y, r.start_month, r.start_week, r.start_day) * 86400 + r.start_time - r.std_offset;
  int64_t end = rule_day(y, r.end_month, r.end_week, r.end_day) * 86400 + r.end_time - r.dst_offset;
  bool dst = start < end ? (utc >= start && utc < end) : !(utc >= end && utc < start);
  return dst ? r.dst_offset : r.std_offset;
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
  int mo = std::stoi(t.substr(5, 2)), d = std::stoi(t.substr(8, 2));
  if (mo < 1 || mo > 12 || d < 1 || d > 31) return std::nullopt;
  return days_from_civil(std::stoll(t.substr(0, 4)), mo, d) * 86400 + h * 3600 + mi * 60 + s;
}

std::string format_utc_iso(int64_t utc) {
  int64_t days = floor_div(utc, 86400), rem = utc - days * 86400, y;
  int m, d;
  civil_from_days(days, y, m, d);
  std::string w = wall(y, m, d, int(rem / 3600), int(rem / 60 % 60), int(rem % 60));
  w[10] = 'T';
  return w + "Z";
}

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

std::optional<TimeZone::Rule> TimeZone::parse_posix_tz(const std::string& f) {
  Cursor c{f};
  Rule r;
  if (!c.name()) return std::nullopt;
  auto std_west = c.time();
  if (!std_west) return std::nullopt;
  r.std_offset = -*std_west;
  if (c.i == f.size()) return r;
  if (!c.name()) return std::nullopt;
  r.has_dst = true;
  r.dst_offset = r.std_offset + 3600;
  if (c.i < f.size() && f[c.i] != ',') {
    auto dst_west = c.time();
    if (!dst_west) return std::nullopt;
    r.dst_offset = -*dst_west;
  }
  if (c.i >= f.size() || f[c.i++] != ',') return std::nullopt;
  if (!c.mrule(r.start_month, r.start_week, r.start_day, r.start_time)) return std::nullopt;
  if (c.i >= f.size() || f[c.i++] != ',') return std::nullopt;
  if (!c.mrule(r.end_month, r.end_week, r.end_day, r.end_time)) return std::nullopt;
  return c.i == f.size() ? std::optional<Rule>(r) : std::nullopt;
}

Expected<TimeZone> TimeZone::parse(const std::string& spec, const std::string& dir) {
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
  bool safe = spec.find("..") == std::string::npos && spec[0] != '/' && std::all_of(spec.begin(), spec.end(), [](char ch) {
                return std::isalnum(static_cast<unsigned char>(ch)) || ch == '/' || ch == '_' || ch == '-' || ch == '+';
              });
  if (!safe) return Error("--tz: '" + spec + "' is not a zone name" + forms);
  std::ifstream in(dir + "/" + spec, std::ios::binary);
  if (!in) return Error("--tz: no zone '" + spec + "' in " + dir + " (Debian package tzdata)" + forms);
  std::stringstream ss;
  ss << in.rdbuf();
  auto d = read_tzif(ss.str());
  if (!d) return Error("--tz: " + dir + "/" + spec + " is not a TZif zone file" + forms);
  TimeZone z;
  z.name_ = spec;
  z.is_fixed_ = false;
  z.transitions_ = std::move(d->times);
  z.offsets_ = std::move(d->offsets);
  z.initial_offset_ = d->initial;
  if (!d->footer.empty()) z.footer_ = parse_posix_tz(d->footer);
  return z;
}

int TimeZone::offset_at_utc(int64_t utc) const {
  if (is_fixed_) return fixed_offset_;
  if (transitions_.empty() || utc < transitions_.front()) {
    if (transitions_.empty() && footer_) return footer_offset(*footer_, utc);
    return initial_offset_;
  }
  if (utc >= transitions_.back() && footer_) return footer_offset(*footer_, utc);
  auto it = std::upper_bound(transitions_.begin(), transitions_.end(), utc);
  return offsets_[static_cast<size_t>(it - transitions_.begin()) - 1];
}

int64_t TimeZone::local_to_utc(int64_t local) const {
  int64_t u = local - offset_at_utc(local);
  return local - offset_at_utc(u);
}

}  // namespace mplan::runs
