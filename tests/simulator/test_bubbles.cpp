// The pipeline bubble by cause (issue 20): fill/drain and stage imbalance told apart per stage, the
// bottleneck stage named, the warnings worded by cause. Before, a pp3 pipeline whose last stage (LM
// head and loss) is the bottleneck reported all of its idle as "pipeline bubble" although the
// schedule's fill and drain with 64 micro-batches is ~3%.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/presets.h"
#include "sim_fixtures.h"
#include "simulator/simulator.h"

namespace mplan {
namespace {

// Qwen3-30B-A3B (vocabulary 151k, hidden 2048): the LM head weighs about two layers; pp3, 64 micro-batches.
Plan heavy_head(int first = 0, int last = 0) {
  Plan p = preset_plan("qwen3-30b-a3b", 24, 512, 4096, 1, 3, 1, 8);
  p.parallel.num_layers_in_first_pipeline_stage = first;
  p.parallel.num_layers_in_last_pipeline_stage = last;
  return p;
}

StepReport sim(const Plan& p, const CostParams& c) { return simulate_ok(p, c); }

bool any_contains(const std::vector<std::string>& v, const std::string& s) {
  return std::any_of(v.begin(), v.end(), [&](const std::string& x) { return x.find(s) != std::string::npos; });
}

TEST(Bubbles, HeavyHeadIsStageImbalanceNotFillDrain) {
  Plan p = heavy_head();
  StepReport r = sim(p, default_cost_params(p.cluster));
  ASSERT_EQ(r.num_microbatches, 64);
  EXPECT_EQ(r.bottleneck_stage, 2);
  EXPECT_EQ(r.critical_stage, 0);
  EXPECT_NEAR(r.bubble_fill_drain_s + r.bubble_imbalance_s, r.time.bubble, 1e-9 * r.step_time_s);
  // 1F1B fill/drain of the critical stage: (pp-1) passes of the bottleneck's work, about 3% of the step
  const double fill = r.bubble_fill_drain_s / r.step_time_s;
  const double closed = 2.0 * r.per_stage[2].work_per_microbatch_s / r.step_time_s;
  EXPECT_LT(fill, 0.05);
  EXPECT_NEAR(fill, closed, 0.35 * closed);
  EXPECT_GT(r.bubble_imbalance_s, 2 * r.bubble_fill_drain_s);
  // the warning names the cause and the bottleneck
  EXPECT_TRUE(any_contains(r.warnings, "stage imbalance")) << ::testing::PrintToString(r.warnings);
  EXPECT_TRUE(any_contains(r.warnings, "stage 2 (16 layers + LM head and loss) is the bottleneck"))
      << ::testing::PrintToString(r.warnings);
  EXPECT_FALSE(any_contains(r.warnings, "pipeline bubble")) << ::testing::PrintToString(r.warnings);
  EXPECT_FALSE(any_contains(r.warnings, "fill/drain")) << ::testing::PrintToString(r.warnings);
}

TEST(Bubbles, EveryStageSplitsItsIdleAndTheBottleneckHasNoImbalance) {
  Plan p = heavy_head();
  SimOptions o;
  o.trace = true;
  auto r = simulate(p, default_cost_params(p.cluster), o);
  ASSERT_TRUE(r.ok());
  for (const auto& s : r->per_stage) {
    EXPECT_GE(s.idle_fill_drain_s, 0);
    EXPECT_GE(s.idle_imbalance_s, 0);
    EXPECT_GT(s.work_per_microbatch_s, 0);
    EXPECT_LE(s.work_per_microbatch_s, r->per_stage[size_t(r->bottleneck_stage)].work_per_microbatch_s);
  }
  EXPECT_EQ(r->per_stage[size_t(r->bottleneck_stage)].idle_imbalance_s, 0);
  // moving two layers off the last stage balances the pipeline: less imbalance, a faster step
  Plan q = heavy_head(17, 14);
  StepReport b = sim(q, default_cost_params(q.cluster));
  EXPECT_LT(b.bubble_imbalance_s, 0.5 * r->bubble_imbalance_s);
  EXPECT_LT(b.step_time_s, r->step_time_s);
}

TEST(Bubbles, EqualStagesHaveOnlyFillDrain) {
  // uniform stages: all idle is the schedule's fill and drain, (pp-1)/(m+pp-1) of the pipelined part
  for (int m : {4, 16}) {
    Plan p = pipeline_only_plan(4, 1, m);
    CostParams c = no_comm_params(p.cluster);
    StepReport r = sim(p, c);
    EXPECT_LT(r.bubble_imbalance_s, 0.03 * r.time.bubble) << m;  // the tiny head and loss of the last stage
    double want = 3.0 / (m + 3.0);
    EXPECT_NEAR(r.bubble_fill_drain_s / (r.step_time_s - r.time.optimizer), want, 0.05 * want + 1e-3) << m;
    if (3.0 / (m + 3.0) > 0.2) {
      EXPECT_TRUE(any_contains(r.warnings, "pipeline fill/drain")) << ::testing::PrintToString(r.warnings);
      EXPECT_TRUE(any_contains(r.warnings, "micro-batches")) << ::testing::PrintToString(r.warnings);
    }
    EXPECT_FALSE(any_contains(r.warnings, "stage imbalance")) << ::testing::PrintToString(r.warnings);
  }
}

TEST(Bubbles, ReportJsonCarriesTheSplit) {
  Plan p = heavy_head();
  StepReport r = sim(p, default_cost_params(p.cluster));
  auto j = report_to_json(r);
  EXPECT_EQ(j["bottleneck_stage"], 2);
  EXPECT_EQ(j["critical_stage"], 0);
  EXPECT_NEAR(j["bubble_s"]["fill_drain"].get<double>() + j["bubble_s"]["stage_imbalance"].get<double>(),
              j["time_breakdown_s"]["bubble"].get<double>(), 1e-12);
  EXPECT_TRUE(j["per_stage"][0]["idle_s"].contains("stage_imbalance"));
}

}  // namespace
}  // namespace mplan
