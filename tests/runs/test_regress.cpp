// Regression detection on synthetic MFU series: known drops are found, noise of the size of the
// run-to-run spread is not flagged, level shifts (tuning) are not noise, tagged and best-of baselines,
// first runs, bad options.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "runs/regress.h"

using namespace mplan::runs;
using nlohmann::json;

namespace {

// A run whose summary is set directly: MFU (median), within-run noise and measured step count.
RunRecord run(int64_t id, const std::string& key, double mfu, double step_noise = 0.002, int steps = 40,
              std::vector<std::string> tags = {}, double predicted = 0) {
  RunRecord r;
  r.id = id;
  r.plan_key = key;
  r.plan = {{"model", {{"name", key}}}};
  r.started_at = "2024-01-01T00:00:" + std::to_string(10000 + id);  // increasing with id
  r.summary.mfu = mfu;
  r.summary.mfu_spread = step_noise;
  r.summary.steps_measured = steps;
  r.summary.predicted_mfu = predicted;
  r.tags = std::move(tags);
  return r;
}

std::vector<RunRecord> series(const std::vector<double>& mfus, const std::string& key = "p") {
  std::vector<RunRecord> v;
  for (size_t i = 0; i < mfus.size(); ++i) v.push_back(run(int64_t(i + 1), key, mfus[i]));
  return v;
}

// MFU of runs with relative run-to-run noise: level * (1 + a draw of N(0, sigma)), from a seeded generator.
struct NoisyMfu {
  NoisyMfu(uint32_t seed, double sigma) : rng(seed), noise(0.0, sigma) {}
  double at(double level) { return level * (1 + noise(rng)); }
  // Appends n runs at `level`.
  void add(std::vector<double>& m, int n, double level) {
    for (int i = 0; i < n; ++i) m.push_back(at(level));
  }
  std::vector<double> runs(int n, double level) {
    std::vector<double> m;
    add(m, n, level);
    return m;
  }
  std::mt19937 rng;
  std::normal_distribution<double> noise;
};

RegressReport detect(const std::vector<RunRecord>& runs, const std::string& baseline = "last-5", double threshold = 5) {
  RegressOptions o;
  o.baseline = baseline;
  o.threshold_pct = threshold;
  auto r = detect_regressions(runs, o);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
  return r.value();
}

}  // namespace

TEST(Regress, KnownDropIsARegression) {
  auto rep = detect(series({0.400, 0.402, 0.399, 0.401, 0.400, 0.360}));  // -10%
  ASSERT_EQ(rep.plans.size(), 1u);
  const auto& p = rep.plans[0];
  EXPECT_EQ(p.status, "regression") << p.explanation;
  EXPECT_TRUE(p.failed());
  EXPECT_EQ(rep.regressions(), 1);
  EXPECT_EQ(p.latest_id, 6);
  EXPECT_NEAR(p.baseline_mfu, 0.400, 1e-12);
  EXPECT_NEAR(p.change_pct, -10.0, 1e-9);
  EXPECT_EQ(p.baseline_ids, (std::vector<int64_t>{1, 2, 3, 4, 5}));
  // 3 sigma of (latest - median of 5), sigma from the scatter of the five runs.
  double sigma = estimate_noise({0.400, 0.402, 0.399, 0.401, 0.400}, 5.0)->sigma;
  EXPECT_NEAR(p.run_sigma_mfu, sigma, 1e-12);
  EXPECT_NEAR(p.noise_mfu, 3 * sigma * std::sqrt(1 + 1.2533 * 1.2533 / 5), 1e-9);
  EXPECT_EQ(p.history.size(), 6u);
  EXPECT_NE(p.explanation.find("reaches the 5.0% threshold"), std::string::npos) << p.explanation;
}

TEST(Regress, DropInsideTheRunToRunSpreadIsNotARegression) {
  // -8.75% vs the median, beyond the 5% threshold, but the baseline runs themselves spread by 10%.
  auto rep = detect(series({0.40, 0.37, 0.41, 0.38, 0.40, 0.365}));
  const auto& p = rep.plans[0];
  EXPECT_EQ(p.status, "within-noise") << p.explanation;
  EXPECT_FALSE(p.failed());
  EXPECT_GT(p.noise_mfu, 0.035);  // the runs alternate by 3-4 points: sigma ~2.6 points
  EXPECT_TRUE(p.level_shifts.empty());
  EXPECT_EQ(rep.regressions(), 0);
}

