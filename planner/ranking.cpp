// Candidate ordering and the top-K container (see ranking.h).
#include "planner/ranking.h"

#include <algorithm>

#include "planner/layout.h"

namespace mplan::planner {

bool ranks_before(Objective obj, const Candidate& a, const Candidate& b) {
  if (obj == Objective::memory_headroom && a.report.peak_memory_gib != b.report.peak_memory_gib)
    return a.report.peak_memory_gib < b.report.peak_memory_gib;
  if (a.report.step_time_s != b.report.step_time_s) return a.report.step_time_s < b.report.step_time_s;
  return from_parallel(a.plan.parallel) < from_parallel(b.plan.parallel);
}

void TopK::offer(Candidate c) {
  if (items_.size() >= k_ && !ranks_before(obj_, c, items_.back())) return;
  auto pos = std::upper_bound(items_.begin(), items_.end(), c,
                              [&](const Candidate& x, const Candidate& y) { return ranks_before(obj_, x, y); });
  items_.insert(pos, std::move(c));
  if (items_.size() > k_) items_.pop_back();
}

double TopK::threshold() const {
  if (items_.size() < k_) return std::numeric_limits<double>::infinity();
  const StepReport& r = items_.back().report;
  return obj_ == Objective::memory_headroom ? r.peak_memory_gib : r.step_time_s;
}

}  // namespace mplan::planner
