// Stand-in search used only when the planner library is not built: every combination of a small
// space (tp, pp, vpp, mbs, zero, recompute; dp from the rest) checked with validate_layout and
// simulated; fitting layouts ranked by step time. Same result types as planner/planner.h.
#include <algorithm>
#include <chrono>
#include <map>

#include "gui/models/search_backend.h"

namespace mplan::gui {

namespace {

std::vector<int> powersUpTo(int limit) {
  std::vector<int> v;
  for (int x = 1; x <= limit; x *= 2) v.push_back(x);
  return v;
}

std::vector<int> choices(const SearchOptions& opt, const std::string& key, std::vector<int> all) {
  if (auto f = opt.fix.find(key); f != opt.fix.end()) return {f->second};
  if (auto m = opt.max.find(key); m != opt.max.end())
    all.erase(std::remove_if(all.begin(), all.end(), [&](int v) { return v > m->second; }), all.end());
  return all;
}

}  // namespace

Expected<SearchResult> fallbackSearch(const Plan& job, const Calibration& cal, const SearchOptions& opt) {
  auto t0 = std::chrono::steady_clock::now();
  SearchResult res;
  const int world = job.parallel.world_size;
  const CostParams params = cal.params_for(job.cluster.gpu);
  std::vector<ParallelConfig> space;
  for (int tp : choices(opt, "tp", powersUpTo(std::min(world, job.cluster.nvlink_domain_size))))
    for (int pp : choices(opt, "pp", powersUpTo(std::min(world, 16))))
      for (int vpp : choices(opt, "vpp", {1, 2, 4}))
        for (int mbs : choices(opt, "mbs", {1, 2, 4}))
          for (int zero : choices(opt, "zero", {0, 1}))
            for (Recompute rc : {Recompute::none, Recompute::selective, Recompute::full}) {
              if (vpp > 1 && pp == 1) continue;
              ParallelConfig p;
              p.world_size = world;
              p.tp = tp;
              p.sp = tp > 1;
              p.pp = pp;
              p.vpp = vpp;
              p.micro_batch_size = mbs;
              p.zero = zero;
              p.recompute = rc;
              p.schedule = vpp > 1 ? Schedule::interleaved : Schedule::one_f_one_b;
              if (tp * pp > world || world % (tp * pp) != 0) continue;
              if (auto d = opt.fix.find("dp"); d != opt.fix.end() && p.dp() != d->second) continue;
              space.push_back(p);
            }
  std::map<std::string, int64_t> reasons;
  std::vector<Candidate> fits;
  for (size_t i = 0; i < space.size(); ++i) {
    if (opt.cancel && opt.cancel->load()) {
      res.cancelled = true;
      break;
    }
    if (opt.progress) opt.progress(double(i) / double(space.size()));
    ++res.stats.enumerated;
    Plan plan = job;
    plan.parallel = space[i];
    auto problems = validate_layout(plan.model, plan.cluster, plan.training, plan.parallel);
    if (!problems.empty()) {
      ++res.stats.rejected;
      for (const auto& pr : problems) {
        ++res.stats.rejected_by_rule[pr.substr(0, pr.find(' '))];
        ++reasons[pr];
      }
      continue;
    }
    auto rep = simulate(plan, params);
    ++res.stats.simulated;
    if (!rep) {
      ++res.stats.rejected;
      ++reasons[rep.error().message()];
      continue;
    }
    if (!rep->fits) {
      ++res.stats.rejected;
      ++reasons["does not fit in GPU memory"];
      continue;
    }
    ++res.stats.fits;
    fits.push_back({plan, rep.value()});
  }
  if (opt.progress) opt.progress(1.0);
  std::stable_sort(fits.begin(), fits.end(), [&](const Candidate& a, const Candidate& b) {
    if (opt.objective == Objective::memory_headroom) return a.report.peak_memory_gib < b.report.peak_memory_gib;
    return a.report.step_time_s < b.report.step_time_s;
  });
  if (int(fits.size()) > opt.top_k) fits.resize(size_t(opt.top_k));
  res.top = std::move(fits);
  if (res.top.empty()) {
    std::vector<std::pair<int64_t, std::string>> byCount;
    for (auto& [r, n] : reasons) byCount.push_back({n, r});
    std::sort(byCount.begin(), byCount.end(), [](auto& a, auto& b) { return a.first > b.first; });
    for (size_t i = 0; i < byCount.size() && i < 5; ++i)
      res.top_rejection_reasons.push_back(byCount[i].second + " (" + std::to_string(byCount[i].first) + " layouts)");
  }
  res.stats.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

}  // namespace mplan::gui
