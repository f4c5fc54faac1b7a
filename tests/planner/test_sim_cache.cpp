// SimCache: simulations that share a cache (the planner's) give bit for bit the reports of
// simulations without one, whatever was simulated with the cache before (schedule tables, op-list
// costs and buffers are reused, never a different answer).
#include <gtest/gtest.h>

#include <algorithm>

#include "planner/planner.h"
#include "planner_test_util.h"
#include "simulator/cost_params.h"
#include "simulator/pipeline_sim.h"
#include "simulator/simulator.h"

namespace mplan {
namespace {

// Every layout the search kept (the best of each group and its folded members) of a few jobs.
std::vector<Plan> searched_plans(const Plan& job, int top_k) {
  SearchOptions o;
  o.top_k = top_k;
  o.threads = 2;
  auto r = search(job, shipped_calibration(), o);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
  std::vector<Plan> out;
  if (!r.ok()) return out;
  for (size_t g = 0; g < r->top.size(); ++g) {
    out.push_back(r->top[g].plan);
    for (const Candidate& c : r->folded[g]) out.push_back(c.plan);
  }
  return out;
}

std::string report_text(const Plan& p, SimCache* cache) {
  const CostParams prm = shipped_calibration().params_for(p.cluster.gpu);
  auto r = simulate(p, prm, SimOptions{false, false, cache});
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
  return r.ok() ? report_to_json(*r).dump() : "";
}

void expect_cache_neutral(const Plan& job, int top_k, const std::string& what) {
  std::vector<Plan> plans = searched_plans(job, top_k);
  ASSERT_GT(plans.size(), 3u) << what;
  std::vector<std::string> plain;
  plain.reserve(plans.size());
  for (const Plan& p : plans) plain.push_back(report_text(p, nullptr));
  // one cache for all, in order and again in reverse order (entries made by other layouts reused)
  SimCache cache;
  for (size_t i = 0; i < plans.size(); ++i) EXPECT_EQ(report_text(plans[i], &cache), plain[i]) << what << " layout " << i;
  for (size_t i = plans.size(); i-- > 0;) EXPECT_EQ(report_text(plans[i], &cache), plain[i]) << what << " again, layout " << i;
}

TEST(SimCache, SameReportsAsWithoutDense) {
  expect_cache_neutral(test::job(test::tiny_dense(), test::cluster("dgx-h100"), 16, 64, 2048), 12, "tiny dense");
  expect_cache_neutral(test::job(test::tiny_gpt(), test::cluster("dgx-h100"), 8, 32, 2048, Precision::fp8), 8, "tiny gpt fp8");
}

TEST(SimCache, SameReportsAsWithoutMoe) {
  expect_cache_neutral(test::job(test::tiny_moe(), test::cluster("dgx-h100"), 16, 32, 2048), 10, "tiny moe");
}

TEST(SimCache, ScheduleTablesAreTheSchedule) {
  SimCache cache;
  for (Schedule s : {Schedule::gpipe, Schedule::one_f_one_b, Schedule::interleaved, Schedule::zero_bubble}) {
    const int vpp = s == Schedule::interleaved ? 2 : 1;
    const ScheduleTable& t = cache.schedule(s, 4, vpp, 8);
    ASSERT_EQ(t.actions.size(), 4u);
    for (int st = 0; st < 4; ++st) {
      EXPECT_EQ(t.actions[size_t(st)], schedule_actions(s, 4, vpp, 8, st));
      EXPECT_EQ(t.max_in_flight[size_t(st)], max_in_flight(t.actions[size_t(st)]));
    }
    EXPECT_EQ(&cache.schedule(s, 4, vpp, 8), &t);  // made once
  }
}

// lists() gives the same lists without the order; schedule() completes that same table afterwards.
TEST(SimCache, ListsFirstThenTheCompleteTable) {
  SimCache cache;
  const ScheduleTable& l = cache.lists(Schedule::interleaved, 4, 2, 8);
  EXPECT_TRUE(l.order.empty());
  EXPECT_EQ(l.actions, make_schedule_table(Schedule::interleaved, 4, 2, 8).actions);
  const ScheduleTable& t = cache.schedule(Schedule::interleaved, 4, 2, 8);
  EXPECT_EQ(&t, &l);
  const ScheduleTable full = make_schedule_table(Schedule::interleaved, 4, 2, 8);
  EXPECT_EQ(t.order, full.order);
  EXPECT_EQ(t.max_in_flight, full.max_in_flight);
  EXPECT_EQ(&cache.lists(Schedule::interleaved, 4, 2, 8), &t);
}

}  // namespace
}  // namespace mplan