TEST(Regress, SmallChangesAndImprovements) {
  EXPECT_EQ(detect(series({0.40, 0.40, 0.40, 0.39})).plans[0].status, "ok");  // -2.5% < 5%
  EXPECT_EQ(detect(series({0.40, 0.401, 0.399, 0.46})).plans[0].status, "improved");
  auto first = detect(series({0.40}));
  EXPECT_EQ(first.plans[0].status, "no-baseline");
  EXPECT_EQ(first.regressions(), 0);
}

TEST(Regress, WithinRunNoiseFloorWhenRunToRunSpreadIsUnknown) {
  // One earlier run: no run-to-run spread; the floor is 2 x the combined standard error of both
  // medians, 1.2533 x spread / sqrt(steps) each.
  std::vector<RunRecord> v = {run(1, "p", 0.40, 0.08, 16), run(2, "p", 0.37, 0.08, 16)};  // -7.5%
  auto rep = detect(v);
  const auto& p = rep.plans[0];
  double se = 1.2533 * 0.08 / 4.0;
  EXPECT_NEAR(p.noise_mfu, 2 * std::sqrt(2 * se * se), 1e-9);
  EXPECT_EQ(p.status, "within-noise") << p.explanation;
  v = {run(1, "p", 0.40, 0.002, 100), run(2, "p", 0.37, 0.002, 100)};
  EXPECT_EQ(detect(v).plans[0].status, "regression");
}

TEST(Regress, NoFalseAlarmsOnNoiseAndAllDropsFoundOnSyntheticSeries) {
  NoisyMfu mfu(42, 0.01);  // 1% run-to-run noise
  int false_alarms = 0, found = 0, trials = 400;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> m = mfu.runs(8, 0.45);
    false_alarms += detect(series(m)).regressions();
    m.push_back(mfu.at(0.45 * 0.88));  // a real 12% drop
    found += detect(series(m)).regressions();
  }
  EXPECT_EQ(false_alarms, 0);
  EXPECT_EQ(found, trials);
}

TEST(Regress, NoisierHistoryRaisesTheBar) {
  // 4% run-to-run noise: drops beyond the 5% threshold happen by chance; the noise band (3 sigma of
  // the run-to-run noise) keeps most of them from failing CI while a 30% drop is still caught.
  NoisyMfu mfu(7, 0.04);
  int beyond_threshold = 0, flagged = 0, caught = 0, trials = 400;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> m = mfu.runs(6, 0.40);
    auto p = detect(series(m)).plans[0];
    beyond_threshold += p.change_pct < -5;
    flagged += p.failed();
    m.push_back(0.40 * 0.70);
    caught += detect(series(m)).regressions();
  }
  std::printf("4%% noise, %d trials: %d beyond the threshold, %d flagged; a 30%% drop caught %d times\n", trials,
              beyond_threshold, flagged, caught);
  EXPECT_GT(beyond_threshold, 40);           // a threshold alone would alarm on these
  EXPECT_LT(flagged, beyond_threshold / 2);  // the noise band rejects most of them
  // Five earlier runs give a rough noise estimate (three inner runs): a 30% drop is still caught
  // almost always.
  EXPECT_GE(caught, trials * 97 / 100);
}

TEST(Regress, TaggedBaselineAndPredictionComparison) {
  std::vector<RunRecord> v = {run(1, "p", 0.50, 0.002, 40, {"golden"}), run(2, "p", 0.46), run(3, "p", 0.45),
                              run(4, "p", 0.44, 0.002, 40, {}, 0.48)};
  auto rep = detect(v, "golden");
  const auto& p = rep.plans[0];
  EXPECT_EQ(p.baseline_ids, std::vector<int64_t>{1});
  EXPECT_NEAR(p.baseline_mfu, 0.50, 1e-12);
  EXPECT_NEAR(p.change_pct, -12.0, 1e-9);
  EXPECT_FALSE(p.run_sigma_known);  // three earlier runs: too few to measure run-to-run noise
  EXPECT_LT(p.noise_mfu, 0.01);     // the within-run floor
  EXPECT_EQ(p.status, "regression");
  EXPECT_NEAR(p.predicted_mfu, 0.48, 1e-12);
  EXPECT_NEAR(p.vs_prediction_pct, (0.44 - 0.48) / 0.48 * 100, 1e-9);
  // The gradual slide is within the last-5 noise, but not within the tagged baseline's.
  EXPECT_EQ(detect(v, "last-5").plans[0].status, "ok");

  // Tag exists for another plan only: this plan has no baseline; latest run tagged itself.
  std::vector<RunRecord> w = {run(1, "a", 0.5, 0.002, 40, {"golden"}), run(2, "a", 0.5), run(3, "b", 0.3),
                              run(4, "b", 0.2, 0.002, 40, {"golden"})};
  auto two = detect(w, "golden");
  ASSERT_EQ(two.plans.size(), 2u);
  EXPECT_EQ(two.plans[0].status, "ok");
  EXPECT_EQ(two.plans[1].status, "no-baseline");
  EXPECT_NE(two.plans[1].explanation.find("latest run is the one tagged"), std::string::npos);
}

