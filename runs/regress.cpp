// Regression detection: level shifts and run-to-run noise of each plan's history, the baseline, the
// noise band, status and explanation (see docs/runs.md, "Regression rule and noise model").
#include "runs/regress.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "core/stats.h"

namespace mplan::runs {

using stats::kMedianStdErrFactor;
using stats::median;

namespace {

// A change within this of the threshold counts as reaching it (floating-point rounding of MFU ratios).
constexpr double kTolerance = 1e-9;

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

bool has_tag(const RunRecord& r, const std::string& tag) { return std::find(r.tags.begin(), r.tags.end(), tag) != r.tags.end(); }

// Standard error of a run's median MFU from its step-to-step noise.
double median_stderr(const RunRecord& r) {
  if (r.summary.steps_measured <= 0) return 0;
  return kMedianStdErrFactor * r.summary.mfu_spread / std::sqrt(double(r.summary.steps_measured));
}

// Expected maximum of m independent standard normal values (the best of m runs sits that many
// sigmas above their mean even without any change).
double expected_max_sigmas(size_t m) {
  static const double table[] = {0, 0, 0.5642, 0.8463, 1.0294, 1.1630, 1.2672, 1.3522, 1.4236, 1.4850, 1.5388};
  if (m < 11) return table[m];
  return std::sqrt(2.0 * std::log(double(m)));
}

enum class Kind { median_last, best_of_last, tag };

struct Baseline {
  Kind kind = Kind::median_last;
  int n = 0;
  std::vector<const RunRecord*> runs;  // the runs the baseline value comes from
  double value = 0;
  double var_factor = 1;   // variance of the baseline value in units of sigma^2
  double bias_sigmas = 0;  // selection bias of best-of (in sigmas)
  std::string what;        // for the explanation
};

// Noise band: kNoiseZ x sigma x sqrt(1 + var_factor) (+ the best-of bias) with the run-to-run sigma;
// at least the uncertainty of the two medians from within-run step noise.
void noise_band(PlanRegression& p, const Baseline& b, const RunRecord& latest) {
  std::vector<double> se;
  for (const RunRecord* r : b.runs) se.push_back(median_stderr(*r));
  double se_base = median(se) / std::sqrt(double(b.runs.size()));
  double se_latest = median_stderr(latest);
  double floor = 2.0 * std::sqrt(se_base * se_base + se_latest * se_latest);
  if (!p.run_sigma_known) {
    p.noise_mfu = floor;
    p.noise_basis =
        "within-run step noise (fewer than " + std::to_string(kMinRunsForSigma) + " earlier runs to measure run-to-run noise)";
    return;
  }
  double band = kNoiseZ * p.run_sigma_mfu * std::sqrt(1.0 + b.var_factor) + b.bias_sigmas * p.run_sigma_mfu;
  if (band >= floor) {
    p.noise_mfu = band;
    p.noise_basis = "3 sigma of run-to-run noise, sigma " + pct(100 * p.run_sigma_mfu / b.value, 2) + " from the scatter of " +
                    std::to_string(p.history.size() - 1) + " earlier runs around their running median and their level" +
                    (b.bias_sigmas > 0 ? ", plus the best-of selection bias" : "");
  } else {
    p.noise_mfu = floor;
    p.noise_basis = "within-run step noise (exceeds the run-to-run noise)";
  }
}

// Status and explanation from the change against the baseline, the threshold and the noise band.
void classify(PlanRegression& p, double threshold_pct, const std::string& what) {
  const double base = p.baseline_mfu, diff = p.latest_mfu - base;
  p.change_pct = diff / base * 100.0;
  p.noise_pct = p.noise_mfu / base * 100.0;
  std::string cmp = "MFU " + mfu_pct(p.latest_mfu) + " vs " + what + " " + mfu_pct(base) + " (" + (p.change_pct >= 0 ? "+" : "") +
                    pct(p.change_pct) + ")";
  if (p.change_pct <= -threshold_pct + kTolerance) {
    if (-diff > p.noise_mfu) {
      p.status = "regression";
      p.explanation = cmp + ": the drop reaches the " + pct(threshold_pct) + " threshold and exceeds the noise band " + "of " +
                      pct(p.noise_pct) + " (" + p.noise_basis + ")";
    } else {
      p.status = "within-noise";
      p.explanation = cmp + ": beyond the " + pct(threshold_pct) + " threshold but inside the noise band of " + pct(p.noise_pct) +
                      " (" + p.noise_basis + "); not a regression";
    }
  } else if (p.change_pct >= threshold_pct - kTolerance && diff > p.noise_mfu) {
    p.status = "improved";
    p.explanation = cmp + ": faster beyond the " + pct(threshold_pct) + " threshold and the noise band of " + pct(p.noise_pct) +
                    "; consider tagging this run as the new baseline";
  } else {
    p.status = "ok";
    p.explanation = cmp + ": within the " + pct(threshold_pct) + " threshold" +
                    (std::fabs(p.change_pct) >= threshold_pct ? " or the noise band of " + pct(p.noise_pct) : "");
  }
}

// The baseline of `prev` (oldest first) from the runs at the current level (last-N), the last N runs
// (best-of-last-N), or the newest tagged run. False when there is none (`why` says so).
bool choose_baseline(const std::vector<const RunRecord*>& prev, size_t level_start, const RegressOptions& opt, Baseline& b,
                     std::string& why) {
  if (b.kind == Kind::tag) {
    auto it = std::find_if(prev.rbegin(), prev.rend(), [&](const RunRecord* r) { return has_tag(*r, opt.baseline); });
    if (it == prev.rend()) return why = "no earlier run of this plan is tagged '" + opt.baseline + "'", false;
    b.runs = {*it};
    b.value = (*it)->summary.mfu;
    b.var_factor = 1.0;
    b.what = "tagged run #" + std::to_string((*it)->id) + " '" + opt.baseline + "'";
    return true;
  }
  if (prev.empty()) return why = "first run of this plan: nothing to compare with yet", false;
  size_t from = b.kind == Kind::median_last ? level_start : 0;
  size_t n = std::min(prev.size() - from, size_t(b.n));
  b.runs.assign(prev.end() - n, prev.end());
  std::vector<double> m;
  for (const RunRecord* r : b.runs) m.push_back(r->summary.mfu);
  if (b.kind == Kind::median_last) {
    b.value = median(m);
    b.var_factor = kMedianStdErrFactor * kMedianStdErrFactor / double(n);
    b.what = "baseline (median of " + std::to_string(n) + " run" + (n > 1 ? "s" : "") +
             (from > 0 ? " since the level shift at run #" + std::to_string(prev[from]->id) : "") + ")";
  } else {
    auto best = std::max_element(b.runs.begin(), b.runs.end(),
                                 [](const RunRecord* a, const RunRecord* c) { return a->summary.mfu < c->summary.mfu; });
    b.value = (*best)->summary.mfu;
    b.var_factor = 1.0;
    b.bias_sigmas = expected_max_sigmas(n);
    b.what = "best of the last " + std::to_string(n) + " (run #" + std::to_string((*best)->id) + ")";
    b.runs = {*best};
  }
  return true;
}

PlanRegression evaluate_plan(std::vector<const RunRecord*> runs, const RegressOptions& opt, Kind kind, int n) {
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
  std::vector<double> x;
  x.reserve(prev.size());
  for (const RunRecord* r : prev) x.push_back(r->summary.mfu);
  auto noise = estimate_noise(x, opt.threshold_pct);
  size_t level_start = 0;
  if (noise) {
    p.run_sigma_known = true;
    p.run_sigma_mfu = noise->sigma;
    for (size_t i : noise->level_starts) {
      p.level_shifts.push_back(prev[i]->id);
      level_start = i;
    }
  }
  Baseline b;
  b.kind = kind;
  b.n = n;
  std::string why;
  if (!choose_baseline(prev, level_start, opt, b, why)) {
    p.status = "no-baseline";
    p.explanation = kind == Kind::tag && has_tag(latest, opt.baseline)
                        ? "the latest run is the one tagged '" + opt.baseline + "': nothing older to compare with"
                        : why;
    return p;
  }
  for (const RunRecord* r : b.runs) p.baseline_ids.push_back(r->id);
  p.baseline_mfu = b.value;
  if (p.baseline_mfu <= 0) {
    p.status = "no-baseline";
    p.explanation = "the baseline run has no measured MFU";
    return p;
  }
  noise_band(p, b, latest);
  classify(p, opt.threshold_pct, b.what);
  return p;
}

int parse_suffix_n(const std::string& b, const std::string& prefix) {
  if (b.rfind(prefix, 0) != 0 || b.size() == prefix.size()) return 0;
  int n = 0;
  for (size_t i = prefix.size(); i < b.size(); ++i) {
    if (b[i] < '0' || b[i] > '9' || n > 100000) return 0;
    n = n * 10 + (b[i] - '0');
  }
  return n;
}

}  // namespace

int RegressReport::regressions() const {
  return static_cast<int>(std::count_if(plans.begin(), plans.end(), [](const auto& p) { return p.failed(); }));
}

int parse_last_n(const std::string& b) { return parse_suffix_n(b, "last-"); }
int parse_best_of_last_n(const std::string& b) { return parse_suffix_n(b, "best-of-last-"); }

std::optional<double> run_to_run_sigma(const std::vector<double>& x) {
  if (x.size() < size_t(kMinRunsForSigma)) return std::nullopt;
  // Each inner run's deviation from the median of itself and its two neighbours. A running median of
  // three reproduces steps, ramps and trends exactly, so only the run-to-run scatter remains; for
  // independent normal noise of sigma s the RMS deviation is kMedian3Rms x s.
  double ss = 0;
  for (size_t i = 1; i + 1 < x.size(); ++i) {
    double lo = std::min({x[i - 1], x[i], x[i + 1]}), hi = std::max({x[i - 1], x[i], x[i + 1]});
    double med = x[i - 1] + x[i] + x[i + 1] - lo - hi;
    ss += (x[i] - med) * (x[i] - med);
  }
  return std::sqrt(ss / double(x.size() - 2)) / kMedian3Rms;
}

std::vector<size_t> level_shift_starts(const std::vector<double>& x, double sigma, double threshold_pct) {
  std::vector<size_t> out;
  if (x.size() < 2) return out;
  std::vector<double> d;
  for (size_t i = 1; i < x.size(); ++i) d.push_back(x[i] - x[i - 1]);
  double center = median(d);
  for (size_t i = 1; i < x.size(); ++i) {
    double di = x[i] - x[i - 1];
    bool significant = std::fabs(di - center) > kShiftZ * std::sqrt(2.0) * sigma;
    bool material = std::fabs(di) >= 0.5 * threshold_pct / 100.0 * std::fabs(x[i - 1]);
    if (significant && material) out.push_back(i);
  }
  return out;
}

std::optional<NoiseEstimate> estimate_noise(const std::vector<double>& x, double threshold_pct) {
  auto s3 = run_to_run_sigma(x);
  if (!s3) return std::nullopt;
  NoiseEstimate e;
  e.level_starts = level_shift_starts(x, *s3, threshold_pct);
  std::vector<size_t> bounds = {0};
  bounds.insert(bounds.end(), e.level_starts.begin(), e.level_starts.end());
  bounds.push_back(x.size());
  double ss = 0;
  size_t dof = 0;
  for (size_t k = 0; k + 1 < bounds.size(); ++k) {
    size_t a = bounds[k], b = bounds[k + 1];
    if (b - a < 2) continue;
    double mean = 0;
    for (size_t i = a; i < b; ++i) mean += x[i] / double(b - a);
    for (size_t i = a; i < b; ++i) ss += (x[i] - mean) * (x[i] - mean);
    dof += b - a - 1;
  }
  e.sigma = dof >= 2 ? 0.5 * (*s3 + std::sqrt(ss / double(dof))) : *s3;
  return e;
}

Expected<RegressReport> detect_regressions(const std::vector<RunRecord>& runs, const RegressOptions& opt) {
  std::vector<std::string> problems;
  if (!(opt.threshold_pct >= 0) || opt.threshold_pct >= 100)
    problems.push_back("--threshold: " + pct(opt.threshold_pct) + " is not a percentage in [0, 100)");
  int last_n = parse_last_n(opt.baseline), best_n = parse_best_of_last_n(opt.baseline);
  bool looks_last = opt.baseline.rfind("last-", 0) == 0, looks_best = opt.baseline.rfind("best-of-last-", 0) == 0;
  if (opt.baseline.empty() || (looks_last && last_n <= 0) || (looks_best && best_n <= 0))
    problems.push_back("--baseline: '" + opt.baseline +
                       "' is neither last-N, best-of-last-N (N >= 1, e.g. last-5, "
                       "best-of-last-10) nor a tag");
  if (!problems.empty()) return Error(problems);
  Kind kind = last_n > 0 ? Kind::median_last : best_n > 0 ? Kind::best_of_last : Kind::tag;
  if (kind == Kind::tag) {
    bool any = std::any_of(runs.begin(), runs.end(), [&](const RunRecord& r) { return has_tag(r, opt.baseline); });
    if (!any)
      return Error("--baseline: no run is tagged '" + opt.baseline + "'; tag one with 'mplan runs tag --db FILE ID " +
                   opt.baseline + "' or use last-N / best-of-last-N");
  }
  std::map<std::string, std::vector<const RunRecord*>> by_plan;
  for (const auto& r : runs)
    if (r.summary.mfu > 0) by_plan[r.plan_key].push_back(&r);
  RegressReport rep;
  rep.baseline = opt.baseline;
  rep.threshold_pct = opt.threshold_pct;
  for (auto& [key, v] : by_plan) rep.plans.push_back(evaluate_plan(v, opt, kind, kind == Kind::median_last ? last_n : best_n));
  return rep;
}

}  // namespace mplan::runs
