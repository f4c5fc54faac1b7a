// Distinct answers: group_ranked() folds layouts that differ only in refinements (vpp, the pipeline
// split, the overlap flags) into the best of them when their 80 % intervals overlap it (each member
// against the best, no chaining); the search's top K counts groups and its pruning stays exact per group.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "planner/layout.h"
#include "planner/planner.h"
#include "planner/ranking.h"
#include "planner_test_util.h"
#include "simulator/cost_params.h"

namespace mplan {
namespace {

using planner::from_parallel;
using planner::group_key;

// A candidate with the given layout fields and step time; the interval is step x [0.9, 1.1] (ratio 1.22).
Candidate cand(int tp, int pp, int vpp, bool overlap, double step) {
  Candidate c;
  ParallelConfig& p = c.plan.parallel;
  p.tp = tp;
  p.sp = tp > 1;
  p.tp_comm_overlap = overlap;
  p.pp = pp;
  p.vpp = vpp;
  p.schedule = vpp > 1 ? Schedule::interleaved : Schedule::one_f_one_b;
  p.world_size = 64;
  c.report.step_time_s = step;
  c.report.step_time_s_interval = {step * 0.9, step * 1.1};
  return c;
}

TEST(Grouping, FoldsRefinementsWhoseIntervalOverlapsTheBest) {
  std::vector<Candidate> ranked = {cand(4, 2, 4, true, 1.00), cand(4, 2, 2, false, 1.05), cand(8, 1, 1, false, 1.10),
                                   cand(4, 2, 1, true, 1.20), cand(4, 2, 8, false, 1.30)};
  GroupedResult g = group_ranked(ranked, 10, true);
  // 1.05 and 1.20 overlap 1.00's [0.90, 1.10] (lower ends 0.945 and 1.08); 1.30 (lower end 1.17) does not:
  // it leads a group of its own even though it overlaps 1.20, a member (no chaining)
  ASSERT_EQ(g.best.size(), 3u);
  EXPECT_EQ(g.best[0].report.step_time_s, 1.00);
  EXPECT_EQ(g.best[1].report.step_time_s, 1.10);
  EXPECT_EQ(g.best[2].report.step_time_s, 1.30);
  ASSERT_EQ(g.folded.size(), 3u);
  ASSERT_EQ(g.folded[0].size(), 2u);
  EXPECT_EQ(g.folded[0][0].report.step_time_s, 1.05);
  EXPECT_EQ(g.folded[0][1].report.step_time_s, 1.20);
  EXPECT_TRUE(g.folded[1].empty());
  EXPECT_TRUE(g.folded[2].empty());
  // top K counts groups
  GroupedResult two = group_ranked(ranked, 2, true);
  ASSERT_EQ(two.best.size(), 2u);
  EXPECT_EQ(two.folded[0].size(), 2u);
  // not distinct: every layout its own group
  GroupedResult all = group_ranked(ranked, 10, false);
  EXPECT_EQ(all.best.size(), 5u);
}

TEST(Grouping, KeyClearsOnlyRefinements) {
  planner::Layout a;
  a.tp = 4;
  a.sp = 1;
  a.pp = 4;
  a.vpp = 3;
  a.schedule = Schedule::interleaved;
  a.overlap = 1;
  a.a2a = 1;
  a.pipe = planner::PipeLayout::balanced;
  planner::Layout b = a;
  b.vpp = 1;
  b.schedule = Schedule::one_f_one_b;
  b.overlap = 0;
  b.a2a = 0;
  b.pipe = planner::PipeLayout::even;
  EXPECT_TRUE(group_key(a) == group_key(b));
  for (auto change : {+[](planner::Layout& l) { l.tp = 8; }, +[](planner::Layout& l) { l.zero = 2; },
                      +[](planner::Layout& l) { l.mbs = 2; }, +[](planner::Layout& l) { l.recompute = Recompute::full; },
                      +[](planner::Layout& l) { l.schedule = Schedule::zero_bubble; }, +[](planner::Layout& l) { l.sp = 0; }}) {
    planner::Layout c = a;
    change(c);
    EXPECT_FALSE(group_key(a) == group_key(c)) << planner::short_name(c);
  }
}

// Every group of a real search: members share the best's structure, overlap its interval and rank after it.
void check_groups(const SearchResult& r) {
  ASSERT_EQ(r.folded.size(), r.top.size());
  for (size_t g = 0; g < r.top.size(); ++g) {
    const Candidate& best = r.top[g];
    for (const Candidate& m : r.folded[g]) {
      EXPECT_TRUE(group_key(from_parallel(m.plan.parallel)) == group_key(from_parallel(best.plan.parallel)));
      EXPECT_LE(m.report.step_time_s_interval.first, best.report.step_time_s_interval.second);
      EXPECT_GE(m.report.step_time_s, best.report.step_time_s);
    }
  }
}

TEST(Grouping, SearchCountsGroupsAndFindsEveryMember) {
  Plan j = test::job(test::tiny_dense(), test::cluster("dgx-h100"), 8, 32, 2048);
  SearchOptions o;
  o.top_k = 4;
  o.fix = {{"tp", 2}, {"pp", 2}};  // layouts with refinements: vpp, the split, TP-comm overlap
  auto pruned = search(j, shipped_calibration(), o);
  ASSERT_TRUE(pruned.ok());
  o.exhaustive = true;
  auto full = search(j, shipped_calibration(), o);
  ASSERT_TRUE(full.ok());
  ASSERT_EQ(pruned->top.size(), 4u);
  check_groups(*pruned);
  size_t folded = 0;
  for (size_t g = 0; g < full->top.size(); ++g) {
    EXPECT_TRUE(from_parallel(full->top[g].plan.parallel) == from_parallel(pruned->top[g].plan.parallel)) << g;
    auto names = [](const std::vector<Candidate>& v) {
      std::string o;
      for (const Candidate& c : v)
        o += "\n  " + planner::short_name(from_parallel(c.plan.parallel)) + " " + std::to_string(c.report.step_time_s);
      return o;
    };
    ASSERT_EQ(full->folded[g].size(), pruned->folded[g].size())
        << "group " << g + 1 << " best " << planner::short_name(from_parallel(full->top[g].plan.parallel)) << " "
        << full->top[g].report.step_time_s << "\nfull:" << names(full->folded[g]) << "\npruned:" << names(pruned->folded[g]);
    folded += full->folded[g].size();
  }
  EXPECT_GT(folded, 0u);  // the job has refinements to fold (vpp, overlap)
  EXPECT_LT(pruned->stats.simulated, full->stats.simulated);
}

// The job of issue 32: its top 10 used to be one layout with ten vpp values.
TEST(Grouping, Llama70bTopTenAreStructurallyDifferent) {
  Plan j = test::job(model_preset("llama3-70b").value(), test::cluster("dgx-h100"), 512, 1024, 8192);
  SearchOptions o;
  o.top_k = 10;
  auto r = search(j, shipped_calibration(), o);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->top.size(), 10u);
  check_groups(*r);
  std::set<planner::Layout> keys;
  for (const Candidate& c : r->top) keys.insert(group_key(from_parallel(c.plan.parallel)));
  EXPECT_EQ(keys.size(), 10u);
}

}  // namespace
}  // namespace mplan

// A tie's advice names the compute op that differs most: a collective's time is in the exposed
// communication parts, so it is never named for a compute difference.
namespace mplan {
namespace {
TEST(Ranking, SeparatingMeasurementNamesAComputeOpNotACollective) {
  StepReport a, b;
  a.time.compute = 2.0;
  b.time.compute = 1.5;
  a.ops = {{"tp_allgather", 0.9, 1}, {"fc1_gemm", 0.7, 1}, {"attn_core", 0.3, 1}};
  b.ops = {{"tp_allgather", 0.1, 1}, {"fc1_gemm", 0.4, 1}, {"attn_core", 0.3, 1}};
  std::string s = planner::separating_measurement(a, b);
  EXPECT_NE(s.find("differ most in compute (+0.500 s per step)"), std::string::npos) << s;
  EXPECT_NE(s.find("the fc1_gemm kernels"), std::string::npos) << s;
  EXPECT_EQ(s.find("tp_allgather"), std::string::npos) << s;
}
}  // namespace
}  // namespace mplan
