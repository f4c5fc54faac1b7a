// Fits a few global cost-model parameters to measured end-to-end runs (published rows or runs recorded
// by mplan train): minimises the mean absolute log error of predicted vs measured throughput by
// cyclic golden-section search over each parameter inside physical bounds. Deterministic.
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
  std::string name;  // a CostParams field ("precision_eff.fp8" ...), or "<arch>/<field>" for a per-architecture override
  double lo, hi;     // physical bounds
};

// The default set: per architecture (ampere, hopper, blackwell) the GEMM and attention kernel
// efficiencies; globally the GEMM size scale, HBM, kernel overhead, NVLink, network, all-to-all,
// MoE load spread, overlap slowdown, FP8/MXFP8/NVFP4 GEMM efficiency and the fixed per-step overhead.
std::vector<FitParamSpec> default_fit_params();

struct FitResult {
  Calibration calibration;
  double loss_before = 0, loss_after = 0;  // mean |ln(pred/meas)|
  double mape_before = 0, mape_after = 0;  // percent
  int evaluations = 0;
  int rows = 0;
};

// `params_for(plan, base)` lets callers keep per-GPU differences fixed (e.g. a calibration per GPU);
// by default the same parameters apply to every row.
FitResult fit_cost_params(const std::vector<MeasuredRun>& runs, const Calibration& start,
                          const std::vector<FitParamSpec>& which, int passes,
                          const std::function<void(int pass, const std::string& param, double loss)>& progress = {});

// Mean |ln(pred/meas)| and MAPE of `cal` on `runs` (rows that fail to simulate count as skipped).
std::pair<double, double> fit_loss(const std::vector<MeasuredRun>& runs, const Calibration& cal);

}  // namespace mplan
