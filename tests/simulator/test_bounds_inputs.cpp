// Issue 17: impossible cost parameters are refused when read (with the field named), a calibration of
// another GPU architecture is recognised, and the simulator never returns a non-finite or >100% MFU
// result even when its parameters are set in code, bypassing the file checks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "core/json_fields.h"
#include "core/presets.h"
#include "simulator/cost_param_table.h"
#include "simulator/cost_params.h"
#include "simulator/fit_runs.h"
#include "simulator/simulator.h"
#include "tests/generated_doc.h"
#include "tests/simulator/sim_fixtures.h"

using namespace mplan;

namespace {
Plan small_plan() { return preset_plan("llama3-8b", 8, 64, 2048, 8, 1); }

// The table as Markdown: docs/cost_params.md's table.
std::string cost_params_markdown() {
  std::string s = "| parameter | range | prior | in `params` | fitted in | what it is |\n|---|---|---|---|---|---|\n";
  for (const CostParamRow& r : cost_param_table()) {
    CostParams prior;
    char range[64], value[32], fit[96] = "";
    std::snprintf(range, sizeof range, "%s%g, %g]", r.range.lo_open ? "(" : "[", r.range.lo, r.range.hi);
    std::snprintf(value, sizeof value, "%g", *cost_param_ref(prior, r.name));
    if (r.fit.fitted())
      std::snprintf(fit, sizeof fit, "[%g, %g]%s%s", r.fit.lo, r.fit.hi, *r.fit.archs ? " per architecture: " : "", r.fit.archs);
    s += "| `" + std::string(r.name) + "` | " + range + " | " + value + " | " +
         (r.global   ? "yes"
          : r.member ? "by_arch only"
                     : "map entry") +
         " | " + fit + " | " + r.doc + " |\n";
  }
  return s;
}
}  // namespace

TEST(BoundedCostParams, EfficiencyAboveOneIsRefusedWithItsField) {
  nlohmann::json j = calibration_to_json(shipped_calibration());
  j["params"]["precision_eff"]["bf16"] = 9223372036854775808.0;  // 2^63
  j["by_arch"]["hopper"]["gemm_eff_max"] = 3.0;
  auto r = calibration_from_json(j, CostParams{});
  ASSERT_FALSE(r.ok());
  std::string e = r.error().message();
  EXPECT_NE(e.find("calibration.params.precision_eff.bf16: must be"), std::string::npos) << e;
  EXPECT_NE(e.find("calibration.by_arch.hopper.gemm_eff_max: must be"), std::string::npos) << e;
}

// A calibration written while the GEMM ramp was a work (gemm_half_flops) is refused with what replaced
// it, not with a bare "unknown field": the value needs the GPU's peak to become a time.
TEST(BoundedCostParams, TheRampAsAWorkIsRefusedNamingItsReplacement) {
  nlohmann::json j = calibration_to_json(shipped_calibration());
  j["params"].erase("gemm_ramp_us");
  j["params"]["gemm_half_flops"] = 2.75e10;
  auto r = calibration_from_json(j, CostParams{});
  ASSERT_FALSE(r.ok());
  std::string e = r.error().message();
  EXPECT_NE(e.find("calibration.params.gemm_half_flops: replaced by gemm_ramp_us"), std::string::npos) << e;
}

TEST(BoundedCostParams, ExpertCvIsBoundedAsACoefficientOfVariation) {
  // The range table keyed an old name (moe_load_cv), so the expert-load CV got the efficiencies'
  // (0, 1] bounds: a measured CV above 1 was refused and 0 (perfect balance) too (issue 30).
  ParamRange r = cost_param_range("moe_expert_cv");
  EXPECT_FALSE(r.lo_open);
  EXPECT_GT(r.hi, 1.0);
  nlohmann::json j = calibration_to_json(shipped_calibration());
  j["params"]["moe_expert_cv"] = 1.5;
  auto ok = calibration_from_json(j, CostParams{});
  ASSERT_TRUE(ok.ok()) << ok.error().message();
  EXPECT_DOUBLE_EQ(ok->params.moe_expert_cv, 1.5);
}

