// Levenshtein distance and closest-name suggestions for error messages.
#include "core/suggest.h"

#include <algorithm>
#include <cctype>

namespace mplan {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (std::tolower(a[i - 1]) == std::tolower(b[j - 1]) ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest_match(std::string_view name, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const auto& c : candidates) {
    size_t d = edit_distance(name, c);
    // a candidate that contains the name (e.g. "405b" in "llama3.1-405b") is a good suggestion too
    if (!name.empty() && c.find(name) != std::string::npos) d = std::min(d, c.size() - name.size() > 0 ? size_t{1} : 0);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  size_t limit = std::max<size_t>(2, name.size() / 3);
  return best_d <= limit ? best : std::string();
}

std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates) {
  std::string m = closest_match(name, candidates);
  return m.empty() ? std::string() : " (did you mean '" + m + "'?)";
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += sep;
    out += items[i];
  }
  return out;
}

}  // namespace mplan
