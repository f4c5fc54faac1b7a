// Warm-up flags: segments at restarts, interval starts, the first-N-iterations rule.
#include "runs/warmup.h"

#include <algorithm>
#include <cstddef>
#include <map>

namespace mplan::runs {

namespace {

// Most frequent positive difference between consecutive iterations (the log interval), 1 if none.
int64_t log_interval(const std::vector<int64_t>& it) {
  std::map<int64_t, int> count;
  for (std::size_t i = 1; i < it.size(); ++i)
    if (it[i] > it[i - 1]) ++count[it[i] - it[i - 1]];
  int64_t best = 1;
  int n = 0;
  for (auto [d, c] : count)
    if (c > n) best = d, n = c;
  return best;
}

}  // namespace

WarmupFlags flag_warmup(const std::vector<int64_t>& it, int warmup_iters, const std::vector<bool>& restart) {
  WarmupFlags out;
  out.warmup.assign(it.size(), false);
  out.first.assign(it.size(), 0);
  if (it.empty()) return out;
  int64_t interval = log_interval(it);
  int64_t seg_start = 0, prev = 0;
  for (std::size_t i = 0; i < it.size(); ++i) {
    int64_t first;  // first iteration this measurement averages over
    bool new_segment = i == 0 || it[i] <= prev || (i < restart.size() && restart[i]);
    if (new_segment) {
      if (i > 0) out.restarts.push_back(it[i]);
      if (it[i] % interval == 0)
        seg_start = std::max<int64_t>(std::min<int64_t>(it[i], 0), it[i] - interval + 1);
      else
        seg_start = it[i];
      first = seg_start;
    } else {
      first = prev + 1;
    }
    out.first[i] = first;
    out.warmup[i] = warmup_iters > 0 && first <= seg_start + warmup_iters - 1;
    prev = it[i];
  }
  return out;
}

}  // namespace mplan::runs
