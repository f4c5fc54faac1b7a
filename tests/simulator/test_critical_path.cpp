// The step's critical path (simulator/critical_path.h): on 1F1B, interleaved and zero-bubble
// pipelines, with data-parallel buckets (overlapped and not), FSDP and MoE expert-parallel
// communication, the DAG's longest path equals the simulated step time and every event's earliest
// start its simulated start; zeroing a zero-slack event's duration shortens the step and zeroing a
// positive-slack one does not; simulate() reports the path, its kinds and marks the trace.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "sim_fixtures.h"
#include "simulator/critical_path.h"
#include "simulator/pipeline_sim.h"
#include "simulator/simulator.h"
#include "simulator/workload.h"

namespace mplan {
namespace {

struct Case {
  std::string name;
  Plan plan;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  out.push_back({"1f1b pp4 dp2 zero1", preset_plan("llama3-8b", 16, 32, 4096, 2, 4)});
  out.push_back({"interleaved pp4 vpp2 dp2", preset_plan("llama3-8b", 16, 32, 4096, 2, 4, 2)});
  Plan zb = preset_plan("llama3-8b", 16, 32, 4096, 2, 4);
  zb.parallel.schedule = Schedule::zero_bubble;
  out.push_back({"zero-bubble pp4 dp2", zb});
  Plan z0 = preset_plan("llama3-8b", 16, 16, 4096, 1, 2);
  z0.parallel.zero = 0;
  z0.parallel.overlap_grad_reduce = false;
  out.push_back({"pp2 dp8 zero0 no grad overlap", z0});
  Plan z3 = preset_plan("llama3-8b", 16, 32, 4096, 2, 2);
  z3.parallel.zero = 3;
  out.push_back({"pp2 dp4 zero3 (FSDP)", z3});
  out.push_back({"moe pp2 ep8 (EP all-to-all)", preset_plan("mixtral-8x7b", 64, 64, 4096, 2, 2, 1, 8)});
  Plan one = preset_plan("llama3-8b", 8, 16, 4096, 1, 1);
  out.push_back({"pp1 dp8", one});
  return out;
}

struct Sim {
  StepGraph g;
  PipelineResult pr;
};

Sim run(const Plan& p) {
  CostParams prm = shipped_calibration().params_for(p.cluster.gpu);
  Workload w = build_workload(p, prm);
  Sim s;
  s.pr = simulate_pipeline(w, p.parallel, nullptr, nullptr, &s.g);
  return s;
}

TEST(CriticalPath, LengthEqualsStepTimeAndStartsAreEarliest) {
  for (const Case& c : cases()) {
    ASSERT_TRUE(validate_layout(c.plan.model, c.plan.cluster, c.plan.training, c.plan.parallel).empty()) << c.name;
    Sim s = run(c.plan);
    CriticalPathResult cp = critical_path(s.g);
    EXPECT_NEAR(cp.length_s, s.pr.step_time_s, 1e-9 * s.pr.step_time_s) << c.name;
    for (size_t i = 0; i < s.g.events.size(); ++i)
      EXPECT_NEAR(cp.earliest_s[i], s.g.events[i].start_s, 1e-9 * s.pr.step_time_s) << c.name << " event " << i;
    // the path is a chain in time with zero slack, and the shares add up
    ASSERT_FALSE(cp.path.empty()) << c.name;
    double share = 0;
    for (const auto& k : cp.by_kind) share += k.share;
    EXPECT_NEAR(share, 1.0, 1e-9) << c.name;
    for (int i : cp.path) EXPECT_LE(cp.slack_s[size_t(i)], 1e-9 * cp.length_s) << c.name;
    // and simulate() reports the same
    auto r = simulate(c.plan, shipped_calibration().params_for(c.plan.cluster.gpu), SimOptions{false, true});
    ASSERT_TRUE(r.ok()) << c.name;
    EXPECT_NEAR(r->critical_path_s, r->step_time_s, 1e-9 * r->step_time_s) << c.name;
    EXPECT_EQ(r->critical_path.size(), cp.path.size()) << c.name;
  }
}

TEST(CriticalPath, RemovingZeroSlackShortensRemovingSlackDoesNot) {
  for (const Case& c : cases()) {
    Sim s = run(c.plan);
    CriticalPathResult cp = critical_path(s.g);
    const double L = cp.length_s, tol = 1e-9 * L;
    int shortened = 0, kept = 0, ties = 0;
    for (size_t i = 0; i < s.g.events.size(); ++i) {
      const StepEvent& e = s.g.events[i];
      if (e.dur_s <= 1e-6 * L) continue;
      double without = critical_path(s.g, int(i)).length_s;
      if (cp.slack_s[i] <= tol) {
        // it shortens the step, unless another longest path ties: then that one avoids it and was
        // all zero-slack before
        EXPECT_LE(without, L + tol) << c.name << " event " << i;
        if (without < L - tol) {
          ++shortened;
        } else {
          CriticalPathResult alt = critical_path(s.g, int(i));
          for (int j : alt.path) {
            if (j == int(i)) continue;
            EXPECT_LE(cp.slack_s[size_t(j)], tol) << c.name << " event " << i << ": the tie must be another critical path";
          }
          EXPECT_TRUE(std::find(alt.path.begin(), alt.path.end(), int(i)) == alt.path.end() || s.g.events[i].dur_s == 0)
              << c.name << " event " << i;
          ++ties;
        }
      } else if (cp.slack_s[i] >= e.dur_s) {
        EXPECT_NEAR(without, L, tol) << c.name << " event " << i << " slack " << cp.slack_s[i];
        ++kept;
      } else {  // slack shorter than the event: removing it shortens by at most its duration less its slack
        EXPECT_GE(without, L - (e.dur_s - cp.slack_s[i]) - tol) << c.name << " event " << i;
        EXPECT_LE(without, L + tol) << c.name << " event " << i;
      }
    }
    EXPECT_GT(shortened, 0) << c.name << ": some zero-slack event must shorten the step";
    EXPECT_LE(ties, shortened) << c.name;
    EXPECT_GT(kept, 0) << c.name << ": some event has slack to spare";
    // the path's own last event always shortens the step when removed (nothing ends later)
    int last = cp.path.back();
    if (s.g.events[size_t(last)].dur_s > tol) EXPECT_LT(critical_path(s.g, last).length_s, L - tol) << c.name;
  }
}

TEST(CriticalPath, ReportGroupsByKindAndMarksTrace) {
  Plan p = preset_plan("llama3-8b", 16, 32, 4096, 2, 4);
  auto r = simulate(p, shipped_calibration().params_for(p.cluster.gpu), SimOptions{true, false});
  ASSERT_TRUE(r.ok());
  ASSERT_FALSE(r->critical_by_kind.empty());
  bool stage_kind = false, p2p = false;
  for (const auto& k : r->critical_by_kind) {
    stage_kind = stage_kind || k.kind.rfind("stage ", 0) == 0;
    p2p = p2p || k.kind == "pp p2p";
    EXPECT_GT(k.share, 0);
  }
  EXPECT_TRUE(stage_kind);
  EXPECT_TRUE(p2p);  // a 4-stage pipeline's critical path crosses stages
  int critical = 0;
  for (const auto& e : r->trace) critical += e.critical ? 1 : 0;
  EXPECT_GE(critical, int(r->critical_path.size()) - 1);  // sends of zero length are not drawn
  nlohmann::json j = report_to_json(*r);
  ASSERT_TRUE(j.contains("critical_path"));
  EXPECT_EQ(j["critical_path"]["events"].size(), r->critical_path.size());
  EXPECT_FALSE(j["critical_path"]["by_kind"].empty());
  nlohmann::json t = trace_to_json(*r, p);
  int marked = 0, track = 0;
  for (const auto& e : t["traceEvents"]) {
    if (e.contains("args") && e["args"].contains("critical")) ++marked;
    if (e.value("pid", 0) == 1000000 && e.value("ph", "") == "X") ++track;
  }
  EXPECT_EQ(marked, critical * 2);  // on its stage and on the critical-path track
  EXPECT_EQ(track, critical);
}

}  // namespace
}  // namespace mplan
