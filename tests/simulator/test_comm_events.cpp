// The timeline's communication (issue 20): every collective the time breakdown counts has events on
// its stream — TP, CP, EP dispatch/combine, DP gradient reduction and parameter gather, ZeRO-3
// gathers and scatters, PP transfers — and on every stage the exposed parts of the events of a
// stream add up to what that stage's breakdown counts (on the critical stage: StepReport::time).
// Before, a --zero 3 plan had no DP events and an ep8 MoE plan no EP events at all.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/presets.h"
#include "sim_fixtures.h"
#include "simulator/simulator.h"

namespace mplan {
namespace {

Plan make(const char* model, int gpus, int64_t gbs, int64_t seq, int tp, int pp, int vpp = 1) {
  return preset_plan(model, gpus, gbs, seq, tp, pp, vpp);
}

struct Case {
  std::string name;
  Plan plan;
};

std::vector<Case> cases() {
  std::vector<Case> c;
  c.push_back({"llama70b tp8 pp4 vpp5 tp-overlap", make("llama3-70b", 512, 512, 8192, 8, 4, 5)});
  c.back().plan.parallel.tp_comm_overlap = true;
  c.push_back({"llama8b tp2 no-sp pp2", make("llama3-8b", 64, 256, 4096, 2, 2)});
  c.back().plan.parallel.sp = false;
  c.push_back({"llama8b zero3", make("llama3-8b", 64, 256, 4096, 1, 1)});
  c.back().plan.parallel.zero = 3;
  c.push_back({"llama70b cp2 p2p pp2 full recompute", make("llama3-70b", 128, 128, 16384, 8, 2)});
  c.back().plan.parallel.cp = 2;
  c.back().plan.parallel.recompute = Recompute::full;
  c.push_back({"llama70b cp4 a2a zb", make("llama3-70b", 256, 128, 32768, 8, 2)});
  c.back().plan.parallel.cp = 4;
  c.back().plan.parallel.cp_comm_type = CpCommType::a2a;
  c.back().plan.parallel.schedule = Schedule::zero_bubble;
  c.push_back({"mixtral ep8", make("mixtral-8x7b", 64, 256, 4096, 1, 4)});
  c.back().plan.parallel.ep = 8;
  c.push_back({"qwen3-30b ep8 a2a-overlap pp2 vpp2", make("qwen3-30b-a3b", 64, 256, 4096, 1, 2, 2)});
  c.back().plan.parallel.ep = 8;
  c.back().plan.parallel.moe_a2a_overlap = true;
  return c;
}

StepReport traced(const Plan& p) {
  SimOptions o;
  o.trace = true;
  auto r = simulate(p, default_cost_params(p.cluster), o);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
  return r.ok() ? r.value() : StepReport{};
}

// Exposed seconds per stream of one stage's events.
std::map<std::string, double> exposed_by_stream(const StepReport& r, int stage) {
  std::map<std::string, double> m;
  for (const auto& e : r.trace)
    if (e.stage == stage && e.phase == 'C') m[e.stream] += e.exposed_s;
  return m;
}

TEST(CommEvents, ExposedPartsSumToTheBreakdownPerKind) {
  for (const Case& c : cases()) {
    StepReport r = traced(c.plan);
    ASSERT_FALSE(r.trace.empty()) << c.name;
    auto got = exposed_by_stream(r, r.critical_stage);
    const TimeBreakdown& t = r.time;
    const double tol = 1e-9 * r.step_time_s;
    EXPECT_NEAR(got["tp"], t.tp_comm_exposed, tol) << c.name;
    EXPECT_NEAR(got["cp"], t.cp_comm_exposed, tol) << c.name;
    EXPECT_NEAR(got["ep"], t.ep_comm_exposed, tol) << c.name;
    EXPECT_NEAR(got["dp"], t.dp_comm_exposed, tol) << c.name;
    EXPECT_NEAR(got["p2p"], t.pp_p2p_exposed, tol) << c.name;
    // every stage: the p2p waits are its idle waiting for transfers
    for (const auto& s : r.per_stage) EXPECT_NEAR(exposed_by_stream(r, s.stage)["p2p"], s.idle_p2p_s, tol) << c.name;
  }
}

TEST(CommEvents, EveryCountedCollectiveHasEvents) {
  for (const Case& c : cases()) {
    StepReport r = traced(c.plan);
    const ParallelConfig& p = c.plan.parallel;
    std::map<std::string, int> n;
    for (const auto& e : r.trace) {
      if (e.phase != 'C') continue;
      ++n[e.stream];
      EXPECT_GE(e.exposed_s, 0) << c.name << " " << e.name;
      EXPECT_LE(e.exposed_s, e.dur_s * (1 + 1e-12)) << c.name << " " << e.name;
      EXPECT_GT(e.dur_s, 0) << c.name << " " << e.name;
      EXPECT_LE(e.start_s + e.dur_s, r.step_time_s * (1 + 1e-9)) << c.name << " " << e.name;
    }
    // every F and B action of every stage carries its TP / CP / EP collectives
    const int actions = 2 * r.num_microbatches * p.vpp * p.pp;
    if (p.tp > 1) {
      EXPECT_GE(n["tp"], actions) << c.name;
    }
    if (p.cp > 1) {
      EXPECT_GE(n["cp"], actions) << c.name;
    }
    if (p.ep > 1) {
      EXPECT_GE(n["ep"], actions) << c.name;
    }
    if (p.zero == 3) {
      EXPECT_GE(n["dp"], actions) << c.name;
    } else if (p.dp() > 1) {
      EXPECT_GT(n["dp"], 0) << c.name;
    }
    if (p.pp > 1) {
      EXPECT_GE(n["p2p"], 2 * r.num_microbatches * p.vpp * (p.pp - 1)) << c.name;
    }
  }
}

TEST(CommEvents, EpAndZero3EventsAreNamedAndExposed) {
  Plan moe = make("mixtral-8x7b", 64, 256, 4096, 1, 4);
  moe.parallel.ep = 8;
  StepReport r = traced(moe);
  ASSERT_GT(r.time.ep_comm_exposed, 0);
  double ep = 0;
  for (const auto& e : r.trace)
    if (e.stream == "ep") {
      EXPECT_NE(e.name.find("EP dispatch + combine"), std::string::npos) << e.name;
      ep += e.exposed_s;
    }
  EXPECT_GT(ep, 0);
  Plan fsdp = make("llama3-8b", 64, 256, 4096, 1, 1);
  fsdp.parallel.zero = 3;
  StepReport z = traced(fsdp);
  int gathers = 0;
  for (const auto& e : z.trace) gathers += e.name.find("ZeRO-3 param all-gather") != std::string::npos;
  EXPECT_GE(gathers, 2 * z.num_microbatches);
}

TEST(CommEvents, ChromeTraceMarksExposedPartsAndLinksSendsToTheirConsumers) {
  // with TP-communication overlap the TP collectives are partly hidden: partly exposed events exist
  // whatever the calibration (a fully exposed or fully hidden event gets no "exposed" slice)
  Plan p = make("llama3-70b", 512, 512, 8192, 8, 4, 5);
  p.parallel.tp_comm_overlap = true;
  StepReport r = traced(p);
  auto j = trace_to_json(r, p);
  int partly_exposed = 0;
  for (const auto& e : r.trace) partly_exposed += e.exposed_s > 0 && e.exposed_s < e.dur_s;
  std::map<std::string, int> ph;
  std::map<int64_t, nlohmann::json> starts, finishes;
  int exposed = 0;
  for (const auto& e : j["traceEvents"]) {
    ph[e["ph"]]++;
    if (e["ph"] == "s") starts[e["id"].get<int64_t>()] = e;
    if (e["ph"] == "f") finishes[e["id"].get<int64_t>()] = e;
    if (e["ph"] == "X" && e["name"] == "exposed") ++exposed;
  }
  EXPECT_GT(partly_exposed, 0);
  EXPECT_EQ(exposed, partly_exposed);
  ASSERT_GT(starts.size(), 0u);
  EXPECT_EQ(starts.size(), finishes.size());
  // each flow ends where a compute slice of the receiving stage starts, after its send started
  for (const auto& [id, s] : starts) {
    const auto& f = finishes[id];
    EXPECT_GE(f["ts"].get<double>(), s["ts"].get<double>());
    EXPECT_EQ(f["tid"], 0);
    bool found = false;
    for (const auto& e : r.trace)
      if (e.stage == f["pid"].get<int>() && e.stream == "compute" && std::abs(e.start_s * 1e6 - f["ts"].get<double>()) < 1e-6)
        found = true;
    EXPECT_TRUE(found) << "flow " << id;
    if (!found) break;
  }
}

}  // namespace
}  // namespace mplan
