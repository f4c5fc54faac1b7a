// Scaling sweeps and time to train: the --gpus grammar (one count, a list, a range of powers of two, and
// each bad form refused naming the field), token budgets, the checkpoint size against Megatron's bytes
// per parameter, Daly's interval and expected time against their closed forms and limits, and a sweep.
#include <gtest/gtest.h>

#include <cmath>

#include "core/counting.h"
#include "planner/scaling.h"
#include "planner_test_util.h"
#include "simulator/cost_params.h"

namespace mplan {
namespace {

std::string error_of(const Expected<std::vector<int>>& r) { return r.ok() ? std::string("(accepted)") : r.error().message(); }

TEST(Scaling, GpuCountsListRangeAndOne) {
  auto one = parse_gpu_counts("512", "--gpus", 4096);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(*one, std::vector<int>({512}));
  auto list = parse_gpu_counts("1024,256,512", "--gpus", 4096);
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(*list, std::vector<int>({256, 512, 1024}));
  auto range = parse_gpu_counts("256..4096", "--gpus", 4096);
  ASSERT_TRUE(range.ok());
  EXPECT_EQ(*range, std::vector<int>({256, 512, 1024, 2048, 4096}));
  auto single = parse_gpu_counts("64..64", "--gpus", 4096);
  ASSERT_TRUE(single.ok());
  EXPECT_EQ(*single, std::vector<int>({64}));
}

TEST(Scaling, GpuCountsRefusedNamingTheField) {
  struct Bad {
    const char* text;
    const char* needle;
  };
  for (const Bad& b :
       {Bad{"..", "needs both ends"}, Bad{"256..", "needs both ends"}, Bad{"..512", "needs both ends"},
        Bad{"4096..256", "inverted"}, Bad{"300..4096", "powers of two"}, Bad{"256..a", "positive integers"},
        Bad{"", "not a positive integer"}, Bad{"256,,512", "not a positive integer"}, Bad{"0", "not a positive integer"},
        Bad{"-8", "not a positive integer"}, Bad{"abc", "not a positive integer"}, Bad{"8192", "at most 4096"},
        Bad{"256..8192", "8192: the cluster holds at most 4096"}, Bad{"256,256", "given twice"}}) {
    auto r = parse_gpu_counts(b.text, "--gpus", 4096);
    ASSERT_FALSE(r.ok()) << b.text;
    EXPECT_NE(error_of(r).find("--gpus"), std::string::npos) << error_of(r);
    EXPECT_NE(error_of(r).find(b.needle), std::string::npos) << b.text << ": " << error_of(r);
  }
}

TEST(Scaling, TokenCounts) {
  EXPECT_DOUBLE_EQ(parse_token_count("15T", "--train-tokens").value(), 15e12);
  EXPECT_DOUBLE_EQ(parse_token_count("300B", "--train-tokens").value(), 300e9);
  EXPECT_DOUBLE_EQ(parse_token_count("2.5e12", "--train-tokens").value(), 2.5e12);
  EXPECT_DOUBLE_EQ(parse_token_count("4k", "--train-tokens").value(), 4e3);
  for (const char* bad : {"", "abc", "15X", "15TB", "-5", "0", "nan", "inf"}) {
    auto r = parse_token_count(bad, "--train-tokens");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message().find("--train-tokens"), std::string::npos) << r.error().message();
  }
}

TEST(Scaling, CheckpointHoldsWeightsAndOptimizerStates) {
  // Megatron, bf16: 2 B weights + 4 B fp32 main weights + 8 B Adam moments per parameter, whatever the layout
  Plan j = test::job(model_preset("llama3-8b").value(), test::cluster("dgx-h100"), 64, 256, 4096);
  j.parallel.tp = 4;
  j.parallel.pp = 2;
  j.parallel.zero = 1;
  const double params = count_params(j.model).total;
  EXPECT_NEAR(checkpoint_bytes(j), 14 * params, 1e-6 * 14 * params);
  j.parallel.adam_states_bf16 = true;  // moments in bf16: 10 B
  EXPECT_NEAR(checkpoint_bytes(j), 10 * params, 1e-6 * 10 * params);
  // fp8 training: the quantized weight cache is not saved
  j.parallel.adam_states_bf16 = false;
  j.training.precision = Precision::fp8;
  EXPECT_NEAR(checkpoint_bytes(j), 14 * params, 1e-6 * 14 * params);
  // torchtitan: fp32 parameters and two fp32 moments, 12 B
  j.training.precision = Precision::bf16;
  j.training.framework = Framework::torchtitan;
  EXPECT_NEAR(checkpoint_bytes(j), 12 * params, 1e-6 * 12 * params);
}

TEST(Scaling, DalyIntervalAndExpectedTime) {
  // small write time: Young's sqrt(2 d M) to first order
  const double d = 60, m = 3 * 3600;
  const double young = std::sqrt(2 * d * m);
  const double tau = daly_interval_s(d, m);
  EXPECT_NEAR(tau, young * (1 + std::sqrt(d / (2 * m)) / 3 + d / (2 * m) / 9) - d, 1e-9);
  EXPECT_NEAR(tau / young, 1.0, 0.05);
  EXPECT_DOUBLE_EQ(daly_interval_s(3 * m, m), m);  // d >= 2M: checkpoint once per MTBF
  // expected time: above the ideal, and to first order ideal x (1 + d/tau + (tau/2 + R)/M)
  const double ideal = 30 * 86400, r = 600;
  const double e = daly_expected_s(ideal, tau, d, r, m);
  EXPECT_GT(e, ideal);
  EXPECT_NEAR(e / ideal, 1 + d / tau + (tau / 2 + r) / m, 0.02);
  // failures ever rarer: the ideal time
  EXPECT_NEAR(daly_expected_s(ideal, daly_interval_s(d, 1e12), d, r, 1e12) / ideal, 1.0, 1e-3);
}

TEST(Scaling, TimeToTrainGrowsWithInterruptions) {
  Plan j = test::job(model_preset("llama3-8b").value(), test::cluster("dgx-h100"), 1024, 1024, 8192);
  j.parallel.tp = 1;
  StepReport r;
  r.step_time_s = 2.0;
  ReliabilityParams rel;
  TimeToTrain t = time_to_train(j, r, 15e12, rel, 2.0);
  EXPECT_EQ(t.steps, int64_t(std::ceil(15e12 / (1024.0 * 8192))));
  EXPECT_DOUBLE_EQ(t.ideal_s, double(t.steps) * 2.0);
  EXPECT_GT(t.expected_s, t.ideal_s);
  EXPECT_LT(t.goodput, 1.0);
  EXPECT_GT(t.goodput, 0.5);
  EXPECT_NEAR(t.mtbf_s, 86400 / (rel.failures_per_gpu_day * 1024), 1e-6);
  EXPECT_GT(t.interval_steps, 0);
  EXPECT_DOUBLE_EQ(t.interval_s, double(t.interval_steps) * 2.0);
  EXPECT_NEAR(t.gpu_hours, t.expected_s * 1024 / 3600, 1e-6);
  EXPECT_NEAR(t.cost, t.gpu_hours * 2.0, 1e-6);
  // more GPUs at the same step time: more interruptions, lower goodput
  j.parallel.world_size = 16384;
  EXPECT_LT(time_to_train(j, r, 15e12, rel).goodput, t.goodput);
  // no failures: the ideal time, no checkpoints needed
  rel.failures_per_gpu_day = 0;
  TimeToTrain none = time_to_train(j, r, 15e12, rel);
  EXPECT_DOUBLE_EQ(none.expected_s, none.ideal_s);
  EXPECT_EQ(none.interval_steps, 0);
}

TEST(Scaling, SweepRanksEachCountAndRefusesWhatTheClusterCannotHold) {
  Plan j = test::job(test::tiny_dense(), test::cluster("dgx-h100"), 8, 64, 2048);
  SearchOptions o;
  o.top_k = 3;
  auto pts = search_scaling(j, {8, 16, 32}, shipped_calibration(), o);
  ASSERT_TRUE(pts.ok()) << pts.error().message();
  ASSERT_EQ(pts->size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ((*pts)[i].gpus, 8 << i);
    ASSERT_FALSE((*pts)[i].result.top.empty());
    EXPECT_EQ((*pts)[i].result.top.front().plan.parallel.world_size, 8 << i);
  }
  // more GPUs for the same batch: a shorter step
  EXPECT_LT((*pts)[2].result.top.front().report.step_time_s, (*pts)[0].result.top.front().report.step_time_s);
  ClusterSpec small = test::cluster("dgx-h100");
  small.num_nodes = 2;
  j.cluster = small;
  auto bad = search_scaling(j, {8, 32}, shipped_calibration(), o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("GPU count 32"), std::string::npos) << bad.error().message();
}

// Every kept layout (each group's best and its folded members) with its full report.
std::string result_text(const SearchResult& r) {
  std::string out;
  for (size_t g = 0; g < r.top.size(); ++g) {
    out += report_to_json(r.top[g].report).dump() + "\n";
    for (const Candidate& c : r.folded[g]) out += "  " + report_to_json(c.report).dump() + "\n";
  }
  return out;
}

// A sweep shares its caches (simulation cache, probes, floors) between the GPU counts: each count's
// result is the one a search of that count alone gives, in either order of the counts, whether the
// counts are searched one after another (one thread) or side by side (two threads, one count each).
void expect_sweep_equals_searches(const Plan& job, const std::vector<int>& counts, const std::string& what, int threads) {
  SearchOptions o;
  o.top_k = 4;
  o.threads = threads;
  auto pts = search_scaling(job, counts, shipped_calibration(), o);
  ASSERT_TRUE(pts.ok()) << what << ": " << pts.error().message();
  std::vector<int> reversed(counts.rbegin(), counts.rend());
  auto back = search_scaling(job, reversed, shipped_calibration(), o);
  ASSERT_TRUE(back.ok()) << what;
  for (size_t i = 0; i < counts.size(); ++i) {
    Plan j = job;
    j.parallel.world_size = counts[i];
    auto one = search(j, shipped_calibration(), o);
    ASSERT_TRUE(one.ok()) << what;
    ASSERT_FALSE(one->top.empty()) << what << " " << counts[i];
    const std::string want = result_text(*one);
    EXPECT_EQ(result_text((*pts)[i].result), want) << what << " at " << counts[i] << " GPUs";
    EXPECT_EQ(result_text((*back)[counts.size() - 1 - i].result), want) << what << " at " << counts[i] << " GPUs (reversed)";
  }
}

TEST(Scaling, SweepEqualsSingleSearches) {
  for (int threads : {1, 2}) {
    expect_sweep_equals_searches(test::job(test::tiny_dense(), test::cluster("dgx-h100"), 8, 64, 2048), {8, 16, 32}, "tiny dense",
                                 threads);
    expect_sweep_equals_searches(test::job(test::tiny_moe(), test::cluster("dgx-h100"), 8, 32, 2048), {8, 16}, "tiny moe",
                                 threads);
  }
}

TEST(Scaling, MtNlg530bModelFile) {
  // data/models/mt-nlg-530b.json: Smith et al. 2022's 530B parameters
  auto m = resolve_model(std::string(MPLAN_SOURCE_DIR) + "/data/models/mt-nlg-530b.json");
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_NEAR(count_params(*m).total / 1e9, 530, 2);
  EXPECT_EQ(m->num_layers, 105);
}

}  // namespace
}  // namespace mplan
