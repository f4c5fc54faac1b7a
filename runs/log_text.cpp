// Text helpers of the log parsers (see log_text.h).
#include "runs/log_text.h"

#include <cctype>
#include <cstdlib>

namespace mplan::runs {

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::vector<std::string> split_bar(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == '|') {
      out.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  return out;
}

std::optional<double> to_double(const std::string& s) {
  std::string t = trim(s);
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(t.c_str(), &end);
  if (end == t.c_str()) return std::nullopt;
  return v;
}

std::optional<int64_t> to_int(const std::string& s) {
  std::string t = trim(s);
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  long long v = std::strtoll(t.c_str(), &end, 10);
  if (end == t.c_str()) return std::nullopt;
  return static_cast<int64_t>(v);
}

bool key_value(const std::string& field, std::string& key, std::string& value) {
  size_t c = field.rfind(':');
  if (c == std::string::npos) return false;
  key = trim(field.substr(0, c));
  value = trim(field.substr(c + 1));
  return !key.empty();
}

namespace {

// "[default7]:" / "[trainer12]:" at `pos`: returns the length, 0 when absent.
size_t torchrun_prefix(const std::string& s, size_t pos) {
  if (pos >= s.size() || s[pos] != '[') return 0;
  size_t i = pos + 1, name = i;
  while (i < s.size() && (std::isalpha(static_cast<unsigned char>(s[i])) || s[i] == '_')) ++i;
  size_t digits = i;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  if (i == name || i == digits || i >= s.size() || s[i] != ']') return 0;
  if (i + 1 >= s.size() || s[i + 1] != ':') return 0;
  return i + 2 - pos;
}

// "12: " (srun --label) at `pos`: returns the length, 0 when absent.
size_t srun_prefix(const std::string& s, size_t pos) {
  size_t i = pos;
  while (i < s.size() && s[i] == ' ') ++i;  // srun right-aligns the task id for large jobs
  size_t d = i;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  if (i == d || i - d > 6 || i + 1 >= s.size() || s[i] != ':' || s[i + 1] != ' ') return 0;
  return i + 2 - pos;
}

}  // namespace

std::string strip_rank_prefix(const std::string& line, std::string* prefix) {
  size_t pos = 0;
  for (int k = 0; k < 2; ++k) {
    size_t n = torchrun_prefix(line, pos);
    if (n == 0) n = srun_prefix(line, pos);
    if (n == 0) break;
    pos += n;
  }
  if (prefix) *prefix = line.substr(0, pos);
  return line.substr(pos);
}

}  // namespace mplan::runs
