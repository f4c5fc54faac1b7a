// Property test of the planner's bounds: over random layouts of several jobs (dense, GPT-style, MoE
// with every MoE runtime option — dispatchers, forced balance, capacity factors with and without
// padding, the all-to-all overlap the search offers —, CP, ZeRO 0-3/FSDP, recompute modules,
// offloading, LoRA, another framework's efficiency), every step-time bound the search uses (the
// cheap structure bound and the probe-free structure floor, the candidate bound before and after the
// selective probe; MoE experts as one GEMM per local expert and as one fused kernel) is at or
// below the simulated step time, and every memory bound (static, first backward, exact walk) at or
// below the simulated peak memory. >= 10,000 layouts in all.
#include <gtest/gtest.h>

#include <random>

#include "planner/bounds.h"
#include "planner/floor.h"
#include "planner/frame.h"
#include "planner/layer_costs.h"
#include "planner/space.h"
#include "planner_test_util.h"
#include "simulator/simulator.h"

namespace mplan {
namespace {

using namespace planner;

constexpr double kRel = 1e-9;  // the search's own slack against rounding

struct JobCase {
  std::string name;
  Plan plan;
  int samples;
};

std::vector<JobCase> jobs() {
  std::vector<JobCase> out;
  auto add = [&](std::string n, Plan p, int k) { out.push_back({std::move(n), std::move(p), k}); };
  add("dense bf16 16 GPUs", test::job(test::tiny_dense(), test::cluster("dgx-h100"), 16, 64, 8192), 1400);
  add("dense fp8 8 GPUs", test::job(test::tiny_dense(), test::cluster("dgx-h100"), 8, 32, 4096, Precision::fp8), 1000);
  Plan gpt = test::job(test::tiny_gpt(), test::cluster("dgx-a100-80g"), 12, 24, 2048, Precision::fp16, TrainingMethod::lora);
  gpt.parallel.attention_backend = AttentionBackend::unfused;
  add("gpt lora unfused a100", gpt, 800);
  Plan tt = test::job(test::tiny_dense(), test::cluster("dgx-h100"), 8, 16, 4096);
  tt.training.framework = Framework::torchtitan;
  add("dense torchtitan", tt, 700);
  add("moe alltoall learned", test::job(test::tiny_moe(), test::cluster("dgx-h100"), 16, 64, 4096), 1400);
  Plan deepep = test::job(test::tiny_moe(), test::cluster("dgx-h100"), 32, 64, 4096, Precision::fp8);
  deepep.parallel.moe_dispatcher = MoeDispatcher::deepep;
  deepep.parallel.moe_force_balance = true;
  add("moe deepep forced balance fp8 4 nodes", deepep, 1400);
  Plan hybrid = test::job(test::tiny_moe(), test::cluster("gb200-nvl72"), 16, 32, 4096);
  hybrid.parallel.moe_dispatcher = MoeDispatcher::hybridep;
  hybrid.parallel.moe_capacity_factor = 1.25;
  hybrid.parallel.moe_pad_to_capacity = true;
  add("moe hybridep capacity 1.25 padded nvl72", hybrid, 1200);
  Plan drop = test::job(test::tiny_moe(), test::cluster("dgx-h100"), 16, 32, 2048);
  drop.parallel.moe_capacity_factor = 0.75;
  add("moe capacity 0.75 dropping", drop, 1200);
  Plan fused = test::job(test::tiny_moe(), test::cluster("dgx-h100"), 16, 64, 4096, Precision::fp8);
  fused.parallel.moe_fused_grouped_mlp = true;  // the experts as one grouped kernel (not one GEMM per local expert)
  add("moe fused grouped mlp fp8", fused, 600);
  Plan lora = test::job(test::tiny_moe(), test::cluster("dgx-h100"), 8, 16, 2048, Precision::bf16, TrainingMethod::lora);
  add("moe lora", lora, 600);
  Plan big = test::job(model_preset("mixtral-8x7b").value(), test::cluster("dgx-h100"), 64, 256, 4096);
  add("mixtral 64 GPUs", big, 500);
  return out;
}

TEST(BoundProperty, BoundsNeverExceedSimulationOnRandomLayouts) {
  std::mt19937_64 rng(15015);
  int64_t checked = 0, a2a_on = 0, zero3 = 0, cp = 0, selective = 0, offload = 0;
  for (const JobCase& jc : jobs()) {
    Plan job = jc.plan;
    job = test::open_layout(job);
    const CostParams prm = shipped_calibration().params_for(job.cluster.gpu);
    Job J(job);
    Limits lim;
    Space space = enumerate_structures(J, lim, false);
    ASSERT_FALSE(space.structures.empty()) << jc.name;
    std::vector<Layout> all;
    for (const Structure& s : space.structures) structure_variants(J, lim, s, space.pipes[s.pipe_id], &all, nullptr);
    ASSERT_FALSE(all.empty()) << jc.name;
    std::vector<int> zeros;
    const unsigned fw_zero = framework_memory(job.training.framework).zero_levels;
    for (int z = 0; z <= 3; ++z)
      if (fw_zero & (1u << z)) zeros.push_back(z);
    Bounds bounds(J, prm);
    FrameBuilder frames(J, prm, bounds);
    FloorCache floors(J, prm);
    LayerCostCache costs(job, prm);
    Bounds::MemScratch ms = bounds.scratch();
    std::vector<ChunkTotals> ct;
    std::vector<double> tail, act;
    int simulated = 0;
    for (int k = 0; k < jc.samples; ++k) {
      Layout l = all[rng() % all.size()];
      l.zero = zeros[rng() % zeros.size()];
      Plan p = job;
      p.parallel = to_parallel(l, job.model, J.world, job.parallel);
      auto r = simulate(p, prm);
      if (!r) continue;  // a rule only simulate() applies (counted below)
      ++simulated;
      const std::string at = jc.name + ": " + short_name(l);
      PipeShape ps = make_pipe_shape(job.model, l.pp, l.vpp, l.pipe, l.first_layers, l.last_layers);
      Layout base = l;
      base.mbs = 1;
      Frame f = frames.build(base, 0, ps, {l.zero}, ms);
      frames.add_collectives(f, ps, {l.zero});
      // time: the structure floor and the candidate bounds
      Layout pl = l;
      pl.sp = l.tp > 1;
      const ShapeFloor& fl = floors.get(l.tp, l.cp, l.ep, l.etp, l.mbs);
      double floor_lb =
          structure_time_lb(J, ps, f, {l.zero}, fl, bounds.microbatches(l), p2p_time(J, prm, pl), bounds.moe_prefix(), prm);
      // the cheap bound the search orders structures by before it computes their floor (structure_queue.h):
      // at most the floor (up to the rounding of its other order of summation; the search keeps 1e-6)
      const double cheap = structure_time_floor(J, ps, f, {l.zero}, fl, bounds.microbatches(l));
      EXPECT_LE(cheap, floor_lb * (1 + 1e-12)) << at << " (cheap structure bound)";
      double p2p = p2p_time(J, prm, l);
      double approx_lb = candidate_time_lb(bounds, f, l, ps, costs, prm, p2p, false, ct, tail);
      double exact_lb = candidate_time_lb(bounds, f, l, ps, costs, prm, p2p, true, ct, tail);
      const double t = r->step_time_s * (1 + kRel);
      EXPECT_LE(floor_lb, t) << at << " (structure floor)";
      EXPECT_LE(approx_lb, t) << at << " (candidate bound before the selective probe)";
      EXPECT_LE(exact_lb, t) << at << " (candidate bound)";
      // memory: static, at the first backward, and the exact activation walk
      const double m = r->peak_memory_gib * (1 + kRel);
      EXPECT_LE(f.static_mem[l.zero], m) << at << " (static memory)";
      EXPECT_LE(candidate_memory_lb(bounds, f, l, ps, costs, ct, act), m) << at << " (memory at the first backward)";
      {  // the search computes a variant's bounds at every ZeRO level at once (LevelBounds): the same doubles
        Layout lp = l;
        if (lp.recompute == Recompute::selective) lp.recompute = Recompute::none;
        std::vector<ChunkTotals> plain;
        bounds.chunk_totals(lp, ps, costs.get(shape_of(lp)), plain);
        LevelBounds lb;
        lb.reset(bounds, f, lp, ps, prm, p2p_time(J, prm, lp), plain);
        const bool sel = l.recompute == Recompute::selective;
        EXPECT_EQ(lb.memory_lb(l.zero, sel), candidate_memory_lb(bounds, f, l, ps, costs, ct, act))
            << at << " (LevelBounds memory)";
        EXPECT_EQ(lb.time_lb(l.zero, sel), approx_lb) << at << " (LevelBounds time)";
        EXPECT_EQ(f.static_mem[l.zero], bounds.peak_memory_gib(l, ps, {}, ms)) << at << " (frame's static memory)";
      }
      bounds.chunk_totals(l, ps, costs.get(shape_of(l), l.recompute == Recompute::selective), ct);
      bounds.peak_activations(l, ps, ct, act);
      EXPECT_LE(bounds.peak_memory_gib(l, ps, act, ms), m) << at << " (peak memory)";
      ++checked;
      a2a_on += l.a2a;
      zero3 += l.zero == 3;
      cp += l.cp > 1;
      selective += l.recompute == Recompute::selective;
      offload += l.offload != 0;
      if (HasFailure()) return;  // one broken layout is enough to debug
    }
    EXPECT_GE(simulated, jc.samples * 9 / 10) << jc.name << ": most sampled layouts must be valid";
  }
  EXPECT_GE(checked, 10000);
  // the sample reaches the options the bounds must handle
  EXPECT_GT(a2a_on, 100);
  EXPECT_GT(zero3, 1000);
  EXPECT_GT(cp, 500);
  EXPECT_GT(selective, 500);
  EXPECT_GT(offload, 200);
}

}  // namespace
}  // namespace mplan
