// Regression detection: baseline per plan, noise band, status and explanation (see docs/runs.md,
// "Regression rule and noise model").
#include "runs/regress.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "runs/stats.h"

namespace mplan::runs {

namespace {

// Runs of the noise window when the baseline is a tag.
constexpr int kTagNoiseWindow = 5;

std::string pct(double v, int decimals = 1) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f%%", decimals, v);
  return buf;
}

std::string mfu_pct(double mfu) { return pct(mfu * 100.0, 2); }

bool older(const RunRecord* a, const RunRecord* b) {
  if (a->started_at != b->started_at) return a->started_at < b->started_at;
  return a->id < b->id;
}

bool has_tag(const RunRecord& r, const std::string& tag) {
  return std::find(r.tags.begin(), r.tags.end(), tag) != r.tags.end();
}

// Standard error of a run's median MFU from its step-to-step noise.
double median_stderr(const RunRecord& r) {
  if (r.summary.steps_measured <= 0) return 0;
  return kMedianStdErrFactor * r.summary.mfu_spread / std::sqrt(double(r.summary.steps_measured));
}

// Noise band: the run-to-run spread (range) of the recent runs; at least the statistical
// uncertainty of the two medians compared (2 x combined standard error).
void noise_band(PlanRegression& p, const std::vector<const RunRecord*>& window,
                const std::vector<const RunRecord*>& base, const RunRecord& latest) {
  std::vector<double> wm, se;
  for (const RunRecord* r : window) wm.push_back(r->summary.mfu);
  for (const RunRecord* r : base) se.push_back(median_stderr(*r));
  double se_base = median(se) / std::sqrt(double(base.size()));
  double se_latest = median_stderr(latest);
  double floor = 2.0 * std::sqrt(se_base * se_base + se_latest * se_latest);
  double spread = value_range(wm);
  if (spread >= floor && window.size() >= 2) {
    p.noise_mfu = spread;
    p.noise_basis = "run-to-run range of the last " + std::to_string(window.size()) + " runs";
  } else {
    p.noise_mfu = floor;
    p.noise_basis = window.size() >= 2 ? "within-run step noise (exceeds the range of the last " +
                                             std::to_string(window.size()) + " runs)"
                                       : "within-run step noise (fewer than 2 earlier runs to measure run-to-run "
                                         "spread)";
  }
}

// Status and explanation from the change against the baseline, the threshold and the noise band.
void classify(PlanRegression& p, double threshold_pct) {
  const double base = p.baseline_mfu, diff = p.latest_mfu - base;
  p.change_pct = diff / base * 100.0;
  p.noise_pct = p.noise_mfu / base * 100.0;
  std::string cmp = "MFU " + mfu_pct(p.latest_mfu) + " vs baseline " + mfu_pct(base) + " (" +
                    (p.change_pct >= 0 ? "+" : "") + pct(p.change_pct) + ")";
  if (-p.change_pct > threshold_pct) {
    if (-diff > p.noise_mfu) {
      p.status = "regression";
      p.explanation = cmp + ": the drop exceeds the " + pct(threshold_pct) + " threshold and the noise band " +
                      "of " + pct(p.noise_pct) + " (" + p.noise_basis + ")";
    } else {
      p.status = "within-noise";
      p.explanation = cmp + ": beyond the " + pct(threshold_pct) + " threshold but inside the noise band of " +
                      pct(p.noise_pct) + " (" + p.noise_basis + "); not a regression";
    }
  } else if (p.change_pct > threshold_pct && diff > p.noise_mfu) {
    p.status = "improved";
    p.explanation = cmp + ": faster than the baseline beyond threshold and noise";
  } else {
    p.status = "ok";
    p.explanation = cmp + ": within the " + pct(threshold_pct) + " threshold";
  }
}

PlanRegression evaluate_plan(std::vector<const RunRecord*> runs, const RegressOptions& opt, int last_n) {
  std::sort(runs.begin(), runs.end(), older);
  PlanRegression p;
  const RunRecord& latest = *runs.back();
  p.plan_key = latest.plan_key;
  p.label = plan_label(latest.plan);
  p.latest_id = latest.id;
  p.latest_at = latest.started_at;
  p.latest_mfu = latest.summary.mfu;
  p.predicted_mfu = latest.summary.predicted_mfu;
  if (p.predicted_mfu > 0) p.vs_prediction_pct = (p.latest_mfu - p.predicted_mfu) / p.predicted_mfu * 100.0;
  for (const RunRecord* r : runs) p.history.push_back({r->id, r->started_at, r->summary.mfu, r->summary.predicted_mfu});

  std::vector<const RunRecord*> prev(runs.begin(), runs.end() - 1);
  int window_n = last_n > 0 ? last_n : kTagNoiseWindow;
  std::vector<const RunRecord*> window(prev.end() - std::min<size_t>(prev.size(), size_t(window_n)), prev.end());

  std::vector<const RunRecord*> base;
  if (last_n > 0) {
    base = window;
    if (base.empty()) {
      p.status = "no-baseline";
      p.explanation = "first run of this plan: nothing to compare with yet";
      return p;
    }
    std::vector<double> m;
    for (const RunRecord* r : base) m.push_back(r->summary.mfu);
    p.baseline_mfu = median(m);
  } else {
    auto it = std::find_if(prev.rbegin(), prev.rend(), [&](const RunRecord* r) { return has_tag(*r, opt.baseline); });
    if (it == prev.rend()) {
      p.status = "no-baseline";
      p.explanation = has_tag(latest, opt.baseline)
                          ? "the latest run is the one tagged '" + opt.baseline + "': nothing older to compare with"
                          : "no earlier run of this plan is tagged '" + opt.baseline + "'";
      return p;
    }
    base = {*it};
    p.baseline_mfu = (*it)->summary.mfu;
  }
  for (const RunRecord* r : base) p.baseline_ids.push_back(r->id);

  noise_band(p, window, base, latest);
  if (p.baseline_mfu <= 0) {
    p.status = "no-baseline";
    p.explanation = "the baseline run has no measured MFU";
    return p;
  }
  classify(p, opt.threshold_pct);
  return p;
}

}  // namespace

