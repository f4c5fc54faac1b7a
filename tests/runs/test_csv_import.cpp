// CSV import: documented columns in any order, warm-up rows, derived metrics, and clear errors.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/counting.h"
#include "runs/import.h"
#include "runs/warmup.h"
#include "runs_test_util.h"

using namespace mplan::runs;

namespace {

mplan::Plan plan() { return runs_test::load_plan("llama3_8b_h100_dp8.plan.json"); }

std::string rows(int n, double step_s, int first = 1) {
  std::string s;
  for (int i = 0; i < n; ++i) s += std::to_string(first + i) + "," + std::to_string(step_s) + ",61.5\n";
  return s;
}

}  // namespace

TEST(CsvImport, DerivesMetricsFromStepTimeAndPlan) {
  std::string text = "# exported by my-framework\nStep,step_time_s,peak_memory_gib\n" + rows(30, 16.0);
  auto r = import_csv(text, "run.csv", plan(), {});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->run.source, "csv");
  ASSERT_EQ(r->run.steps.size(), 30u);
  EXPECT_EQ(r->warmup_excluded, 10);  // rows for steps 1..10
  const StepMetric& m = r->run.steps[15];
  EXPECT_NEAR(m.tokens_per_s, 128.0 * 8192 / 16.0, 1e-6);
  double flops = mplan::model_flops_per_step(plan().model, 128, 8192, mplan::AttentionFlops::causal);
  EXPECT_NEAR(m.tflops_per_gpu, flops / 16.0 / 8 / 1e12, 1e-6);
  EXPECT_NEAR(m.mfu, m.tflops_per_gpu / 989.4, 1e-12);
  EXPECT_DOUBLE_EQ(*m.peak_memory_gib, 61.5);
  EXPECT_FALSE(m.loss);  // no loss column: absent, not 0
}

TEST(CsvImport, TokensPerSecondInsteadOfStepTimeAndReportedColumns) {
  double tok = 128.0 * 8192 / 20.0;
  std::string text = "loss,tokens_per_s,step,tflops_per_gpu,mfu,lr\n";
  for (int i = 0; i < 12; ++i) text += "3.5," + std::to_string(tok) + "," + std::to_string(100 + i) + ",380.0,0.55,0.0001\n";
  auto r = import_csv(text, "run.csv", plan(), {});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_NEAR(r->run.steps[0].step_time_s, 20.0, 1e-6);
  EXPECT_DOUBLE_EQ(*r->run.steps[0].reported_tflops_per_gpu, 380.0);
  EXPECT_DOUBLE_EQ(*r->run.steps[0].loss, 3.5);
  EXPECT_EQ(r->warmup_excluded, 10);  // warm-up counts from the first row's step (100)
  bool ignored = false, mfu_disagrees = false;
  for (const auto& w : r->run.warnings) {
    ignored = ignored || w.find("column 'lr'") != std::string::npos;
    mfu_disagrees = mfu_disagrees || w.find("the file's mfu is") != std::string::npos;
  }
  EXPECT_TRUE(ignored);
  EXPECT_TRUE(mfu_disagrees);  // 0.55 given vs ~0.34 from the plan
}

TEST(CsvImport, ErrorsNameLineAndColumn) {
  auto missing = import_csv("step,loss\n1,2\n", "a.csv", plan(), {});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("needs 'step_time_s' or 'tokens_per_s'"), std::string::npos);

  auto bad = import_csv("step,step_time_s\n1,1.5\n2,fast\n", "b.csv", plan(), {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("b.csv:3: column step_time_s: 'fast' is not a number"), std::string::npos)
      << bad.error().message();

  auto pct = import_csv("step,step_time_s,mfu\n1,1.5,42\n", "c.csv", plan(), {});
  ASSERT_FALSE(pct.ok());
  EXPECT_NE(pct.error().message().find("not a fraction"), std::string::npos);

  auto zero = import_csv("step,step_time_s\n1,0\n", "d.csv", plan(), {});
  ASSERT_FALSE(zero.ok());

  EXPECT_FALSE(import_csv("", "e.csv", plan(), {}).ok());
  EXPECT_FALSE(import_csv("step,step_time_s\n", "f.csv", plan(), {}).ok());
  auto warm = import_csv("step,step_time_s\n" + rows(5, 1.0).substr(0), "g.csv", plan(), {});
  ASSERT_FALSE(warm.ok());  // all five rows are warm-up with the default rule
  EXPECT_NE(warm.error().message().find("smaller --warmup"), std::string::npos);
}

TEST(CsvImport, RestartedStepsStartANewWarmup) {
  std::string text = "step,step_time_s\n" + rows(20, 16.0) + rows(20, 16.0, 15);
  auto r = import_csv(text, "r.csv", plan(), {});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->warmup_excluded, 20);
  EXPECT_TRUE(r->run.steps[20].warmup);
  EXPECT_FALSE(r->run.steps[30].warmup);
}

TEST(WarmupRule, IntervalsAndSegments) {
  auto count = [](const WarmupFlags& f) { return static_cast<int>(std::count(f.warmup.begin(), f.warmup.end(), true)); };
  // Every step, 1-based and 0-based: exactly the first 10 steps.
  std::vector<int64_t> one, zero, hundred, resumed;
  for (int i = 1; i <= 30; ++i) one.push_back(i);
  for (int i = 0; i < 30; ++i) zero.push_back(i);
  for (int i = 100; i <= 1000; i += 100) hundred.push_back(i);
  for (int i = 5010; i <= 5100; i += 10) resumed.push_back(i);
  EXPECT_EQ(count(flag_warmup(one, 10)), 10);
  auto z = flag_warmup(zero, 10);
  EXPECT_EQ(count(z), 10);
  EXPECT_FALSE(z.warmup[10]);
  // Every 100 steps: the first row covers 1..100 and alone holds the warm-up.
  EXPECT_EQ(count(flag_warmup(hundred, 10)), 1);
  EXPECT_EQ(count(flag_warmup(hundred, 150)), 2);
  // A job resumed at 5000 and logging every 10: the line at 5010 covers 5001..5010.
  EXPECT_EQ(count(flag_warmup(resumed, 10)), 1);
  EXPECT_EQ(count(flag_warmup(resumed, 0)), 0);
  // Restart marks: by a non-increasing step or explicitly.
  std::vector<int64_t> two = {10, 20, 30, 40, 20, 30, 40};
  auto t = flag_warmup(two, 10);
  EXPECT_EQ(t.restarts, std::vector<int64_t>{20});
  EXPECT_EQ(count(t), 2);
  std::vector<bool> marks = {false, false, false, false, false, true, false};
  auto m = flag_warmup({10, 20, 30, 40, 50, 60, 70}, 10, marks);
  EXPECT_EQ(m.restarts, std::vector<int64_t>{60});
  EXPECT_TRUE(m.warmup[5]);
  EXPECT_FALSE(m.warmup[6]);
}
