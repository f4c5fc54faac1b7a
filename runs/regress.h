// MFU regression detection over the runs database: for every plan, the latest run's MFU against a
// baseline (median of the previous N runs at the current level, the best of the previous N, or a
// tagged run) with a noise model that tells run-to-run noise from level shifts (the robust spread of
// consecutive differences; a change-point rule finds the level shifts), and against the simulator's
// prediction. Pure functions over RunRecords (list_runs output), so they are testable on synthetic
// series. The rule with examples: docs/runs.md, "Regression rule and noise model".
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "runs/runs_db.h"

namespace mplan::runs {

struct RegressOptions {
  std::string baseline = "last-5";  // "last-N", "best-of-last-N" or a tag name
  double threshold_pct = 5.0;       // a drop of at least this (percent of the baseline MFU) fails
};

// Constants of the noise model (docs/runs.md).
constexpr double kNoiseZ = 3.0;      // band = kNoiseZ standard deviations of (latest - baseline)
constexpr double kShiftZ = 4.0;      // a level shift: a difference beyond kShiftZ sigmas of a difference
constexpr int kMinRunsForSigma = 5;  // earlier runs needed to estimate run-to-run noise
// RMS of (x - median of x and its two neighbours) for independent unit normal x: sqrt(0.78200).
constexpr double kMedian3Rms = 0.88431;

// One run of a plan's history (oldest first), for tables and plots.
struct HistoryPoint {
  int64_t run_id = 0;
  std::string started_at;
  double mfu = 0;
  double predicted_mfu = 0;  // 0 = no prediction
};

struct PlanRegression {
  std::string plan_key, label;
  int64_t latest_id = 0;
  std::string latest_at;
  double latest_mfu = 0;
  double predicted_mfu = 0;      // latest run's stored prediction (0 = none)
  double vs_prediction_pct = 0;  // (measured - predicted) / predicted x 100, 0 without a prediction
  std::vector<int64_t> baseline_ids;
  double baseline_mfu = 0;
  double noise_mfu = 0;               // the noise band (absolute MFU): changes within it are not regressions
  std::string noise_basis;            // how the band was obtained (for the explanation)
  double run_sigma_mfu = 0;           // run-to-run noise (absolute MFU, one run); 0 when not estimable
  bool run_sigma_known = false;       // at least kMinRunsForSigma earlier runs
  std::vector<int64_t> level_shifts;  // runs that start a new level (a jump from the run before them)
  double change_pct = 0;              // (latest - baseline) / baseline x 100; negative = slower
  double noise_pct = 0;               // noise_mfu / baseline x 100
  // regression | within-noise | ok | improved | no-baseline
  std::string status;
  std::string explanation;
  std::vector<HistoryPoint> history;
  bool failed() const { return status == "regression"; }
};

struct RegressReport {
  std::string baseline;  // as requested
  double threshold_pct = 0;
  std::vector<PlanRegression> plans;
  int regressions() const;
};

// "last-N" -> N (N >= 1); 0 when `baseline` is not of that form.
int parse_last_n(const std::string& baseline);
// "best-of-last-N" -> N (N >= 1); 0 when `baseline` is not of that form.
int parse_best_of_last_n(const std::string& baseline);

// Run-to-run noise (sigma of one run's MFU) of a history, oldest first: the RMS deviation of each
// inner run from the median of itself and its two neighbours, / kMedian3Rms. Level shifts, tuning
// ramps and trends pass through a running median unchanged and do not count as noise. nullopt with
// fewer than kMinRunsForSigma runs.
std::optional<double> run_to_run_sigma(const std::vector<double>& mfu);
// Indices i (into `mfu`) where a new level starts: the step d = mfu[i] - mfu[i-1] differs from the
// median step by more than kShiftZ x sqrt(2) x sigma and is at least half the threshold (percent of
// mfu[i-1]). `sigma` from run_to_run_sigma.
std::vector<size_t> level_shift_starts(const std::vector<double>& mfu, double sigma, double threshold_pct);

// The noise model of a history: level shifts found with the running-median sigma, then sigma = the
// mean of the running-median sigma and the pooled standard deviation of the runs around the mean of
// their level (between shifts; efficient on few runs, blind to the shifts). nullopt with fewer than
// kMinRunsForSigma runs.
struct NoiseEstimate {
  double sigma = 0;
  std::vector<size_t> level_starts;  // level_shift_starts()
};
std::optional<NoiseEstimate> estimate_noise(const std::vector<double>& mfu, double threshold_pct);

// Errors: threshold < 0, "last-0"/"best-of-last-0", or a tag no run carries.
Expected<RegressReport> detect_regressions(const std::vector<RunRecord>& runs, const RegressOptions& opt);

}  // namespace mplan::runs