TEST(Regress, PlansAreIndependent) {
  std::vector<RunRecord> v = series({0.40, 0.40, 0.40, 0.30}, "a");
  for (auto& r : series({0.20, 0.20, 0.20, 0.20}, "b")) {
    r.id += 100;
    v.push_back(r);
  }
  auto rep = detect(v);
  ASSERT_EQ(rep.plans.size(), 2u);
  EXPECT_EQ(rep.regressions(), 1);
  EXPECT_EQ(rep.plans[0].plan_key, "a");
  EXPECT_TRUE(rep.plans[0].failed());
  EXPECT_FALSE(rep.plans[1].failed());
}

TEST(Regress, LastNWindowAndOrderingByDate) {
  // The baseline is the median of the N runs before the latest; older runs do not count.
  auto rep = detect(series({0.20, 0.20, 0.40, 0.40, 0.39}), "last-2");
  EXPECT_NEAR(rep.plans[0].baseline_mfu, 0.40, 1e-12);
  EXPECT_EQ(rep.plans[0].status, "ok");
  // "Latest" is by started_at, not by id (an old log imported late).
  std::vector<RunRecord> v = series({0.40, 0.40, 0.40});
  RunRecord late = run(9, "p", 0.20);
  late.started_at = "2023-01-01T00:00:00Z";
  v.push_back(late);
  auto r2 = detect(v);
  EXPECT_EQ(r2.plans[0].latest_id, 3);
  EXPECT_EQ(r2.plans[0].status, "ok");
}

TEST(Regress, BadOptionsAreErrors) {
  auto v = series({0.4, 0.4});
  RegressOptions o;
  o.baseline = "last-0";
  EXPECT_FALSE(detect_regressions(v, o).ok());
  o.baseline = "nosuchtag";
  auto r = detect_regressions(v, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("no run is tagged 'nosuchtag'"), std::string::npos);
  o.baseline = "last-3";
  o.threshold_pct = -1;
  EXPECT_FALSE(detect_regressions(v, o).ok());
  EXPECT_EQ(parse_last_n("last-12"), 12);
  EXPECT_EQ(parse_last_n("last-x"), 0);
  EXPECT_EQ(parse_last_n("baseline"), 0);
}

TEST(Regress, RunToRunNoiseIgnoresLevelShifts) {
  // Five runs at 0.40, a tuning step to 0.50, five runs at 0.50: the noise is the small wiggle, not
  // the 25% step; the step is found as a level shift.
  std::vector<double> x = {0.400, 0.401, 0.399, 0.400, 0.401, 0.500, 0.501, 0.499, 0.500, 0.501};
  double sigma = run_to_run_sigma(x).value();
  EXPECT_LT(sigma, 0.002);
  auto shifts = level_shift_starts(x, sigma, 5.0);
  EXPECT_EQ(shifts, std::vector<size_t>{5});
  // A steady trend is not noise either (the differences are centred on their median).
  std::vector<double> trend = {0.40, 0.41, 0.42, 0.43, 0.44, 0.45};
  EXPECT_LT(run_to_run_sigma(trend).value(), 1e-12);
  EXPECT_FALSE(run_to_run_sigma({0.4, 0.41, 0.39, 0.40}));  // four runs: not enough
  // On pure noise it estimates the noise.
  std::mt19937 rng(5);
  std::normal_distribution<double> unit(0.0, 1.0);
  std::vector<double> many;
  many.reserve(20000);
  for (int i = 0; i < 20000; ++i) many.push_back(unit(rng));
  EXPECT_NEAR(run_to_run_sigma(many).value(), 1.0, 0.02);
}

