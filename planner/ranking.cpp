// Candidate ordering and the top-K container (see ranking.h).
#include "planner/ranking.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

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

std::string separating_measurement(const StepReport& a, const StepReport& b) {
  const TimeBreakdown &x = a.time, &y = b.time;
  struct Part {
    const char* what;
    double diff;
    const char* measure;
  };
  std::vector<Part> parts = {
      {"compute", x.compute - y.compute, ""},
      {"recompute", x.recompute - y.recompute, "the forward kernels re-run in the backward (one step of each with mplan verify)"},
      {"exposed TP communication", x.tp_comm_exposed - y.tp_comm_exposed,
       "all-gather / reduce-scatter bandwidth over the tensor-parallel ranks (nccl-tests)"},
      {"exposed CP communication", x.cp_comm_exposed - y.cp_comm_exposed, "send/recv bandwidth between context-parallel ranks"},
      {"exposed EP communication", x.ep_comm_exposed - y.ep_comm_exposed,
       "all-to-all bandwidth over the expert-parallel ranks (nccl-tests alltoall_perf) and the routing load"},
      {"exposed DP communication", x.dp_comm_exposed - y.dp_comm_exposed, "reduce-scatter / all-gather bandwidth across nodes"},
      {"pipeline transfers", x.pp_p2p_exposed - y.pp_p2p_exposed, "point-to-point latency between pipeline stages"},
      {"activation offloading", x.offload_exposed - y.offload_exposed, "the device-to-host copy rate"},
      {"pipeline bubble", x.bubble - y.bubble, "each stage's forward and backward time (a profiled step)"},
      {"optimizer", x.optimizer - y.optimizer, "the optimizer step time"}};
  const Part* best = &parts[0];
  for (const Part& p : parts)
    if (std::fabs(p.diff) > std::fabs(best->diff)) best = &p;
  std::string measure = best->measure;
  if (best == &parts[0]) {
    // compute: the op whose predicted time differs most
    std::string op;
    double d = 0;
    for (const OpTime& o : a.ops) {
      double other = 0;
      for (const OpTime& q : b.ops)
        if (q.name == o.name) other = q.time_s;
      if (std::fabs(o.time_s - other) > std::fabs(d)) d = o.time_s - other, op = o.name;
    }
    measure = op.empty() ? "the kernel rates on one GPU (mplan profile --backend cuda)"
                         : "the " + op + " kernels at both shapes (mplan profile --backend cuda)";
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, " (%+.3f s per step)", best->diff);
  return "they differ most in " + std::string(best->what) + buf + ": measure " + measure;
}

void mark_ties(std::vector<Candidate>& ranked) {
  if (ranked.empty()) return;
  const StepReport& w = ranked.front().report;
  if (!(w.step_time_s_interval.second > 0)) return;
  for (size_t i = 1; i < ranked.size(); ++i) {
    const StepReport& r = ranked[i].report;
    ranked[i].tied_with_best = r.step_time_s_interval.second > 0 && r.step_time_s_interval.first <= w.step_time_s_interval.second;
    if (ranked[i].tied_with_best) ranked[i].separate_by = separating_measurement(r, w);
  }
}

double TopK::threshold() const {
  if (items_.size() < k_) return std::numeric_limits<double>::infinity();
  const StepReport& r = items_.back().report;
  return obj_ == Objective::memory_headroom ? r.peak_memory_gib : r.step_time_s;
}

}  // namespace mplan::planner