TEST(BoundedCostParams, ArchitectureMismatchIsDetected) {
  Calibration a100;
  a100.gpu = "A100-SXM4-80GB";  // a file written before "arch": inferred from the preset GPU it names
  // a copy: cluster_preset returns a temporary
  const GpuSpec h100 = cluster_preset("dgx-h100")->gpu;
  EXPECT_EQ(calibration_arch(a100), "ampere");
  std::string why = calibration_mismatch(a100, h100);
  EXPECT_NE(why.find("fitted for ampere"), std::string::npos) << why;
  EXPECT_NE(why.find("--force"), std::string::npos) << why;
  a100.by_arch["hopper"]["gemm_eff_max"] = 0.8;  // explicit overrides for the plan's architecture apply
  EXPECT_EQ(calibration_mismatch(a100, h100), "");
  EXPECT_EQ(calibration_mismatch(shipped_calibration(), h100), "");  // the shipped one covers every architecture
  auto round = calibration_from_json(calibration_to_json(Calibration{"H100-SXM5-80GB", "hopper", {}, {}, {}}), CostParams{});
  ASSERT_TRUE(round.ok());
  EXPECT_EQ(round->arch, "hopper");
}

TEST(BoundedCostParams, SimulatorRefusesImpossibleResults) {
  Plan p = small_plan();
  CostParams ok = default_cost_params(p.cluster);
  auto good = simulate(p, ok);
  ASSERT_TRUE(good.ok()) << good.error().message();
  EXPECT_LE(good->mfu, 1.0);
  CostParams fast = ok;
  fast.gemm_eff_max = 1e30;  // set in code: the JSON reader would refuse it
  fast.attn_fwd_eff = fast.attn_bwd_eff = fast.hbm_eff = 1e30;
  fast.precision_eff[Precision::bf16] = 9.2e18;
  auto r = simulate(p, fast);
  if (r.ok()) {  // the cost model caps efficiencies; whatever it returns must be a possible result
    EXPECT_TRUE(std::isfinite(r->mfu) && r->mfu <= 1.0) << r->mfu;
    EXPECT_TRUE(std::isfinite(r->tokens_per_s_per_gpu)) << r->tokens_per_s_per_gpu;
  }
  CostParams slow = ok;
  slow.kernel_overhead_us = 9.2e18;
  auto rs = simulate(p, slow);
  if (rs.ok()) {
    EXPECT_TRUE(std::isfinite(rs->step_time_s) && rs->step_time_s > 0);
  }
  Plan inf = p;  // the case of issue 17: "tokens/s inf, MFU -nan%"
  inf.cluster.gpu.peak_tflops[Precision::bf16] = 1e308;
  auto ri = simulate(inf, ok);
  ASSERT_FALSE(ri.ok()) << "tokens/s " << ri->tokens_per_s_per_gpu;
}