TEST(Regress, FivePercentDropAfterTwentyFivePercentGainIsFound) {
  // 0.5% noise: five runs at 0.40, tuned over three runs to 0.50 (+25%), four runs there, then a run
  // 6% below that level (a drop just beyond the 5% threshold, whatever the noise of the baseline).
  NoisyMfu mfu(3, 0.005);
  int found_last = 0, found_tag = 0, found_best = 0, trials = 200;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> m = mfu.runs(5, 0.40);
    for (double v : {0.43, 0.47, 0.50}) m.push_back(mfu.at(v));
    mfu.add(m, 4, 0.50);
    std::vector<RunRecord> runs = series(m);
    auto best = std::max_element(runs.begin(), runs.end(), [](auto& a, auto& b) { return a.summary.mfu < b.summary.mfu; });
    best->tags = {"golden"};
    double level = 0.50;
    runs.push_back(run(int64_t(runs.size() + 1), "p", level * 0.94));
    found_last += detect(runs).regressions();
    found_tag += detect(runs, "golden").regressions();
    found_best += detect(runs, "best-of-last-5").regressions();
  }
  std::printf("5%% drop after +25%% tuning, %d series: found %d (last-5), %d (tag), %d (best-of-last-5)\n", trials, found_last,
              found_tag, found_best);
  EXPECT_GE(found_last, trials * 95 / 100);
  EXPECT_GE(found_tag, trials * 95 / 100);
  EXPECT_GE(found_best, trials * 95 / 100);

  // The case: 25% faster by tuning, then 13% below the tagged best run.
  std::vector<RunRecord> v = series({0.40, 0.40, 0.41, 0.45, 0.48, 0.50, 0.50, 0.501, 0.499, 0.435});
  v[7].tags = {"best"};
  auto p = detect(v, "best").plans[0];
  EXPECT_EQ(p.status, "regression") << p.explanation;
  EXPECT_NEAR(p.change_pct, (0.435 - 0.501) / 0.501 * 100, 1e-9);
  // With last-5 the baseline is the median of the runs since the last level shift.
  auto q = detect(series({0.40, 0.40, 0.40, 0.40, 0.40, 0.50, 0.50, 0.50, 0.475})).plans[0];
  EXPECT_EQ(q.status, "regression") << q.explanation;
  EXPECT_NEAR(q.baseline_mfu, 0.50, 1e-12);
  EXPECT_EQ(q.level_shifts, std::vector<int64_t>{6});
  EXPECT_NE(q.explanation.find("since the level shift at run #6"), std::string::npos) << q.explanation;
}

TEST(Regress, SlowSlideAgainstATagIsNotAbsorbedAsNoise) {
  // -1% per run from a tagged 0.50: the steady slide is not run-to-run noise.
  std::vector<double> m;
  m.reserve(9);
  for (int i = 0; i < 9; ++i) m.push_back(0.50 * (1 - 0.01 * i) * (1 + 0.002 * ((i * 7) % 3 - 1)));
  auto v = series(m);
  v[0].tags = {"golden"};
  auto p = detect(v, "golden").plans[0];
  EXPECT_EQ(p.status, "regression") << p.explanation;
  EXPECT_LT(p.noise_pct, -p.change_pct);  // the trend widens the band somewhat, not beyond the drop
}

TEST(Regress, FlatSeriesWithTwoPercentNoiseStaysOk) {
  NoisyMfu mfu(11, 0.02);
  int alarms_last = 0, alarms_best = 0, trials = 400;
  for (int t = 0; t < trials; ++t) {
    const std::vector<RunRecord> runs = series(mfu.runs(10, 0.40));
    alarms_last += detect(runs).regressions();
    alarms_best += detect(runs, "best-of-last-5").regressions();
  }
  std::printf("flat series, 2%% noise, %d trials: %d false alarms (last-5), %d (best-of-last-5)\n", trials, alarms_last,
              alarms_best);
  EXPECT_LE(alarms_last, trials / 100);  // at most 1% false alarms
  EXPECT_LE(alarms_best, trials / 100);
  // One such series, run by run.
  auto p = detect(series({0.404, 0.392, 0.411, 0.398, 0.402, 0.389, 0.407, 0.396, 0.401, 0.393})).plans[0];
  EXPECT_EQ(p.status, "ok") << p.explanation;
}

TEST(Regress, GainsBeyondTheThresholdAreImproved) {
  auto p = detect(series({0.40, 0.401, 0.399, 0.400, 0.402, 0.44})).plans[0];  // +10%
  EXPECT_EQ(p.status, "improved") << p.explanation;
  EXPECT_NE(p.explanation.find("new baseline"), std::string::npos);
  // A gain inside a noisy history is not called an improvement.
  EXPECT_EQ(detect(series({0.40, 0.44, 0.37, 0.43, 0.38, 0.42})).plans[0].status, "ok");
  auto best = detect(series({0.40, 0.42, 0.41, 0.40, 0.41, 0.46}), "best-of-last-3").plans[0];
  EXPECT_EQ(best.baseline_ids, std::vector<int64_t>{3});
  EXPECT_EQ(parse_best_of_last_n("best-of-last-10"), 10);
  EXPECT_EQ(parse_best_of_last_n("best-of-last-"), 0);
  RegressOptions o;
  o.baseline = "best-of-last-0";
  EXPECT_FALSE(detect_regressions(series({0.4, 0.4}), o).ok());
}
