// Schedule tables: every (micro-batch, chunk) runs F then B (then W) exactly once, warm-up lengths
// match Megatron's, and data dependencies between stages can be satisfied (no deadlock).
#include <gtest/gtest.h>

#include <map>
#include <tuple>

#include "core/schedule.h"

using namespace mplan;

namespace {

// Executes the per-stage lists with unit-time actions, honouring cross-stage dependencies; returns
// false on deadlock. Forward of chunk c on stage s needs forward of the previous (stage, chunk);
// backward needs the backward of the next one (and its own forward).
bool runs_without_deadlock(Schedule sch, int pp, int vpp, int m) {
  std::vector<std::vector<Action>> lists(pp);
  for (int s = 0; s < pp; ++s) lists[s] = schedule_actions(sch, pp, vpp, m, s);
  std::map<std::tuple<char, int, int, int>, bool> done;  // phase, mb, chunk, stage
  std::vector<size_t> pos(pp, 0);
  bool progress = true;
  while (progress) {
    progress = false;
    for (int s = 0; s < pp; ++s) {
      if (pos[s] >= lists[s].size()) continue;
      const Action& a = lists[s][pos[s]];
      bool ready = true;
      if (a.phase == Phase::F) {
        if (s > 0)
          ready = done[{'F', a.microbatch, a.chunk, s - 1}];
        else if (a.chunk > 0)
          ready = done[{'F', a.microbatch, a.chunk - 1, pp - 1}];
      } else if (a.phase == Phase::B) {
        ready = done[{'F', a.microbatch, a.chunk, s}];
        if (s < pp - 1)
          ready = ready && done[{'B', a.microbatch, a.chunk, s + 1}];
        else if (a.chunk < vpp - 1)
          ready = ready && done[{'B', a.microbatch, a.chunk + 1, 0}];
      } else {
        ready = done[{'B', a.microbatch, a.chunk, s}];
      }
      if (ready) {
        done[{char(a.phase), a.microbatch, a.chunk, s}] = true;
        ++pos[s];
        progress = true;
      }
    }
  }
  for (int s = 0; s < pp; ++s)
    if (pos[s] != lists[s].size()) return false;
  return true;
}

void expect_complete(const std::vector<Action>& a, int m, int vpp, bool w) {
  std::map<std::tuple<int, int>, int> f, b, wc;
  for (const Action& x : a) {
    auto key = std::make_tuple(x.microbatch, x.chunk);
    if (x.phase == Phase::F) f[key]++;
    if (x.phase == Phase::B) {
      EXPECT_EQ(f[key], 1) << "B before F for " << x.microbatch;
      b[key]++;
    }
    if (x.phase == Phase::W) {
      EXPECT_EQ(b[key], 1);
      wc[key]++;
    }
  }
  EXPECT_EQ(int(f.size()), m * vpp);
  EXPECT_EQ(int(b.size()), m * vpp);
  for (auto& [k, n] : f) EXPECT_EQ(n, 1);
  for (auto& [k, n] : b) EXPECT_EQ(n, 1);
  EXPECT_EQ(int(wc.size()), w ? m * vpp : 0);
}

}  // namespace

TEST(Schedule, OneFOneBWarmup) {
  auto a = schedule_actions(Schedule::one_f_one_b, 4, 1, 8, 0);
  EXPECT_EQ(format_actions(a).substr(0, 23), "F0.0 F1.0 F2.0 F3.0 B0.");
  auto last = schedule_actions(Schedule::one_f_one_b, 4, 1, 8, 3);
  EXPECT_EQ(format_actions(last).substr(0, 14), "F0.0 B0.0 F1.0");
  EXPECT_EQ(max_in_flight(a), 4);
  EXPECT_EQ(max_in_flight(last), 1);
  EXPECT_EQ(max_in_flight(schedule_actions(Schedule::gpipe, 4, 1, 8, 0)), 8);
}

TEST(Schedule, EveryScheduleIsCompleteAndDeadlockFree) {
  for (int pp : {1, 2, 4})
    for (int m : {1, 4, 8}) {
      for (Schedule s : {Schedule::gpipe, Schedule::one_f_one_b, Schedule::zero_bubble}) {
        for (int st = 0; st < pp; ++st) expect_complete(schedule_actions(s, pp, 1, m, st), m, 1, s == Schedule::zero_bubble);
        EXPECT_TRUE(runs_without_deadlock(s, pp, 1, m)) << to_string(s) << " pp" << pp << " m" << m;
      }
    }
  for (int pp : {2, 4})
    for (int vpp : {2, 3})
      for (int m : {pp, 2 * pp, 4 * pp}) {
        for (int st = 0; st < pp; ++st) expect_complete(schedule_actions(Schedule::interleaved, pp, vpp, m, st), m, vpp, false);
        EXPECT_TRUE(runs_without_deadlock(Schedule::interleaved, pp, vpp, m)) << "pp" << pp << " vpp" << vpp << " m" << m;
      }
}

TEST(Schedule, InterleavedChunkMapping) {
  // pp=2, vpp=2, m=4: virtual micro-batches 0..7 -> (mb, chunk): (0,0)(1,0)(0,1)(1,1)(2,0)(3,0)(2,1)(3,1)
  auto a = schedule_actions(Schedule::interleaved, 2, 2, 4, 1);
  std::vector<Action> f;
  for (auto& x : a)
    if (x.phase == Phase::F) f.push_back(x);
  ASSERT_EQ(f.size(), 8u);
  EXPECT_EQ(f[2], (Action{Phase::F, 0, 1}));
  EXPECT_EQ(f[4], (Action{Phase::F, 2, 0}));
  // warm-up on the last stage = (vpp-1)*pp = 2 forwards before the first backward
  EXPECT_EQ(a[2].phase, Phase::F);
  EXPECT_EQ(a[3].phase, Phase::B);
}

TEST(Schedule, ZeroBubbleKeepsOneFOneBMemory) {
  for (int st = 0; st < 4; ++st)
    EXPECT_EQ(max_in_flight(schedule_actions(Schedule::zero_bubble, 4, 1, 8, st)),
              max_in_flight(schedule_actions(Schedule::one_f_one_b, 4, 1, 8, st)));
}