int RegressReport::regressions() const {
  return static_cast<int>(std::count_if(plans.begin(), plans.end(), [](const auto& p) { return p.failed(); }));
}

int parse_last_n(const std::string& b) {
  if (b.rfind("last-", 0) != 0 || b.size() == 5) return 0;
  int n = 0;
  for (size_t i = 5; i < b.size(); ++i) {
    if (b[i] < '0' || b[i] > '9' || n > 100000) return 0;
    n = n * 10 + (b[i] - '0');
  }
  return n;
}

Expected<RegressReport> detect_regressions(const std::vector<RunRecord>& runs, const RegressOptions& opt) {
  std::vector<std::string> problems;
  if (!(opt.threshold_pct >= 0) || opt.threshold_pct >= 100)
    problems.push_back("--threshold: " + pct(opt.threshold_pct) + " is not a percentage in [0, 100)");
  int last_n = parse_last_n(opt.baseline);
  bool looks_last = opt.baseline.rfind("last-", 0) == 0;
  if (opt.baseline.empty() || (looks_last && last_n <= 0))
    problems.push_back("--baseline: '" + opt.baseline + "' is neither last-N (N >= 1, e.g. last-5) nor a tag");
  if (!problems.empty()) return Error(problems);
  if (last_n == 0) {
    bool any = std::any_of(runs.begin(), runs.end(), [&](const RunRecord& r) { return has_tag(r, opt.baseline); });
    if (!any)
      return Error("--baseline: no run is tagged '" + opt.baseline + "'; tag one with 'mplan runs tag --db FILE ID " +
                   opt.baseline + "' or use last-N");
  }
  std::map<std::string, std::vector<const RunRecord*>> by_plan;
  for (const auto& r : runs)
    if (r.summary.mfu > 0) by_plan[r.plan_key].push_back(&r);
  RegressReport rep;
  rep.baseline = opt.baseline;
  rep.threshold_pct = opt.threshold_pct;
  for (auto& [key, v] : by_plan) rep.plans.push_back(evaluate_plan(v, opt, last_n));
  return rep;
}

}  // namespace mplan::runs
