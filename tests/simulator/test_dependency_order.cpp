// The pipeline simulation's dependency order (ScheduleTable::order): every action once, each after
// what it reads, and the simulation along it (no trace) equal bit for bit to the (time, sequence)
// event queue (with a trace), for every schedule.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/schedule_stages.h"
#include "simulator/pipeline_sim.h"
#include "tests/simulator/sim_fixtures.h"

namespace mplan {
namespace {

struct Shape {
  Schedule s;
  int pp, vpp, m;
};

const std::vector<Shape>& shapes() {
  static const std::vector<Shape> v = {
      {Schedule::one_f_one_b, 1, 1, 1},  {Schedule::one_f_one_b, 4, 1, 1},  {Schedule::one_f_one_b, 4, 1, 3},
      {Schedule::one_f_one_b, 8, 1, 64}, {Schedule::gpipe, 4, 1, 6},        {Schedule::interleaved, 2, 2, 2},
      {Schedule::interleaved, 4, 3, 8},  {Schedule::interleaved, 8, 4, 16}, {Schedule::interleaved, 4, 8, 4},
      {Schedule::zero_bubble, 4, 1, 5},  {Schedule::zero_bubble, 6, 1, 12}, {Schedule::zero_bubble, 2, 1, 1},
  };
  return v;
}

// A table holds each stage's own list (schedule_all_stages makes ZB-H1's lists in one run).
TEST(DependencyOrder, TablesHoldEachStagesList) {
  for (const Shape& sh : shapes()) {
    SCOPED_TRACE(to_string(sh.s) + " pp" + std::to_string(sh.pp) + " vpp" + std::to_string(sh.vpp) + " m" + std::to_string(sh.m));
    ScheduleTable t = make_schedule_table(sh.s, sh.pp, sh.vpp, sh.m);
    ASSERT_EQ(t.actions.size(), size_t(sh.pp));
    EXPECT_EQ(schedule_all_stages(sh.s, sh.pp, sh.vpp, sh.m), t.actions);
    for (int st = 0; st < sh.pp; ++st) {
      EXPECT_EQ(t.actions[size_t(st)], schedule_actions(sh.s, sh.pp, sh.vpp, sh.m, st)) << "stage " << st;
      EXPECT_EQ(t.max_in_flight[size_t(st)], max_in_flight(t.actions[size_t(st)]));
    }
  }
}

TEST(DependencyOrder, EveryActionOnceAfterWhatItReads) {
  for (const Shape& sh : shapes()) {
    SCOPED_TRACE(to_string(sh.s) + " pp" + std::to_string(sh.pp) + " vpp" + std::to_string(sh.vpp) + " m" + std::to_string(sh.m));
    ScheduleTable t = make_schedule_table(sh.s, sh.pp, sh.vpp, sh.m);
    EXPECT_EQ(t.stuck_stage, -1);
    size_t total = 0;
    for (const auto& l : t.actions) total += l.size();
    ASSERT_EQ(t.order.size(), total);
    // replay: a forward after its input's forward, a backward after its forward and the backward
    // that sends its gradient, W after its B
    const int pp = sh.pp, vpp = sh.vpp, m = sh.m;
    auto slot = [&](int s, int c, int mb) { return (size_t(s) * vpp + c) * m + mb; };
    std::vector<char> f(size_t(pp) * vpp * m, 0), b(f.size(), 0);
    std::vector<size_t> pos(size_t(pp), 0);
    // per (stage, chunk): where its last backward is in the stage's list
    std::vector<size_t> final_b(size_t(pp) * vpp, SIZE_MAX);
    for (int s = 0; s < pp; ++s)
      for (size_t i = 0; i < t.actions[size_t(s)].size(); ++i)
        if (t.actions[size_t(s)][i].phase == Phase::B) final_b[size_t(s) * vpp + t.actions[size_t(s)][i].chunk] = i;
    for (const OrderStep& step : t.order) {
      const uint32_t s = step.stage;
      ASSERT_LT(s, uint32_t(pp));
      ASSERT_LT(pos[s], t.actions[s].size());
      const Action& a = t.actions[s][pos[s]++];
      const int st = int(s);
      // the step's precomputed fields are the action's
      EXPECT_EQ(step.phase, a.phase);
      EXPECT_EQ(step.sc, uint32_t(st * vpp + a.chunk));
      EXPECT_EQ(step.slot, uint32_t(slot(st, a.chunk, a.microbatch)));
      EXPECT_EQ(step.edge, (st == 0 && a.chunk == 0 ? OrderStep::kFirstChunk : 0) |
                               (st == pp - 1 && a.chunk == vpp - 1 ? OrderStep::kLastChunk : 0) |
                               (final_b[size_t(st) * vpp + a.chunk] == pos[s] - 1 ? OrderStep::kFinalBackward : 0));
      if (a.phase == Phase::F) {
        if (st > 0) {
          EXPECT_TRUE(f[slot(st - 1, a.chunk, a.microbatch)]);
        } else if (a.chunk > 0) {
          EXPECT_TRUE(f[slot(pp - 1, a.chunk - 1, a.microbatch)]);
        }
        f[slot(st, a.chunk, a.microbatch)] = 1;
      } else if (a.phase == Phase::B) {
        EXPECT_TRUE(f[slot(st, a.chunk, a.microbatch)]);
        if (st < pp - 1) {
          EXPECT_TRUE(b[slot(st + 1, a.chunk, a.microbatch)]);
        } else if (a.chunk < vpp - 1) {
          EXPECT_TRUE(b[slot(0, a.chunk + 1, a.microbatch)]);
        }
        b[slot(st, a.chunk, a.microbatch)] = 1;
      } else {
        EXPECT_TRUE(b[slot(st, a.chunk, a.microbatch)]);
      }
    }
  }
}

// What the report holds besides the timeline and the critical path.
std::string without_timeline(StepReport r) {
  r.trace.clear();
  r.memory_trace.clear();
  r.critical_path.clear();
  r.critical_path_s = 0;
  r.critical_by_kind.clear();
  return report_to_json(r).dump();
}

TEST(DependencyOrder, SimulationEqualsTheEventQueueBitForBit) {
  struct Case {
    Plan p;
    const char* what;
  };
  std::vector<Case> cases;
  cases.push_back({preset_plan("llama3.1-405b", 16384, 2048, 8192, 8, 16, 8), "405b interleaved"});
  cases.back().p.parallel.pipeline_layout = balanced_pipeline_layout(cases.back().p.model, 16, 8);
  cases.push_back({preset_plan("llama3-70b", 64, 256, 8192, 8, 4), "70b 1f1b"});
  cases.push_back({preset_plan("llama3-70b", 64, 256, 8192, 8, 4), "70b zero bubble"});
  cases.back().p.parallel.schedule = Schedule::zero_bubble;
  cases.push_back({preset_plan("llama3-70b", 64, 128, 8192, 8, 4), "70b gpipe"});
  cases.back().p.parallel.schedule = Schedule::gpipe;
  cases.push_back({preset_plan("mixtral-8x7b", 64, 256, 4096, 2, 4, 2, 8), "mixtral interleaved, ep"});
  cases.push_back({preset_plan("llama3-8b", 8, 64, 4096, 1, 1), "8b no pipeline"});
  for (Case& c : cases) {
    SCOPED_TRACE(c.what);
    SimCache cache;  // a cache serves one job
    CostParams prm = default_cost_params(c.p.cluster);
    SimOptions queued;
    queued.trace = true;
    auto a = simulate(c.p, prm, queued);
    auto b = simulate(c.p, prm);
    auto d = simulate(c.p, prm, SimOptions{false, false, &cache});
    ASSERT_TRUE(a.ok() && b.ok() && d.ok()) << (a.ok() ? "" : a.error().message());
    EXPECT_EQ(without_timeline(*a), without_timeline(*b));
    EXPECT_EQ(without_timeline(*a), without_timeline(*d));
    EXPECT_EQ(a->step_time_s, b->step_time_s);
  }
}

}  // namespace
}  // namespace mplan
