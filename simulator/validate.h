// Accuracy of the simulator against published runs: per-row measured vs predicted throughput (or
// memory), absolute percentage errors, and summary statistics per family of rows.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "simulator/fit_runs.h"
#include "simulator/published.h"
#include "simulator/simulator.h"

namespace mplan {

struct ValidationRow {
  std::string row_id, model, gpu, how, notes;
  std::vector<std::string> families;
  bool skipped = false;  // not scored: a flagged row, or one that states no run (reason says which)
  bool failed = false;   // a complete row mplan cannot build or simulate: charged kFailedRowApePct, fits = false
  std::string reason;
  double measured = 0, predicted = 0, error_pct = 0;  // signed: (pred - meas) / meas * 100
  // memory feasibility of the row's layout (every published throughput row is a run that ran)
  double peak_memory_gib = 0, capacity_gib = 0;
  bool fits = true;
  std::string dominant_memory;  // the largest term of the worst rank ("activations 61.2 GiB")
  bool expect_oom = false;      // a memory row that reports an out-of-memory failure
  Plan plan;
};

struct ErrorStats {
  int n = 0;
  double mape = 0, median = 0, p90 = 0, within10 = 0;  // within10 as a fraction
};

struct ValidationReport {
  std::vector<ValidationRow> rows;
  ErrorStats overall;
  std::map<std::string, ErrorStats> by_family;
  int skipped = 0;
  int failed = 0;  // rows charged as failures (in overall.n, and in fits_share as not fitting)
  // share of the scored rows whose layout is predicted to fit (throughput rows: should be 1)
  double fits_share = 1.0;
  int fits_rows = 0;
  // memory rows that report an out-of-memory failure, and how many of them mplan predicts not to fit
  int oom_rows = 0, oom_predicted = 0;
};

// The largest term of a memory breakdown, as "activations 61.2 GiB".
std::string dominant_memory_term(const MemoryBreakdown& m);

// The absolute percentage error charged for a row that cannot be built or simulated: a prediction
// 10x off (|10 - 1| = 900 %), the same charge as a failed row in fitting (kFailedRowPenalty = ln 10) and
// in cross-validation. Such rows are listed with their reason, never dropped.
inline constexpr double kFailedRowApePct = 900.0;

using ParamsFor = std::function<CostParams(const Plan&)>;

ErrorStats error_stats(const std::vector<double>& abs_errors_pct);
// Throughput rows: predicted vs measured tokens/s per GPU. Doubtful rows (see doubtful_flag) and rows
// that state no run (see unstated_run) are skipped with the reason; known regressions (see
// known_regression) are predicted and reported with their error but skipped from the scores; a row
// whose model or layout cannot be built or simulated is `failed`, reported with its reason and charged.
// `settings`: with the recipe facts behind each row (default) or as the row states it (RowSettings).
ValidationReport validate_throughput(const std::vector<CsvRow>& rows, const ParamsFor& params,
                                     RowSettings settings = RowSettings::with_run_facts);
// The clean, expressible throughput rows as measured runs (input of fit_cost_params); known
// regressions are left out.
std::vector<MeasuredRun> measured_runs_from_rows(const std::vector<CsvRow>& rows);
// The clean rows that state a run with a measurement but cannot be built into a plan (model or layout
// mplan cannot express), each with the reason: the rows measured_runs_from_rows leaves out and
// cross-validation charges.
struct UnbuiltRow {
  const CsvRow* row;
  std::string reason;
};
std::vector<UnbuiltRow> unbuilt_rows(const std::vector<CsvRow>& rows);
// Memory rows: predicted peak memory of the worst rank vs mem_total_gib.
ValidationReport validate_memory(const std::vector<CsvRow>& rows, const ParamsFor& params,
                                 RowSettings settings = RowSettings::with_run_facts);

}  // namespace mplan
