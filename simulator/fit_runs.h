// Fits the global cost-model parameters to measured end-to-end runs (published rows or runs recorded
// by mplan train): minimises the weighted mean absolute log error of predicted vs measured throughput
// over all parameters jointly, within their physical bounds, with NLopt's derivative-free Subplex
// (LN_SBPLX) on log-scaled coordinates. Rows that fail to simulate are reported and charged a fixed
// penalty, never dropped. Deterministic; rows are simulated on worker threads.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "core/plan.h"
#include "simulator/cost_params.h"

namespace mplan {

struct MeasuredRun {
  std::string id;
  Plan plan;
  double tokens_per_s_per_gpu = 0;
  double weight = 1.0;  // weight in the loss (families are balanced so dense rows don't drown MoE rows)
};

struct FitParamSpec {
  std::string name;      // a CostParams field ("precision_eff.fp8" ...), or "<arch>/<field>" for a per-architecture override
  double lo, hi;         // physical bounds
  std::string why = "";  // what the parameter is (docs/cost_model.md lists them)
};

// The default set: the parameters the cost-parameter table gives fit bounds (simulator/cost_params.cpp,
// docs/cost_params.md), per architecture (ampere, hopper, blackwell) first, then the global ones.
std::vector<FitParamSpec> default_fit_params();
// The default set's entry of a parameter (its bounds from the cost-parameter table); throws
// std::logic_error for a parameter that is not fitted (a programming error).
FitParamSpec fit_param(const std::string& name);

// |ln(pred/meas)| charged for a row that fails to simulate (as if off by 10x).
constexpr double kFailedRowPenalty = 2.302585092994046;

struct FitLoss {
  double loss = 0;  // weighted mean |ln(pred/meas)|, failures charged kFailedRowPenalty
  double mape = 0;  // percent, over the rows that simulated
  int rows = 0, failures = 0;
  std::vector<std::string> failed;  // "ROW: reason"
};

struct FitResult {
  Calibration calibration;
  double loss_before = 0, loss_after = 0;  // weighted mean |ln(pred/meas)|
  double mape_before = 0, mape_after = 0;  // percent
  int evaluations = 0;
  int rows = 0;                     // rows fitted
  int rows_not_fitted = 0;          // rows with an unmeasured kernel (has_unmeasured_kernel)
  std::vector<std::string> failed;  // rows that did not simulate at the end
};

// The value a fit parameter name refers to inside a calibration ("<arch>/<field>" = override), or
// nullptr for an unknown name.
double* calibration_param(Calibration& c, const std::string& name);

// Whether a run's step contains a kernel whose rate no measurement pins down: an op of kind scan (the
// Mamba-2 SSD scan of a hybrid model, costed from its bytes and FLOPs alone). Such a run is scored
// but not fitted: the shared parameters would otherwise absorb that kernel's unknown rate and move
// every other model's prediction with it.
bool has_unmeasured_kernel(const Plan& plan);
// The runs a fit uses: those without an unmeasured kernel.
std::vector<MeasuredRun> fitted_runs(const std::vector<MeasuredRun>& runs);

// The fit uses fitted_runs(runs) (FitResult::rows counts them; the other rows are not simulated);
// `rounds` restarts of the optimiser, each from the best point so far with a smaller initial step;
// `max_evals` bounds the simulations of all rows per round (0 = 60 per parameter).
FitResult fit_cost_params(const std::vector<MeasuredRun>& runs, const Calibration& start, const std::vector<FitParamSpec>& which,
                          int rounds, const std::function<void(int round, int evals, double loss)>& progress = {},
                          int max_evals = 0, int threads = 0);

// Loss of `cal` on `runs` (failures reported and charged, see kFailedRowPenalty).
FitLoss fit_loss(const std::vector<MeasuredRun>& runs, const Calibration& cal, int threads = 0);

}  // namespace mplan
