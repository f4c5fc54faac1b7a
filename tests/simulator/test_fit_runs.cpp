// Fitting global cost parameters to measured runs: recovers a known parameter from runs simulated
// with it, and never leaves a parameter outside its physical bounds.
#include <gtest/gtest.h>

#include <cmath>

#include "core/presets.h"
#include "simulator/fit_runs.h"
#include "simulator/simulator.h"

namespace mplan {
namespace {

std::vector<MeasuredRun> runs_simulated_with(const Calibration& truth) {
  std::vector<MeasuredRun> runs;
  for (int tp : {1, 2, 4, 8}) {
    Plan p;
    p.model = *model_preset("llama3-8b");
    p.cluster = *cluster_preset("dgx-h100");
    p.training = {64, 4096, Precision::bf16};
    p.parallel.world_size = 8;
    p.parallel.tp = tp;
    p.parallel.sp = tp > 1;
    auto r = simulate(p, truth.params_for(p.cluster.gpu));
    EXPECT_TRUE(bool(r));
    if (r) runs.push_back({"tp" + std::to_string(tp), p, r->tokens_per_s_per_gpu, 1.0});
  }
  return runs;
}

TEST(FitRuns, RecoversAKnownParameter) {
  Calibration truth = shipped_calibration();
  truth.by_arch["hopper"]["gemm_eff_max"] = 0.62;
  auto runs = runs_simulated_with(truth);
  Calibration start = truth;
  start.by_arch["hopper"]["gemm_eff_max"] = 0.45;
  FitResult fr = fit_cost_params(runs, start, {{"hopper/gemm_eff_max", 0.4, 1.0}}, 3);
  EXPECT_LT(fr.loss_after, fr.loss_before);
  EXPECT_NEAR(fr.calibration.by_arch["hopper"]["gemm_eff_max"], 0.62, 0.01);
  EXPECT_LT(fr.loss_after, 0.01);
}

TEST(FitRuns, StartOutsideTheBoundsEndsInside) {
  Calibration truth = shipped_calibration();
  truth.by_arch["hopper"]["attn_fwd_eff"] = 0.99;  // the runs themselves prefer the out-of-bounds value
  auto runs = runs_simulated_with(truth);
  FitResult fr = fit_cost_params(runs, truth, {{"hopper/attn_fwd_eff", 0.2, 0.85}}, 2);
  double v = fr.calibration.by_arch["hopper"]["attn_fwd_eff"];
  EXPECT_GE(v, 0.2);
  EXPECT_LE(v, 0.85);
  EXPECT_LE(fr.loss_after, fr.loss_before);  // "before" is the clamped start: the fit never ends worse
}

}  // namespace
}  // namespace mplan
