// Simulator closed forms: ring all-reduce alpha-beta, 1F1B / interleaved bubble fractions with
// communication switched off, Megatron's bytes-per-parameter for the distributed optimizer.
#include <gtest/gtest.h>

#include <cmath>

#include "core/presets.h"
#include "sim_fixtures.h"
#include "simulator/collectives.h"
#include "simulator/simulator.h"

using namespace mplan;

TEST(Collectives, RingAllReduceAlphaBeta) {
  ClusterSpec c = *cluster_preset("dgx-h100");
  CostParams p = default_cost_params(c);
  p.network_eff = 0.5;
  double bytes = 1e9;
  int n = 16;
  GroupPlacement g;  // one member per domain: a flat ring over the network
  g.size = n;
  g.domains = n;
  g.max_per_domain = 1;
  double alpha = c.scale_out_latency_us * 1e-6, bw = c.scale_out_bw_gbps * 1e9 * 0.5;
  double ring = 2.0 * (n - 1) * alpha + 2.0 * (n - 1) / n * bytes / bw;
  double tree = 2.0 * std::ceil(std::log2(n)) * alpha + 2.0 * (n - 1) / n * bytes / bw;
  EXPECT_NEAR(collective_time_s(Collective::all_reduce, bytes, g, c, p), std::min(ring, tree), 1e-12);
  // all-gather and reduce-scatter move half of an all-reduce
  double ag = collective_time_s(Collective::all_gather, bytes, g, c, p);
  EXPECT_NEAR(ag, (n - 1) * alpha + double(n - 1) / n * bytes / bw, 1e-12);
  // inside one NVLink domain it is faster
  GroupPlacement in;
  in.size = 8;
  in.domains = 1;
  in.max_per_domain = 8;
  EXPECT_LT(collective_time_s(Collective::all_reduce, bytes, in, c, p),
            collective_time_s(Collective::all_reduce, bytes, g, c, p));
}

namespace {
// bubble share of the pipelined part of the step (the optimizer step follows the pipeline flush)
double pipeline_bubble(const StepReport& r) {
  return r.time.bubble / (r.step_time_s - r.time.optimizer - r.time.dp_comm_exposed);
}
}  // namespace

TEST(Simulator, OneFOneBBubbleMatchesClosedForm) {
  for (int pp : {2, 4, 8})
    for (int m : {pp, 2 * pp, 8 * pp}) {
      Plan plan = pipeline_only_plan(pp, 1, m);
      auto r = simulate(plan, no_comm_params(plan.cluster));
      ASSERT_TRUE(r.ok()) << r.error().message();
      double want = double(pp - 1) / (m + pp - 1);
      // the first and last stages also hold the (tiny) embedding and head
      EXPECT_NEAR(pipeline_bubble(*r), want, 0.05 * want + 1e-3) << "pp" << pp << " m" << m;
    }
}

TEST(Simulator, InterleavedBubbleMatchesClosedForm) {
  for (int pp : {2, 4})
    for (int vpp : {2, 4})
      for (int m : {pp, 4 * pp}) {
        Plan plan = pipeline_only_plan(pp, vpp, m);
        auto r = simulate(plan, no_comm_params(plan.cluster));
        ASSERT_TRUE(r.ok()) << r.error().message();
        double want = double(pp - 1) / (vpp * m + pp - 1);
        EXPECT_NEAR(pipeline_bubble(*r), want, 0.05 * want + 1e-3) << "pp" << pp << " vpp" << vpp << " m" << m;
      }
}

TEST(Simulator, ZeroBubbleBeatsOneFOneB) {
  Plan a = pipeline_only_plan(4, 1, 8);
  Plan b = a;
  b.parallel.schedule = Schedule::zero_bubble;
  CostParams p = no_comm_params(a.cluster);
  auto ra = simulate(a, p), rb = simulate(b, p);
  ASSERT_TRUE(ra.ok() && rb.ok());
  // ZB-H1 removes about a third of the 1F1B bubble when F, B and W take similar time
  EXPECT_LT(pipeline_bubble(*rb), 0.8 * pipeline_bubble(*ra)) << pipeline_bubble(*rb) << " vs " << pipeline_bubble(*ra);
  EXPECT_LT(rb->step_time_s, ra->step_time_s);
}

TEST(Simulator, DistributedOptimizerBytesPerParameter) {
  // Megatron-LM distributed optimizer: 6 + 12/d bytes per parameter (bf16 params, fp32 grads,
  // fp32 master + Adam states sharded over d); DDP: 18 bytes.
  Plan plan = pipeline_only_plan(1, 1, 8);
  plan.parallel.world_size = 8;
  plan.training.global_batch_size = 64;
  for (int zero : {0, 1}) {
    plan.parallel.zero = zero;
    auto r = simulate(plan, no_comm_params(plan.cluster));
    ASSERT_TRUE(r.ok()) << r.error().message();
    auto st = params_per_stage(plan.model, plan.parallel);
    double params = st[0].total();
    double model_states = (r->memory.weights + r->memory.gradients + r->memory.optimizer) * (1024.0 * 1024 * 1024);
    double want = params * (zero == 0 ? 18.0 : 6.0 + 12.0 / 8);
    EXPECT_NEAR(model_states / want, 1.0, 1e-9) << "zero " << zero;
  }
}
