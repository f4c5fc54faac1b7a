// Candidate ordering and the top-K container (see ranking.h).
#include "planner/ranking.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <map>
#include <optional>

#include "core/ops.h"
#include "planner/layout.h"

namespace mplan::planner {

bool ranks_before(Objective obj, const Candidate& a, const Candidate& b) {
  if (obj == Objective::memory_headroom && a.report.peak_memory_gib != b.report.peak_memory_gib)
    return a.report.peak_memory_gib < b.report.peak_memory_gib;
  if (a.report.step_time_s != b.report.step_time_s) return a.report.step_time_s < b.report.step_time_s;
  return from_parallel(a.plan.parallel) < from_parallel(b.plan.parallel);
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
    // compute: the compute op (not a collective, whose time is in the exposed parts) whose predicted
    // time differs most
    std::string op;
    double d = 0;
    for (const OpTime& o : a.ops) {
      std::optional<OpId> id = op_id(o.name);
      if (id && op_info(*id).kind == OpKind::comm) continue;
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

Layout group_key(const Layout& l) {
  Layout k = l;
  k.vpp = 1;
  if (k.schedule == Schedule::interleaved) k.schedule = Schedule::one_f_one_b;
  k.pipe = PipeLayout::even;
  k.first_layers = k.last_layers = 0;
  k.overlap = 0;
  k.a2a = 0;
  return k;
}

bool interval_overlaps(const StepReport& best, const StepReport& member) {
  return best.step_time_s_interval.second > 0 && member.step_time_s_interval.second > 0 &&
         member.step_time_s_interval.first <= best.step_time_s_interval.second;
}

namespace {

// The group of the i-th candidate (best first; report(i) its report, key(i) its structure's id, ids dense
// from 0 to `keys`), numbered in order of the bests; is_best marks the bests.
template <class Report, class Key>
std::vector<size_t> assign_groups(size_t n, size_t keys, Report report, Key key, bool distinct, std::vector<char>& is_best) {
  std::vector<size_t> group(n);
  is_best.assign(n, 0);
  std::vector<size_t> last_best(keys, SIZE_MAX);  // structure -> index of the last group best with it
  size_t groups = 0;
  for (size_t i = 0; i < n; ++i) {
    if (distinct) {
      size_t& lb = last_best[key(i)];
      if (lb != SIZE_MAX && interval_overlaps(report(lb), report(i))) {
        group[i] = group[lb];
        continue;
      }
      lb = i;
    }
    is_best[i] = 1;
    group[i] = groups++;
  }
  return group;
}

double objective_key(Objective obj, const Candidate& c) {
  return obj == Objective::memory_headroom ? c.report.peak_memory_gib : c.report.step_time_s;
}

// step time / lower end of the interval: how far above a best's step time its interval reaches, per side
double interval_ratio(const StepReport& r) {
  return r.step_time_s_interval.first > 0 ? r.step_time_s_interval.second / r.step_time_s_interval.first : 1.0;
}

}  // namespace

int GroupedTop::key_id(const Layout& l) {
  auto [it, inserted] = key_ids_.emplace(group_key(l), int(key_layouts_.size()));
  if (inserted) key_layouts_.push_back(it->first);
  return it->second;
}

void GroupedTop::offer(Candidate c) {
  if (!distinct_ && items_.size() >= k_ && !ranks_before(obj_, c, *items_.back().c)) return;  // not in the top K
  if (distinct_ && c.report.step_time_s > keep_limit_) return;  // can neither lead nor join a top group
  const int key = key_id(from_parallel(c.plan.parallel));
  pending_.push_back({std::make_unique<Candidate>(std::move(c)), key});
}

std::vector<size_t> GroupedTop::groups(std::vector<char>& is_best) const {
  return assign_groups(
      items_.size(), key_layouts_.size(), [&](size_t i) -> const StepReport& { return items_[i].c->report; },
      [&](size_t i) { return size_t(items_[i].key); }, distinct_, is_best);
}

void GroupedTop::settle() {
  if (pending_.empty()) return;
  auto before = [&](const Item& a, const Item& b) { return ranks_before(obj_, *a.c, *b.c); };
  std::sort(pending_.begin(), pending_.end(), before);
  std::vector<Item> merged;
  merged.reserve(items_.size() + pending_.size());
  std::merge(std::make_move_iterator(items_.begin()), std::make_move_iterator(items_.end()),
             std::make_move_iterator(pending_.begin()), std::make_move_iterator(pending_.end()), std::back_inserter(merged),
             before);
  items_ = std::move(merged);
  pending_.clear();
  std::vector<char> is_best;
  std::vector<size_t> group = groups(is_best);
  size_t kth = items_.size();
  for (size_t i = 0; i < items_.size() && kth == items_.size(); ++i)
    if (is_best[i] && group[i] + 1 == k_) kth = i;
  if (kth == items_.size()) return;
  threshold_ = objective_key(obj_, *items_[kth].c);
  if (!distinct_) {  // the top K and nothing else
    items_.erase(items_.begin() + std::ptrdiff_t(kth + 1), items_.end());
    return;
  }
  // Whatever is slower than the K-th best by more than the interval allows can never join a top group
  // (the K-th best only falls); drop it.
  double ratio = 1;
  for (const Item& it : items_) ratio = std::max(ratio, interval_ratio(it.c->report));
  keep_limit_ = threshold_ * ratio * (1 + 1e-12);
  size_t keep = items_.size();
  while (keep > kth + 1 && items_[keep - 1].c->report.step_time_s > keep_limit_) --keep;
  items_.erase(items_.begin() + std::ptrdiff_t(keep), items_.end());
}

std::vector<std::pair<Layout, double>> GroupedTop::member_limits() {
  settle();
  std::vector<std::pair<Layout, double>> out;
  if (!distinct_) return out;
  std::vector<char> is_best;
  std::vector<size_t> group = groups(is_best);
  for (size_t i = 0; i < items_.size(); ++i)
    if (is_best[i] && group[i] < k_)
      out.emplace_back(key_layouts_[size_t(items_[i].key)],
                       items_[i].c->report.step_time_s * interval_ratio(items_[i].c->report));
  return out;
}

GroupedResult GroupedTop::take() {
  settle();
  std::vector<Candidate> ranked;
  ranked.reserve(items_.size());
  for (Item& it : items_) ranked.push_back(std::move(*it.c));
  items_.clear();
  return group_ranked(std::move(ranked), k_, distinct_);
}

std::vector<std::string> rejection_reasons(const SearchStats& st, int64_t nonfit_simulated, double cap_gib,
                                           const std::string& gpu, double closest_gib, const Layout& closest, bool no_structures,
                                           int world) {
  std::vector<std::pair<int64_t, std::string>> r;
  int64_t mem = st.pruned_memory + nonfit_simulated;
  if (mem > 0) {
    std::string s = "does not fit: " + std::to_string(mem) + " layouts exceed the " + std::to_string(int(std::lround(cap_gib))) +
                    " GiB of " + gpu;
    if (std::isfinite(closest_gib)) {
      char b[96];
      std::snprintf(b, sizeof b, " (closest: %.1f GiB with ", closest_gib);
      s += b + short_name(closest) + ")";
    }
    r.emplace_back(mem, s);
  }
  for (const auto& [rule_name, n] : st.rejected_by_rule) r.emplace_back(n, rule_name + ": " + std::to_string(n) + " layouts");
  if (no_structures)
    r.emplace_back(1, "no layout matches --fix/--max for " + std::to_string(world) +
                          " GPUs (tp*pp*cp*dp must equal the GPU count and dp must divide the global batch)");
  std::stable_sort(r.begin(), r.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> out;
  for (size_t k = 0; k < r.size() && k < 5; ++k) out.push_back(r[k].second);
  return out;
}

}  // namespace mplan::planner

namespace mplan {

GroupedResult group_ranked(std::vector<Candidate> ranked, size_t k, bool distinct) {
  std::map<planner::Layout, size_t> ids;
  std::vector<size_t> keys;
  keys.reserve(ranked.size());
  for (const Candidate& c : ranked)
    keys.push_back(ids.emplace(planner::group_key(planner::from_parallel(c.plan.parallel)), ids.size()).first->second);
  std::vector<char> is_best;
  std::vector<size_t> group = planner::assign_groups(
      ranked.size(), ids.size(), [&](size_t i) -> const StepReport& { return ranked[i].report; },
      [&](size_t i) { return keys[i]; }, distinct, is_best);
  GroupedResult out;
  for (size_t i = 0; i < ranked.size(); ++i) {
    if (group[i] >= k) continue;
    if (is_best[i]) {
      out.best.push_back(std::move(ranked[i]));
      out.folded.emplace_back();
    } else {
      out.folded[group[i]].push_back(std::move(ranked[i]));
    }
  }
  return out;
}

}  // namespace mplan
