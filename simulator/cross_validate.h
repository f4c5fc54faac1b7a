// Cross-validation of the cost model against published runs: leave one source out (every row of a
// document held out together), k-fold over run groups (same model, GPU, GPU count, tp, pp, cp, ep,
// precision), or leave one model family out (every row of a family, every source; families from
// data/model_families.csv, those with < 5 rows held out together). Each fold refits the global parameters on the other rows
// (fit_runs.h) and predicts the held-out ones; the held-out errors are reported per family, source and framework next to the
// in-sample ones, and their residuals give the prediction intervals (per family quantiles of
// ln(measured / predicted)), whose coverage is itself measured out of fold.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "simulator/fit_runs.h"
#include "simulator/published.h"
#include "simulator/validate.h"

namespace mplan {

enum class CvMode { source, group, model };

struct CvOptions {
  CvMode mode = CvMode::source;
  int folds = 5;      // group mode
  int rounds = 1;     // optimiser rounds per fit
  int max_evals = 0;  // per round (0 = fit_runs' default)
  int threads = 0;
};

struct CvRow {
  std::string row_id, source, framework, group, model, gpu;
  std::string model_family;  // data/model_families.csv ("" when the table does not list the model)
  std::vector<std::string> families;
  std::string interval_family;                       // "dense" or "moe"
  double measured = 0, in_sample = 0, held_out = 0;  // tokens/s per GPU; 0 = failed to simulate
  std::string fold;
};

struct CvStats {
  ErrorStats in_sample, held_out;
};

struct CvReport {
  std::vector<CvRow> rows;
  CvStats overall;
  std::map<std::string, CvStats> by_family, by_source, by_framework, by_model_family;
  std::vector<std::string> folds;     // what each fold held out
  std::vector<std::string> failures;  // rows that did not simulate in some fit
  nlohmann::json intervals;           // per interval family: lo, hi, level, target, n (all held-out residuals)
  double interval_level = 0.10;       // residual quantiles [level, 1 - level] that reach the target coverage
  double coverage = 0;                // share of held-out rows inside the interval built out of fold, at that level
  double coverage_nominal = 0;        // the same with the plain 10th/90th percentiles
  std::map<std::string, std::vector<std::string>> reset_to_prior;  // fold -> parameters no training row informs
  int coverage_rows = 0;
  Calibration in_sample_calibration;  // the fit on every row (with `intervals` set)
};

// Rows: the published CSV rows (clean, expressible ones are used). `start` is the calibration each fit
// starts from; `which` the fitted parameters.
CvReport cross_validate(const std::vector<CsvRow>& rows, const Calibration& start, const std::vector<FitParamSpec>& which,
                        const CvOptions& opt, const std::function<void(const std::string&)>& progress = {});

// Why `rows` cannot be cross-validated by model family ("" when they can): the published model names
// the family table does not list (each named), or fewer than two families among the clean rows.
std::string model_cv_problem(const std::vector<CsvRow>& rows);

// Target coverage of the shipped prediction intervals.
inline constexpr double kIntervalTarget = 0.80;

// The [level, 1 - level] quantiles of v (linear interpolation between order statistics).
std::pair<double, double> residual_quantiles(std::vector<double> v, double level);

// The run-group key of a published row: model|gpu|gpus|tp|pp|cp|ep|precision.
std::string run_group_key(const CsvRow& r);

}  // namespace mplan