// The cost-parameter table (simulator/cost_param_table.h): every row reachable by name and written
// back as read, its prior inside its range, and docs/cost_params.md equal to it (MPLAN_UPDATE_GOLDEN=1
// rewrites the file).
TEST(CostParamTable, RowsRoundTripAndTheDocsListThem) {
  std::set<std::string> names;
  const CostParams prior;
  for (const CostParamRow& r : cost_param_table()) {
    EXPECT_TRUE(names.insert(r.name).second) << r.name;
    CostParams p;
    if (!r.member) {  // a map entry: reached by name, fitted, never a scalar of "params"
      EXPECT_NE(cost_param_ref(p, r.name), nullptr) << r.name;
      EXPECT_TRUE(r.fit.fitted() && !r.global) << r.name;
      continue;
    }
    EXPECT_EQ(cost_param_ref(p, r.name), &(p.*r.member)) << r.name;
    if (r.fit.fitted()) EXPECT_TRUE(r.range.lo <= r.fit.lo && r.fit.hi <= r.range.hi) << r.name;  // fits stay valid
    const double v = prior.*r.member;
    EXPECT_TRUE(v <= r.range.hi && (r.range.lo_open ? v > r.range.lo || !r.global : v >= r.range.lo)) << r.name;
    EXPECT_EQ(cost_param_range(r.name).hi, r.range.hi) << r.name;
    if (!r.global) continue;
    Calibration c = shipped_calibration();
    c.params.*r.member = r.range.hi;  // the upper bound is inside every range
    auto back = calibration_from_json(calibration_to_json(c), CostParams{});
    ASSERT_TRUE(back.ok()) << r.name << ": " << back.error().message();
    EXPECT_EQ(back->params.*r.member, r.range.hi) << r.name;
  }
  CostParams probe;
  EXPECT_EQ(cost_param_ref(probe, "no_such_param"), nullptr);
  expect_generated_doc(
      "docs/cost_params.md",
      "# Cost parameters\n\nThe scalar parameters of the cost model (`CostParams`), generated from the table in "
      "`simulator/cost_params.cpp` (`cost_param_table()`; tests/simulator/test_bounds_inputs.cpp keeps this file equal "
      "to it, `MPLAN_UPDATE_GOLDEN=1` rewrites it). The range is what a calibration file may hold (values outside it are "
      "refused naming the field); the prior is the uncalibrated default, which cross-validation resets a parameter to "
      "when a fold lacks its rows. What each one means, how it is fitted and its fitted value: docs/cost_model.md. "
      "Per-precision GEMM factors (`precision_eff.<precision>`, range (0, 1]), per-framework kernel factors "
      "(`framework_eff.<framework>`) and the GEMM tile sizes are read beside them; the fitted entries of those maps are "
      "rows of the table too (a map entry). The fit column is the interval a fit searches (`default_fit_params()` in "
      "`simulator/fit_runs.cpp`: `mplan validate --fit`, which fits them all unless `--fit-params` names some, and "
      "`mplan calibrate --runs`, which fits `overlap_slowdown` and `optimizer_overhead_s`), per architecture as one "
      "`by_arch` override each; a parameter without one is not fitted.\n\n",
      cost_params_markdown());
}

// The fitted parameters, their order (the fit's coordinates) and bounds, as default_fit_params()
// listed them before the bounds moved into the cost-parameter table (kernel_overhead_us left the list
// when it became a measured constant, issue 31).
TEST(CostParamTable, FitBoundsAreTheTablesInTheFitOrder) {
  const std::vector<std::tuple<std::string, double, double>> expected = {{"ampere/gemm_eff_max", 0.4, 1.0},
                                                                         {"hopper/gemm_eff_max", 0.4, 1.0},
                                                                         {"blackwell/gemm_eff_max", 0.4, 1.0},
                                                                         {"blackwell/attn_bwd_eff", 0.15, 0.85},
                                                                         {"gemm_ramp_us", 0.01, 100},
                                                                         {"grouped_gemm_eff", 0.3, 1.0},
                                                                         {"triton_attn_eff", 0.2, 1.0},
                                                                         {"hbm_eff", 0.3, 1.0},
                                                                         {"nvlink_eff", 0.3, 1.0},
                                                                         {"network_eff", 0.3, 1.0},
                                                                         {"a2a_eff", 0.1, 1.0},
                                                                         {"overlap_slowdown", 0.0, 0.5},
                                                                         {"precision_eff.fp8", 0.3, 1.0},
                                                                         {"precision_eff.mxfp8", 0.3, 1.0},
                                                                         {"precision_eff.nvfp4", 0.2, 1.0},
                                                                         {"step_host_sync_s", 0.0, 0.5},
                                                                         {"framework_eff.llm-foundry", 0.3, 1.0}};
  const auto got = default_fit_params();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].name, std::get<0>(expected[i])) << i;
    EXPECT_EQ(got[i].lo, std::get<1>(expected[i])) << got[i].name;
    EXPECT_EQ(got[i].hi, std::get<2>(expected[i])) << got[i].name;
  }
  EXPECT_EQ(fit_param("hbm_eff").lo, 0.3);
  EXPECT_THROW(fit_param("comm_overlap"), std::logic_error);          // in the table, not fitted
  EXPECT_THROW(fit_param("optimizer_overhead_s"), std::logic_error);  // a user's own runs only (calibrate --runs)
}
