// search(): pruned results equal exhaustive simulation (bounds never exceed the simulation), brute
// force over independently enumerated layouts, determinism across thread counts, the memory-headroom
// objective, the no-feasible-layout path and --fix/--max conflicts.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "planner/constraints.h"
#include "planner/layout.h"
#include "planner/planner.h"
#include "planner/space.h"
#include "planner_test_util.h"
#include "simulator/cost_params.h"

namespace mplan {
namespace {

using planner::from_parallel;
using planner::short_name;

SearchResult run(const Plan& job, const SearchOptions& o) {
  auto r = search(job, shipped_calibration(), o);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
  return r.ok() ? r.value() : SearchResult{};
}

void expect_same_top(const SearchResult& a, const SearchResult& b, const std::string& what) {
  ASSERT_EQ(a.top.size(), b.top.size()) << what;
  for (size_t i = 0; i < a.top.size(); ++i) {
    EXPECT_TRUE(from_parallel(a.top[i].plan.parallel) == from_parallel(b.top[i].plan.parallel))
        << what << " rank " << i + 1 << ": " << short_name(from_parallel(a.top[i].plan.parallel)) << " vs "
        << short_name(from_parallel(b.top[i].plan.parallel));
    EXPECT_EQ(a.top[i].report.step_time_s, b.top[i].report.step_time_s) << what << " rank " << i + 1;
  }
  // the layouts folded into each group, too
  ASSERT_EQ(a.folded.size(), b.folded.size()) << what;
  for (size_t g = 0; g < a.folded.size(); ++g) {
    ASSERT_EQ(a.folded[g].size(), b.folded[g].size()) << what << " group " << g + 1;
    for (size_t m = 0; m < a.folded[g].size(); ++m)
      EXPECT_TRUE(from_parallel(a.folded[g][m].plan.parallel) == from_parallel(b.folded[g][m].plan.parallel))
          << what << " group " << g + 1 << " member " << m + 2;
  }
}

// Pruned search == exhaustive simulation, and no bound was ever above the simulated value.
void check_against_exhaustive(const Plan& job, const SearchOptions& o, const std::string& what) {
  SearchOptions ex = o;
  ex.exhaustive = true;
  SearchResult full = run(job, ex);
  SearchResult pruned = run(job, o);
  EXPECT_EQ(full.stats.bound_violations, 0) << what;
  EXPECT_GT(full.stats.simulated, 0) << what;
  EXPECT_LE(pruned.stats.simulated, full.stats.simulated) << what;
  EXPECT_EQ(pruned.stats.enumerated, full.stats.enumerated) << what;
  expect_same_top(full, pruned, what);
}

TEST(Search, PrunedEqualsExhaustiveDense) {
  SearchOptions o;
  o.top_k = 8;
  o.threads = 2;
  check_against_exhaustive(test::job(test::tiny_dense(), test::cluster("dgx-h100", 6), 8, 16, 2048), o, "tiny dense 6 GiB");
  o.max = {{"mbs", 2}};
  check_against_exhaustive(test::job(test::tiny_dense(), test::cluster("dgx-h100", 3), 16, 32, 4096, Precision::fp8), o,
                           "tiny dense fp8 3 GiB");
}

TEST(Search, PrunedEqualsExhaustiveMoeMlaMtpLora) {
  SearchOptions o;
  o.top_k = 6;
  o.threads = 2;
  o.max = {{"mbs", 2}, {"vpp", 2}};
  check_against_exhaustive(test::job(test::tiny_moe(), test::cluster("dgx-h100", 4), 8, 16, 2048), o, "tiny moe");
  check_against_exhaustive(
      test::job(test::tiny_moe(), test::cluster("dgx-h100", 3), 8, 16, 2048, Precision::bf16, TrainingMethod::lora), o,
      "tiny moe lora");
  // the job's MoE runtime (forced balance, a deduplicating dispatcher across two nodes) reaches the
  // probes and bounds as well as the candidates
  Plan forced = test::job(test::tiny_moe(), test::cluster("dgx-h100", 4), 16, 32, 2048);
  forced.parallel.moe_force_balance = true;
  forced.parallel.moe_dispatcher = MoeDispatcher::deepep;
  check_against_exhaustive(forced, o, "tiny moe, forced balance, deepep, 16 GPUs");
  SearchResult r = run(forced, o);
  ASSERT_FALSE(r.top.empty());
  EXPECT_TRUE(r.top[0].plan.parallel.moe_force_balance);
  EXPECT_EQ(r.top[0].plan.parallel.moe_dispatcher, MoeDispatcher::deepep);
}

TEST(Search, PrunedEqualsExhaustiveGptUnfusedA100) {
  SearchOptions o;
  o.top_k = 5;
  o.threads = 2;
  Plan j = test::job(test::tiny_gpt(), test::cluster("dgx-a100-80g", 2), 12, 24, 2048, Precision::fp16);
  j.parallel.attention_backend = AttentionBackend::unfused;
  check_against_exhaustive(j, o, "tiny gpt unfused fp16 on 12 A100");
}

TEST(Search, PrunedEqualsExhaustiveNvl72AndMemoryObjective) {
  SearchOptions o;
  o.top_k = 5;
  o.threads = 2;
  o.max = {{"mbs", 1}, {"vpp", 2}, {"cp", 2}};
  check_against_exhaustive(test::job(test::tiny_dense(), test::cluster("gb200-nvl72", 8), 128, 128, 4096), o, "nvl72");
  o.objective = Objective::memory_headroom;
  check_against_exhaustive(test::job(test::tiny_dense(), test::cluster("dgx-h100", 6), 8, 16, 2048), o, "memory objective");
}

// Slices of the benchmark models at scale (big layers, hundreds of GPUs): same top K, sound bounds.
TEST(Search, PrunedEqualsExhaustiveLargeModelSlices) {
  SearchOptions o;
  o.top_k = 5;
  o.threads = 2;
  o.fix = {{"tp", 8}, {"cp", 1}, {"mbs", 1}, {"pp", 16}};
  o.max = {{"vpp", 4}};
  Plan big = test::job(model_preset("llama3.1-405b").value(), test::cluster("dgx-h100"), 1024, 128, 8192);
  check_against_exhaustive(big, o, "llama3.1-405b slice");
  EXPECT_FALSE(run(big, o).top.empty());
  o.fix = {{"tp", 2}, {"ep", 8}, {"cp", 1}, {"mbs", 1}, {"pp", 8}, {"vpp", 1}};
  o.max = {};
  Plan ds = test::job(model_preset("deepseek-v3").value(), test::cluster("dgx-h100"), 512, 512, 4096, Precision::fp8);
  check_against_exhaustive(ds, o, "deepseek-v3 slice");
  EXPECT_FALSE(run(ds, o).top.empty());
}

// Sampled small spaces: random jobs, limits and K; pruning never changes the top K.
TEST(Search, PruningSoundOnSampledSpaces) {
  std::mt19937 rng(20240611);
  const ModelSpec models[] = {test::tiny_dense(), test::tiny_gpt(), test::tiny_moe()};
  for (int trial = 0; trial < 6; ++trial) {
    const ModelSpec& m = models[rng() % 3];
    int gpus = std::vector<int>{4, 8, 16}[rng() % 3];
    int64_t gbs = gpus * int64_t(std::vector<int>{1, 2, 4}[rng() % 3]);
    int64_t seq = std::vector<int64_t>{1024, 2048, 4096}[rng() % 3];
    double mem = std::vector<double>{2, 4, 8, 80}[rng() % 4];
    Precision prec = std::vector<Precision>{Precision::bf16, Precision::fp8}[rng() % 2];
    SearchOptions o;
    o.top_k = 1 + int(rng() % 6);
    o.threads = 1 + int(rng() % 2);
    o.max = {{"mbs", 2}, {"vpp", 2}};
    if (rng() % 2) o.fix["zero"] = int(rng() % 4);
    std::string what = m.name + " gpus " + std::to_string(gpus) + " gbs " + std::to_string(gbs) + " seq " + std::to_string(seq) +
                       " mem " + std::to_string(mem) + " K " + std::to_string(o.top_k);
    check_against_exhaustive(test::job(m, test::cluster("dgx-h100", mem), gpus, gbs, seq, prec), o, what);
  }
}

// Brute force: layouts enumerated independently of the planner (plain loops, validate_layout and the
// framework profile's framework_refusal as the validity rules, the documented space restrictions), all
// simulated, ranked by step time.
void check_brute_force(const Plan& jb, const std::string& what) {
  const ModelSpec& m = jb.model;
  CostParams prm = shipped_calibration().params_for(jb.cluster.gpu);
  std::vector<Candidate> all;
  const int units = m.num_layers + 2;
  // the selective-recompute module sets and offloading sets the planner documents (planner/space.h)
  const planner::Job pj(jb);
  const std::vector<uint32_t> rmod_sets = planner::recompute_module_sets(pj), off_sets = planner::offload_module_sets(pj);
  for (int tp : {1, 2, 4, 8})
    for (int pp : {1, 2, 4, 8})
      for (int cp : {1, 2})
        for (int vpp = 1; vpp <= (pp == 1 ? 1 : std::min(2, units / pp)); ++vpp)
          for (int pv = 0; pv < 2 + int(planner::uneven_stage_splits(m, pp).size()); ++pv)  // even, balanced, first/last
            for (int mbs : {1, 2, 4, 8, 16})
              for (int zero = 0; zero <= 3; ++zero)
                for (int sp = 0; sp <= 1; ++sp)
                  for (int ov = 0; ov <= sp; ++ov)
                    for (int cc = 0; cc < (cp > 1 ? 3 : 1); ++cc)
                      for (int rc = 0; rc < 3; ++rc)
                        for (int k : {0, 1, 2, 3, 4, 6})
                          for (uint32_t mods : rc == 1 ? rmod_sets : std::vector<uint32_t>{0})
                            for (uint32_t off : rc < 2 ? off_sets : std::vector<uint32_t>{0})
                              for (Schedule s : {Schedule::one_f_one_b, Schedule::interleaved, Schedule::zero_bubble}) {
                                if (tp * pp * cp > 8 || (rc != 2 && k > 0)) continue;
                                if (s == Schedule::zero_bubble && pp == 1) continue;  // zb needs a pipeline
                                const bool balanced = pv == 1, uneven = pv >= 2;
                                if ((balanced || uneven) && pp == 1) continue;
                                if (uneven && vpp > 1) continue;  // first/last-stage sizes are tried with vpp = 1
                                ParallelConfig p;
                                p.world_size = 8;
                                p.tp = tp;
                                p.pp = pp;
                                p.cp = cp;
                                p.vpp = vpp;
                                p.micro_batch_size = mbs;
                                p.zero = zero;
                                p.sp = sp;
                                p.tp_comm_overlap = ov;
                                p.cp_comm_type = CpCommType(cc);
                                p.recompute = Recompute(rc);
                                p.recompute_num_layers = k;
                                p.recompute_modules.bits = mods;
                                p.offload_modules.bits = off;
                                p.schedule = s;
                                if (uneven) {
                                  auto [first, last] = planner::uneven_stage_splits(m, pp)[size_t(pv - 2)];
                                  p.num_layers_in_first_pipeline_stage = first;
                                  p.num_layers_in_last_pipeline_stage = last;
                                }
                                if (balanced) {
                                  p.pipeline_layout = balanced_pipeline_layout(m, pp, vpp);
                                  // the planner skips a balanced layout equal to the even split
                                  bool even = m.num_layers % pp == 0 && (m.num_layers / pp) % vpp == 0;
                                  bool same = even;
                                  for (const auto& row : p.pipeline_layout)
                                    for (int v : row) same = same && v == m.num_layers / (pp * vpp);
                                  if (same) continue;
                                }
                                if (!validate_layout(m, jb.cluster, jb.training, p).empty()) continue;
                                // only what the job's framework runs (Megatron: no ZB-H1), by the profile's check
                                if (!framework_refusal(jb.training, p).empty()) continue;
                                // the planner's documented restrictions: seq/cp >= 1024, a2a needs heads to
                                // split, the first k layers of each chunk only below the smallest chunk
                                if (cp > 1 && 2048 / cp < 1024) continue;
                                if (p.cp_comm_type == CpCommType::a2a && ((16 / tp) % cp != 0 || (4 / tp) % cp != 0)) continue;
                                if (k > 0) {
                                  int mn = 1 << 30;
                                  for (const auto& row : layers_per_stage_chunk(m, p))
                                    for (int v : row) mn = std::min(mn, v);
                                  if (k >= mn) continue;
                                }
                                Plan q = jb;
                                q.parallel = p;
                                auto r = simulate(q, prm);
                                ASSERT_TRUE(r.ok()) << what;
                                if (r->fits) all.push_back({q, r.value()});
                              }
  ASSERT_GT(all.size(), 10u) << what;
  std::sort(all.begin(), all.end(), [](const Candidate& a, const Candidate& b) {
    if (a.report.step_time_s != b.report.step_time_s) return a.report.step_time_s < b.report.step_time_s;
    return from_parallel(a.plan.parallel) < from_parallel(b.plan.parallel);
  });
  SearchOptions o;
  o.top_k = 10;
  o.max = {{"vpp", 2}};
  o.distinct = false;  // the brute force ranks every layout on its own
  SearchResult r = run(jb, o);
  ASSERT_EQ(r.top.size(), 10u) << what;
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_TRUE(from_parallel(r.top[i].plan.parallel) == from_parallel(all[i].plan.parallel))
        << what << " rank " << i + 1 << ": planner " << short_name(from_parallel(r.top[i].plan.parallel)) << " brute force "
        << short_name(from_parallel(all[i].plan.parallel));
    EXPECT_EQ(r.top[i].report.step_time_s, all[i].report.step_time_s) << what;
  }
  EXPECT_EQ(r.stats.fits, r.stats.simulated) << what;  // the memory bounds kept every non-fitting layout out
  // distinct answers: the pruned search's groups are those of the brute-force ranking, members included
  o.distinct = true;
  SearchResult g = run(jb, o);
  GroupedResult want = group_ranked(all, 10, true);
  SearchResult w;
  w.top = want.best;
  w.folded = want.folded;
  expect_same_top(w, g, what + " (distinct)");
}

TEST(Search, MatchesBruteForce) {
  Plan jb = test::job(test::tiny_dense(), test::cluster("dgx-h100", 5), 8, 16, 2048);
  check_brute_force(jb, "megatron");
  jb.training.framework = Framework::torchtitan;  // other schedules, CP exchanges and ZeRO levels
  check_brute_force(jb, "torchtitan");
}

TEST(Search, DeterministicAcrossThreadCounts) {
  Plan j = test::job(test::tiny_moe(), test::cluster("dgx-h100", 6), 16, 64, 2048, Precision::fp8);
  SearchOptions o;
  o.top_k = 10;
  o.threads = 1;
  SearchResult a = run(j, o);
  for (int t : {2, 3, 8}) {
    o.threads = t;
    SearchResult b = run(j, o);
    expect_same_top(a, b, "threads " + std::to_string(t));
    EXPECT_EQ(a.stats.enumerated, b.stats.enumerated);
    EXPECT_EQ(a.stats.simulated, b.stats.simulated);
    EXPECT_EQ(a.stats.pruned_by_bound, b.stats.pruned_by_bound);
    EXPECT_EQ(a.stats.pruned_memory, b.stats.pruned_memory);
  }
}

TEST(Search, RanksBestFirstWithTotalOrderOnTies) {
  Plan j = test::job(test::tiny_dense(), test::cluster("dgx-h100"), 8, 16, 2048);
  SearchOptions o;
  o.top_k = 20;
  SearchResult r = run(j, o);
  ASSERT_EQ(r.top.size(), 20u);
  for (size_t i = 1; i < r.top.size(); ++i) {
    const auto& a = r.top[i - 1].report;
    const auto& b = r.top[i].report;
    ASSERT_LE(a.step_time_s, b.step_time_s);
    if (a.step_time_s == b.step_time_s)
      EXPECT_TRUE(from_parallel(r.top[i - 1].plan.parallel) < from_parallel(r.top[i].plan.parallel));
    EXPECT_TRUE(b.fits);
  }
}

TEST(Search, NoFeasibleLayoutGivesReasons) {
  Plan j = test::job(model_preset("llama3.1-405b").value(), test::cluster("dgx-h100"), 8, 64, 8192);
  SearchOptions o;
  SearchResult r = run(j, o);
  EXPECT_TRUE(r.top.empty());
  ASSERT_FALSE(r.top_rejection_reasons.empty());
  EXPECT_NE(r.top_rejection_reasons[0].find("does not fit"), std::string::npos) << r.top_rejection_reasons[0];
  EXPECT_GT(r.stats.pruned_memory, 0);
}

TEST(Search, FixAndMaxRestrictAndConflict) {
  Plan j = test::job(test::tiny_dense(), test::cluster("dgx-h100"), 16, 32, 2048);
  SearchOptions o;
  o.top_k = 5;
  o.fix = {{"tp", 2}, {"recompute", 2}, {"schedule", 1}};
  o.max = {{"pp", 2}};
  SearchResult r = run(j, o);
  ASSERT_FALSE(r.top.empty());
  for (const auto& c : r.top) {
    EXPECT_EQ(c.plan.parallel.tp, 2);
    EXPECT_LE(c.plan.parallel.pp, 2);
    EXPECT_EQ(c.plan.parallel.recompute, Recompute::full);
    EXPECT_EQ(c.plan.parallel.schedule, Schedule::one_f_one_b);
  }
  auto bad = [&](const std::map<std::string, int>& fix, const std::map<std::string, int>& max, const std::string& needle) {
    SearchOptions b;
    b.fix = fix;
    b.max = max;
    auto res = search(j, shipped_calibration(), b);
    ASSERT_FALSE(res.ok()) << needle;
    EXPECT_NE(res.error().message().find(needle), std::string::npos) << res.error().message();
  };
  bad({{"tp", 16}}, {{"tp", 8}}, "--fix tp=16 conflicts with --max tp=8");
  bad({{"tp", 4}, {"pp", 2}, {"cp", 1}, {"dp", 1}}, {}, "cannot tile 16 GPUs");
  bad({{"sp", 1}, {"tp", 1}}, {}, "sp=on contradicts tp=1");
  bad({{"vpp", 2}, {"pp", 1}}, {}, "vpp=2 contradicts pp=1");
  bad({{"bogus", 1}}, {}, "unknown key");
  bad({}, {{"schedule", 1}}, "unknown key");
  // a rule-breaking fix is not a contradiction: the search finds nothing and says why
  SearchOptions f;
  f.fix = {{"tp", 8}};  // tiny-dense has 4 query groups
  SearchResult none = run(j, f);
  EXPECT_TRUE(none.top.empty());
  EXPECT_FALSE(none.top_rejection_reasons.empty());
}

// torchtitan runs GPipe and 1F1B: GPipe (1F1B's bubble, every micro-batch's activations held) only when
// fixed. Megatron-LM has no GPipe schedule: fixing it is an error naming the framework's schedules.
TEST(Search, GpipeOnlyWhenFixed) {
  Plan j = test::job(test::tiny_dense(), test::cluster("dgx-h100"), 8, 32, 2048);
  j.training.framework = Framework::torchtitan;
  SearchOptions o;
  o.top_k = 50;
  o.fix = {{"pp", 4}};
  for (const auto& c : run(j, o).top) EXPECT_NE(c.plan.parallel.schedule, Schedule::gpipe);
  o.fix["schedule"] = 0;
  SearchResult g = run(j, o);
  ASSERT_FALSE(g.top.empty());
  for (const auto& c : g.top) EXPECT_EQ(c.plan.parallel.schedule, Schedule::gpipe);
  j.training.framework = Framework::megatron;
  auto bad = search(j, shipped_calibration(), o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("--fix schedule=gpipe: megatron runs the pipeline schedules 1f1b, interleaved"),
            std::string::npos)
      << bad.error().message();
}

TEST(Search, CancelStopsEarly) {
  Plan j = test::job(test::tiny_dense(), test::cluster("dgx-h100"), 16, 64, 2048);
  std::atomic<bool> stop{true};
  SearchOptions o;
  o.cancel = &stop;
  SearchResult r = run(j, o);
  EXPECT_TRUE(r.cancelled);
  EXPECT_EQ(r.stats.simulated, 0);
}

// A hybrid model (Mamba layers): the search's bounds know transformer layers only, so it refuses the
// job naming the way out instead of pruning with wrong bounds.
TEST(Search, RefusesAHybridModelSayingSo) {
  Plan job = test::job(*model_preset("nemotron-h-8b"), test::cluster("dgx-h100"), 8, 8, 8192);
  auto r = search(job, shipped_calibration(), SearchOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("hybrid"), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find("mplan simulate"), std::string::npos) << r.error().message();
}

}  // namespace
}  // namespace mplan
