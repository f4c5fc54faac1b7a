// Cross-validation of the cost model: a parameter that only the held-out source informs falls back to
// its prior instead of keeping the value fitted with that source; residual quantiles; interval bounds
// read from a calibration file (current and older keys); rows whose source documents a regression are
// reported with their error but neither scored nor fitted; a complete row mplan cannot build is charged
// (10x off, not fitting) in plain validation and in cross-validation, while a row that states no run is
// listed and not scored.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "simulator/cross_validate.h"
#include "simulator/simulator.h"
#include "simulator/validate.h"

namespace mplan {
namespace {

// Three Megatron rows and three llm-foundry rows of GPT-style models on H100, their throughput
// simulated with `truth` (so the fit has an exact answer).
std::vector<CsvRow> synthetic_rows(const Calibration& truth) {
  const std::string header =
      "row_id,source_id,framework,model,layers,hidden,ffn_hidden,heads,kv_heads,vocab,seq_len,gpu_type,num_gpus,gbs,mbs,"
      "tp,sp,pp,cp,precision,recompute,dist_optimizer,fsdp,tokens_per_sec_per_gpu\n";
  std::ostringstream csv;
  csv << header;
  csv << "M-1,src_megatron,Megatron-Core,GPT-A,24,4096,16384,32,32,51200,2048,H100,64,2048,4,1,,1,1,bf16,,yes,,1000\n";
  csv << "M-2,src_megatron,Megatron-Core,GPT-B,32,4096,16384,32,32,51200,4096,H100,64,1024,1,2,yes,1,1,bf16,,yes,,1000\n";
  csv << "M-3,src_megatron,Megatron-Core,GPT-C,40,5120,20480,40,40,51200,2048,H100,128,1024,2,4,yes,2,1,bf16,,yes,,1000\n";
  csv << "F-1,src_foundry,Composer/llm-foundry (PyTorch FSDP),MPT-A,32,4096,16384,32,32,50368,2048,H100,8,256,8,1,,1,1,bf16 "
         "(amp),full,,8,1000\n";
  csv << "F-2,src_foundry,Composer/llm-foundry (PyTorch FSDP),MPT-B,24,2048,8192,16,16,50368,2048,H100,16,512,16,1,,1,1,bf16 "
         "(amp),full,,16,1000\n";
  csv << "F-3,src_foundry,Composer/llm-foundry (PyTorch FSDP),MPT-C,48,6144,24576,48,48,50368,2048,H100,32,512,4,1,,1,1,bf16 "
         "(amp),full,,32,1000\n";
  auto parsed = read_csv_text(csv.str(), "synthetic");
  EXPECT_TRUE(bool(parsed));
  if (!parsed) return {};
  std::vector<CsvRow> rows = *parsed;
  // replace the placeholder throughput by what `truth` predicts for each row's plan
  auto runs = measured_runs_from_rows(rows);
  EXPECT_EQ(runs.size(), rows.size());
  for (const MeasuredRun& m : runs) {
    auto r = simulate(m.plan, truth.params_for(m.plan.cluster.gpu));
    EXPECT_TRUE(bool(r)) << m.id;
    for (CsvRow& row : rows)
      if (row.get("row_id") == m.id && r) row.f["tokens_per_sec_per_gpu"] = std::to_string(r->tokens_per_s_per_gpu);
  }
  return rows;
}

TEST(CrossValidate, ParameterOnlyTheHeldOutSourceInformsStartsFromItsPrior) {
  Calibration truth = shipped_calibration();
  truth.params.framework_eff[Framework::llm_foundry] = 0.6;
  auto rows = synthetic_rows(truth);
  ASSERT_EQ(rows.size(), 6u);
  Calibration start = truth;  // a start fitted with every row: the leak the reset prevents
  CvOptions opt;
  opt.mode = CvMode::source;
  opt.max_evals = 40;
  std::vector<FitParamSpec> which = {{"framework_eff.llm-foundry", 0.3, 1.0}, {"hopper/gemm_eff_max", 0.4, 1.0}};
  CvReport rep = cross_validate(rows, start, which, opt);
  ASSERT_EQ(rep.rows.size(), 6u);
  // holding out llm-foundry leaves no row that depends on its factor: it restarts from 1.0
  ASSERT_TRUE(rep.reset_to_prior.count("src_foundry"));
  EXPECT_EQ(rep.reset_to_prior["src_foundry"], std::vector<std::string>{"framework_eff.llm-foundry"});
  EXPECT_FALSE(rep.reset_to_prior.count("src_megatron"));  // both parameters matter for the foundry rows
  // so the held-out foundry rows are predicted with the prior 1.0: too fast by about 1/0.6 (the
  // fold's fit keeps it there: the loss is flat along it, and a simplex would otherwise wander)
  for (const CvRow& r : rep.rows) {
    if (r.source != "src_foundry") continue;
    EXPECT_GT(r.held_out / r.measured, 1.3) << r.row_id;
    EXPECT_NEAR(r.held_out / r.measured, 1.0 / 0.6, 0.1) << r.row_id;
    EXPECT_NEAR(r.in_sample / r.measured, 1.0, 0.02) << r.row_id;
  }
  // intervals carry the quantile level chosen for the coverage target
  ASSERT_TRUE(rep.intervals.contains("dense"));
  EXPECT_LE(rep.intervals["dense"]["lo"].get<double>(), rep.intervals["dense"]["hi"].get<double>());
  EXPECT_GE(rep.interval_level, 0.0);
  EXPECT_LE(rep.interval_level, 0.10);
}

TEST(CrossValidate, ResidualQuantilesInterpolateBetweenOrderStatistics) {
  std::vector<double> v;
  for (int i = 0; i <= 10; ++i) v.push_back(double(10 - i));  // 0..10, unsorted
  auto [lo, hi] = residual_quantiles(v, 0.10);
  EXPECT_DOUBLE_EQ(lo, 1.0);
  EXPECT_DOUBLE_EQ(hi, 9.0);
  auto [lo2, hi2] = residual_quantiles(v, 0.05);
  EXPECT_DOUBLE_EQ(lo2, 0.5);
  EXPECT_DOUBLE_EQ(hi2, 9.5);
  EXPECT_EQ(residual_quantiles({}, 0.1), std::make_pair(0.0, 0.0));
}

TEST(CrossValidate, IntervalBoundsReadCurrentAndOlderKeysAndRefuseDisorder) {
  auto a = interval_bounds(nlohmann::json{{"lo", -0.2}, {"hi", 0.1}});
  ASSERT_TRUE(a);
  EXPECT_DOUBLE_EQ(a->first, -0.2);
  auto b = interval_bounds(nlohmann::json{{"q10", -0.3}, {"q90", 0.2}});
  ASSERT_TRUE(b);
  EXPECT_DOUBLE_EQ(b->second, 0.2);
  EXPECT_FALSE(interval_bounds(nlohmann::json{{"lo", 0.3}, {"hi", 0.2}}));
  EXPECT_FALSE(interval_bounds(nlohmann::json{{"lo", "x"}, {"hi", 0.2}}));
  EXPECT_FALSE(interval_bounds(nlohmann::json::array()));
}

TEST(CrossValidate, KnownRegressionRowsAreReportedButNeitherScoredNorFitted) {
  Calibration truth = shipped_calibration();
  auto rows = synthetic_rows(truth);
  ASSERT_EQ(rows.size(), 6u);
  // M-2 measured at half its throughput, and its source says that release regressed
  rows[1].f["tokens_per_sec_per_gpu"] = std::to_string(std::stod(rows[1].get("tokens_per_sec_per_gpu")) / 2);
  rows[1].f["flags"] = "known_regression";
  auto params = [&](const Plan& p) { return truth.params_for(p.cluster.gpu); };
  ValidationReport rep = validate_throughput(rows, params);
  EXPECT_EQ(rep.overall.n, 5);
  EXPECT_EQ(rep.skipped, 1);
  EXPECT_LT(rep.overall.mape, 1.0);  // the other rows are exact
  const ValidationRow& m2 = rep.rows[1];
  EXPECT_TRUE(m2.skipped);
  EXPECT_NE(m2.reason.find("known_regression"), std::string::npos) << m2.reason;
  EXPECT_NEAR(m2.error_pct, 100.0, 2.0);  // predicted and reported: twice the regressed measurement
  auto runs = measured_runs_from_rows(rows);
  EXPECT_EQ(runs.size(), 5u);
  for (const MeasuredRun& m : runs) EXPECT_NE(m.id, "M-2");
}

// M-2 names a model with no preset and no dimensions (a published model mplan cannot express); F-2
// leaves its sequence length blank (no run to simulate).
std::vector<CsvRow> rows_with_unbuildable(const Calibration& truth) {
  auto rows = synthetic_rows(truth);
  rows[1].f["model"] = "Unknown-Model 9T";
  for (const char* col : {"layers", "hidden", "ffn_hidden", "heads", "kv_heads"}) rows[1].f[col] = "";
  rows[4].f["seq_len"] = "";
  return rows;
}

TEST(CrossValidate, ARowThatCannotBeBuiltIsChargedAndOneThatStatesNoRunIsListed) {
  Calibration truth = shipped_calibration();
  auto rows = rows_with_unbuildable(truth);
  ASSERT_EQ(rows.size(), 6u);
  auto params = [&](const Plan& p) { return truth.params_for(p.cluster.gpu); };
  ValidationReport rep = validate_throughput(rows, params);
  EXPECT_EQ(rep.overall.n, 5);  // four simulated rows and the charged one
  EXPECT_EQ(rep.failed, 1);
  EXPECT_EQ(rep.skipped, 1);
  const ValidationRow& m2 = rep.rows[1];
  EXPECT_TRUE(m2.failed);
  EXPECT_FALSE(m2.skipped);
  EXPECT_FALSE(m2.fits);
  EXPECT_NE(m2.reason.find("Unknown-Model 9T"), std::string::npos) << m2.reason;
  EXPECT_NEAR(rep.overall.mape, kFailedRowApePct / 5, 1.0);  // the exact rows add ~0
  EXPECT_NEAR(rep.fits_share, 4.0 / 5.0, 1e-9);
  const ValidationRow& f2 = rep.rows[4];
  EXPECT_TRUE(f2.skipped);
  EXPECT_FALSE(f2.failed);
  EXPECT_NE(f2.reason.find("seq_len"), std::string::npos) << f2.reason;
  auto unbuilt = unbuilt_rows(rows);
  ASSERT_EQ(unbuilt.size(), 1u);
  EXPECT_EQ(unbuilt[0].row->get("row_id"), "M-2");

  CvOptions opt;
  opt.mode = CvMode::source;
  opt.max_evals = 10;
  CvReport cv = cross_validate(rows, truth, {{"hopper/gemm_eff_max", 0.4, 1.0}}, opt);
  ASSERT_EQ(cv.rows.size(), 5u);  // F-2 states no run; M-2 is in, charged
  bool charged = false;
  for (const CvRow& r : cv.rows)
    if (r.row_id == "M-2") {
      charged = true;
      EXPECT_EQ(r.held_out, 0.0);
      EXPECT_EQ(r.source, "src_megatron");
    }
  EXPECT_TRUE(charged);
  EXPECT_NEAR(cv.overall.held_out.mape, kFailedRowApePct / 5, 5.0);
  EXPECT_NEAR(cv.by_source["src_megatron"].held_out.mape, kFailedRowApePct / 3, 5.0);
  bool listed = false;
  for (const auto& f : cv.failures) listed = listed || f.rfind("M-2: ", 0) == 0;
  EXPECT_TRUE(listed);
}

}  // namespace
}  // namespace mplan
