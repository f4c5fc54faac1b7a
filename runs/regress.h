// MFU regression detection over the runs database: for every plan, the latest run's MFU against a
// baseline (median of the previous N runs, or a tagged run) with a noise model, and against the
// simulator's prediction. Pure functions over RunRecords (list_runs output), so they are testable
// on synthetic series.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "runs/runs_db.h"

namespace mplan::runs {

struct RegressOptions {
  std::string baseline = "last-5";  // "last-N" or a tag name
  double threshold_pct = 5.0;       // a drop must exceed this (percent of the baseline MFU) to fail
};

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
  double predicted_mfu = 0;       // latest run's stored prediction (0 = none)
  double vs_prediction_pct = 0;   // (measured - predicted) / predicted x 100, 0 without a prediction
  std::vector<int64_t> baseline_ids;
  double baseline_mfu = 0;
  double noise_mfu = 0;           // the noise band (absolute MFU): changes within it are not regressions
  std::string noise_basis;        // how the band was obtained (for the explanation)
  double change_pct = 0;          // (latest - baseline) / baseline x 100; negative = slower
  double noise_pct = 0;           // noise_mfu / baseline x 100
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

// Errors: threshold < 0, "last-0", or a tag no run carries.
Expected<RegressReport> detect_regressions(const std::vector<RunRecord>& runs, const RegressOptions& opt);

}  // namespace mplan::runs
