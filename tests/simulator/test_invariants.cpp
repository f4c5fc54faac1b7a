// Simulator invariants, monotonicity, determinism, trace and bad input.
#include <gtest/gtest.h>

#include <functional>
#include <utility>

#include "core/presets.h"
#include "sim_fixtures.h"
#include "simulator/simulator.h"

using namespace mplan;

namespace {
Plan llama70b(int gpus, int tp, int pp, int vpp, int mbs, int64_t gbs) {
  Plan p = preset_plan("llama3-70b", gpus, gbs, 8192, tp, pp, vpp);
  p.parallel.micro_batch_size = mbs;
  return p;
}

// The reports (which must simulate) of plan `a` and of `a` after `change`, with the default cost
// parameters of its cluster.
std::pair<StepReport, StepReport> before_after(const Plan& a, const std::function<void(Plan&)>& change) {
  Plan b = a;
  change(b);
  const CostParams p = default_cost_params(a.cluster);
  return {simulate_ok(a, p), simulate_ok(b, p)};
}
}  // namespace

TEST(Simulator, BreakdownSumsToStepTime) {
  for (auto plan : {llama70b(512, 8, 4, 1, 1, 1024), llama70b(512, 4, 8, 5, 1, 512), llama70b(256, 8, 1, 1, 1, 256)}) {
    plan.parallel.zero = 1;
    auto r = simulate(plan, default_cost_params(plan.cluster));
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_NEAR(r->time.total(), r->step_time_s, 1e-9 * r->step_time_s);
    EXPECT_GT(r->mfu, 0.05);
    EXPECT_LT(r->mfu, 1.0);
  }
}

TEST(Simulator, MoreMicrobatchesSmallerBubble) {
  double last = 1.0;
  for (int64_t gbs : {64, 128, 256, 512}) {
    auto r = simulate(llama70b(128, 8, 4, 1, 1, gbs), default_cost_params(*cluster_preset("dgx-h100")));
    ASSERT_TRUE(r.ok());
    EXPECT_LT(r->bubble_fraction, last) << gbs;
    last = r->bubble_fraction;
  }
}

TEST(Simulator, FullRecomputeTradesTimeForMemory) {
  auto [ra, rb] = before_after(llama70b(512, 8, 4, 1, 1, 1024), [](Plan& b) { b.parallel.recompute = Recompute::full; });
  EXPECT_LT(rb.memory.activations, 0.3 * ra.memory.activations);
  EXPECT_GT(rb.step_time_s, ra.step_time_s);
  EXPECT_GT(rb.time.recompute, 0);
}

TEST(Simulator, DeterministicOutput) {
  Plan a = llama70b(512, 4, 8, 5, 1, 512);
  auto p = default_cost_params(a.cluster);
  auto r1 = simulate(a, p), r2 = simulate(a, p);
  ASSERT_TRUE(r1.ok() && r2.ok());
  EXPECT_EQ(report_to_json(*r1).dump(), report_to_json(*r2).dump());
}

TEST(Simulator, TraceEventsLieInsideTheStep) {
  Plan a = llama70b(512, 4, 8, 5, 1, 512);
  SimOptions so;
  so.trace = true;
  auto r = simulate(a, default_cost_params(a.cluster), so);
  ASSERT_TRUE(r.ok());
  ASSERT_FALSE(r->trace.empty());
  for (const auto& e : r->trace) {
    EXPECT_GE(e.start_s, 0);
    EXPECT_LE(e.start_s + e.dur_s, r->step_time_s * (1 + 1e-9)) << e.name;
  }
  auto j = trace_to_json(*r, a);
  EXPECT_TRUE(j.contains("traceEvents"));
}

TEST(Simulator, MemoryExceedingCapacityIsAResult) {
  Plan a = llama70b(8, 8, 1, 1, 4, 32);  // 70B on one node without sharding cannot fit
  a.parallel.zero = 0;
  auto r = simulate(a, default_cost_params(a.cluster));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->fits);
  EXPECT_FALSE(r->warnings.empty());
}

TEST(Simulator, InvalidLayoutIsAnErrorNamingTheRule) {
  Plan a = llama70b(512, 16, 4, 1, 1, 1024);
  auto r = simulate(a, default_cost_params(a.cluster));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("tp=16 does not divide num_query_groups=8"), std::string::npos);
}

TEST(Simulator, LoraSkipsWeightGradients) {
  auto [ra, rb] = before_after(llama70b(64, 8, 1, 1, 1, 64), [](Plan& b) { b.training.method = TrainingMethod::lora; });
  EXPECT_LT(rb.time.compute, 0.8 * ra.time.compute);
  EXPECT_EQ(rb.memory.optimizer, 0);
}

TEST(Simulator, TritonAttentionIsSlowerWithTheSameMemory) {
  Plan p = llama70b(64, 8, 2, 1, 1, 64);
  Plan t = p;
  t.parallel.attention_backend = AttentionBackend::triton;
  CostParams c = default_cost_params(p.cluster);
  c.triton_attn_eff = 0.5;
  auto a = simulate(p, c), b = simulate(t, c);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_GT(b->step_time_s, a->step_time_s);
  EXPECT_DOUBLE_EQ(b->peak_memory_gib, a->peak_memory_gib);
  c.triton_attn_eff = 1.0;
  auto same = simulate(t, c);
  ASSERT_TRUE(same.ok());
  EXPECT_DOUBLE_EQ(same->step_time_s, a->step_time_s);
}
