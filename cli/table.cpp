// Text table rendering and number formatting.
#include "cli/table.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

namespace mplan {

// Display width: UTF-8 continuation bytes take no column ("—" is one column, three bytes).
static size_t width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

static bool numeric(const std::string& s) {
  if (s.empty()) return false;
  if (s == "—") return true;  // an absent number keeps the number column's alignment
  char c = s[0];
  return std::isdigit(static_cast<unsigned char>(c)) || ((c == '-' || c == '+' || c == '.') && s.size() > 1);
}

std::string TextTable::render() const {
  std::vector<size_t> w(header_.size(), 0);
  for (size_t i = 0; i < header_.size(); ++i) w[i] = width(header_[i]);
  for (const auto& r : rows_)
    for (size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], width(r[i]));
  std::string out;
  auto line = [&](const std::vector<std::string>& r, bool head) {
    for (size_t i = 0; i < w.size(); ++i) {
      std::string cell = i < r.size() ? r[i] : "";
      bool right = !head && numeric(cell) && i > 0 && !(i < left_.size() && left_[i]);
      if (i) out += "  ";
      std::string pad(w[i] - width(cell), ' ');
      out += right ? pad + cell : cell + (i + 1 < w.size() ? pad : "");
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += '\n';
  };
  line(header_, true);
  std::vector<std::string> rule;
  rule.reserve(w.size());
  for (size_t x : w) rule.emplace_back(x, '-');
  line(rule, true);
  for (const auto& r : rows_) line(r, false);
  return out;
}

std::string fmt(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string fmt_count(double v) {
  double a = std::fabs(v);
  if (a >= 1e12) return fmt(v / 1e12, 2) + " T";
  if (a >= 1e9) return fmt(v / 1e9, 2) + " B";
  if (a >= 1e6) return fmt(v / 1e6, 2) + " M";
  if (a >= 1e3) return fmt(v / 1e3, 2) + " K";
  return fmt(v, 0);
}

std::string fmt_pct(double fraction, int decimals) { return fmt(100.0 * fraction, decimals) + "%"; }

}  // namespace mplan
