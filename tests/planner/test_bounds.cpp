// The pieces the bounds stand on: probed per-layer costs add up to build_workload's chunk costs, the
// memory accounting equals simulate()'s, the closed-form warm-up counts match the schedule tables,
// the periodic activation walk equals the full one, and the allocation-free placement matches RankGrid.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/rank_grid.h"
#include "core/schedule.h"
#include "planner/bounds.h"
#include "planner/layer_costs.h"
#include "planner/placement.h"
#include "planner_test_util.h"
#include "simulator/pipeline_sim.h"
#include "simulator/simulator.h"
#include "simulator/workload.h"

namespace mplan {
namespace {

using namespace planner;

void near(double a, double b, const std::string& what) { EXPECT_NEAR(a, b, 1e-9 * std::max(1.0, std::abs(b))) << what; }

struct Case {
  Plan plan;
  std::string name;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  auto add = [&](Plan p, const std::string& n) { out.push_back({std::move(p), n}); };
  Plan a = test::job(test::tiny_dense(), test::cluster("dgx-h100"), 16, 64, 4096);
  a.parallel.tp = 2, a.parallel.sp = true, a.parallel.pp = 2, a.parallel.vpp = 2, a.parallel.schedule = Schedule::interleaved;
  a.parallel.recompute = Recompute::full, a.parallel.recompute_num_layers = 1;
  add(a, "dense tp2 pp2 vpp2 full(1)");
  Plan b = a;
  b.parallel.vpp = 1, b.parallel.schedule = Schedule::zero_bubble, b.parallel.recompute = Recompute::selective;
  b.parallel.recompute_num_layers = 0, b.parallel.tp_comm_overlap = true, b.parallel.cp = 2, b.parallel.zero = 3;
  add(b, "dense zb selective tpov cp2 zero3");
  Plan c = test::job(test::tiny_moe(), test::cluster("dgx-h100"), 16, 64, 2048, Precision::fp8);
  c.parallel.tp = 2, c.parallel.sp = true, c.parallel.pp = 3, c.parallel.ep = 4, c.parallel.etp = 2;
  c.parallel.pipeline_layout = balanced_pipeline_layout(c.model, 3, 1);
  c.parallel.world_size = 24;
  c.parallel.recompute = Recompute::full;
  add(c, "moe mla mtp pp3 balanced ep4 etp2 full");
  Plan d = test::job(test::tiny_gpt(), test::cluster("dgx-a100-80g"), 8, 32, 2048, Precision::fp16, TrainingMethod::lora);
  d.parallel.tp = 2, d.parallel.pp = 2, d.parallel.cp = 2, d.parallel.cp_comm_type = CpCommType::a2a, d.parallel.zero = 0;
  d.parallel.attention_backend = AttentionBackend::unfused, d.parallel.micro_batch_size = 2;
  // a simulator case: Transformer Engine runs no context parallelism with its unfused attention, so
  // under framework megatron validate_layout refuses it; another framework's plan keeps the shape
  d.training.framework = Framework::torchtitan;
  add(d, "gpt lora unfused cp2 a2a sp off");
  Plan e = test::job(test::tiny_moe(), test::cluster("dgx-h100"), 16, 64, 4096);
  e.parallel.tp = 2, e.parallel.sp = true, e.parallel.ep = 8, e.parallel.moe_a2a_overlap = true;
  e.parallel.recompute = Recompute::selective, e.parallel.moe_dispatcher = MoeDispatcher::deepep;
  add(e, "moe ep8 a2a overlap selective deepep (derived from the shape without the overlap)");
  Plan f = e;
  f.parallel.recompute = Recompute::none;
  add(f, "moe ep8 a2a overlap");
  return out;
}

TEST(Bounds, ProbedChunkCostsEqualWorkload) {
  for (const Case& c : cases()) {
    ASSERT_TRUE(validate_layout(c.plan.model, c.plan.cluster, c.plan.training, c.plan.parallel).empty()) << c.name;
    CostParams prm = shipped_calibration().params_for(c.plan.cluster.gpu);
    Workload w = build_workload(c.plan, prm);
    Plan job = c.plan;
    Job J(job);
    Bounds bounds(J, prm);
    LayerCostCache costs(job, prm);
    Layout l = from_parallel(c.plan.parallel);
    PipeShape ps = make_pipe_shape(c.plan.model, l.pp, l.vpp, l.pipe, l.first_layers, l.last_layers);
    std::vector<ChunkTotals> ct;
    bounds.chunk_totals(l, ps, costs.get(shape_of(l), l.recompute == Recompute::selective), ct);
    for (int s = 0; s < l.pp; ++s)
      for (int ch = 0; ch < l.vpp; ++ch) {
        const ChunkCost& real = w.stages[s].chunks[ch];
        const ChunkTotals& mine = ct[size_t(s) * l.vpp + ch];
        std::string at = c.name + " stage " + std::to_string(s) + " chunk " + std::to_string(ch);
        if (l.zero != 3) {  // ZeRO-3 adds FSDP traffic per chunk (frame.h), checked through the search tests
          near(mine.F, real.F.total(), at + " F");
          near(mine.B, real.B.total(), at + " B");
        }
        near(mine.W, real.W.total(), at + " W");
        near(mine.act, real.act_bytes, at + " act");
        near(mine.act_w, real.act_w_bytes, at + " act_w");
        near(mine.transient, real.transient_bytes, at + " transient");
      }
    // memory: the activation walk and stage_memory give simulate()'s peak
    auto r = simulate(c.plan, prm);
    ASSERT_TRUE(r.ok());
    std::vector<double> act;
    bounds.peak_activations(l, ps, ct, act);
    Bounds::MemScratch ms = bounds.scratch();
    near(bounds.peak_memory_gib(l, ps, act, ms), r->peak_memory_gib, c.name + " peak memory");
    std::vector<double> first_b;
    bounds.activations_at_first_backward(l, ps, ct, first_b);
    for (int s = 0; s < l.pp; ++s) EXPECT_LE(first_b[s], act[s] * (1 + 1e-12)) << c.name;
  }
}

// chunk_totals copies a chunk's totals from an earlier chunk with the same layers (PipeShape::same_as):
// the same doubles as summing every chunk, for dense and MoE layer patterns and every recompute mode.
TEST(Bounds, CopiedChunkTotalsEqualSummedOnes) {
  int copied = 0;
  for (const Case& c : cases()) {
    CostParams prm = shipped_calibration().params_for(c.plan.cluster.gpu);
    Job J(c.plan);
    Bounds bounds(J, prm);
    LayerCostCache costs(c.plan, prm);
    const int layers = c.plan.model.num_layers;
    for (int pp : {1, 2, 3, 4})
      for (int vpp : {1, 2, 3})
        for (PipeLayout pipe : {PipeLayout::even, PipeLayout::balanced}) {
          if (pp * vpp > layers || (pipe == PipeLayout::balanced && pp == 1)) continue;
          PipeShape ps = make_pipe_shape(c.plan.model, pp, vpp, pipe);
          PipeShape plain = ps;
          plain.same_as.clear(), plain.computed.clear(), plain.copies.clear();
          for (int k = 0; k < int(ps.same_as.size()); ++k) copied += ps.same_as[size_t(k)] >= 0 ? 1 : 0;
          for (auto [rc, rl] :
               {std::pair{Recompute::none, 0}, {Recompute::full, 0}, {Recompute::full, 1}, {Recompute::selective, 0}}) {
            Layout l = from_parallel(c.plan.parallel);
            l.pp = pp, l.vpp = vpp, l.pipe = pipe, l.recompute = rc, l.recompute_layers = rl;
            const ShapeCosts& sc = costs.get(shape_of(l), rc == Recompute::selective);
            std::vector<ChunkTotals> a, b;
            bounds.chunk_totals(l, ps, sc, a);
            bounds.chunk_totals(l, plain, sc, b);
            ASSERT_EQ(a.size(), b.size());
            for (size_t i = 0; i < a.size(); ++i) {
              std::string at = c.name + " pp" + std::to_string(pp) + " vpp" + std::to_string(vpp) + " chunk " + std::to_string(i);
              EXPECT_EQ(a[i].F, b[i].F) << at;
              EXPECT_EQ(a[i].B, b[i].B) << at;
              EXPECT_EQ(a[i].W, b[i].W) << at;
              EXPECT_EQ(a[i].act, b[i].act) << at;
              EXPECT_EQ(a[i].act_w, b[i].act_w) << at;
              EXPECT_EQ(a[i].transient, b[i].transient) << at;
              EXPECT_EQ(a[i].fwd_transient, b[i].fwd_transient) << at;
            }
          }
        }
  }
  EXPECT_GT(copied, 20);
}

TEST(Bounds, WarmupClosedFormsMatchScheduleTables) {
  for (Schedule sch : {Schedule::gpipe, Schedule::one_f_one_b, Schedule::zero_bubble, Schedule::interleaved})
    for (int pp : {1, 2, 3, 4, 8})
      for (int vpp : {1, 2, 3})
        for (int m : {1, 2, 3, 4, 8, 12, 16}) {
          if ((sch == Schedule::interleaved) != (vpp > 1)) continue;
          if (sch == Schedule::interleaved && (pp == 1 || m % pp != 0)) continue;
          for (int s = 0; s < pp; ++s) {
            auto acts = schedule_actions(sch, pp, vpp, m, s);
            std::vector<int64_t> want(vpp, 0);
            int want_chunk = -1, trailing_w = 0;
            bool seen_b = false;
            for (const Action& a : acts) {
              if (a.phase == Phase::B) {
                if (!seen_b) want_chunk = a.chunk;
                seen_b = true;
                trailing_w = 0;
              }
              if (a.phase == Phase::F && !seen_b) ++want[a.chunk];
              if (a.phase == Phase::W && seen_b) ++trailing_w;
            }
            std::vector<int64_t> got;
            int got_chunk = 0;
            forwards_before_first_backward(sch, pp, vpp, m, s, got, got_chunk);
            std::string at = to_string(sch) + " pp" + std::to_string(pp) + " vpp" + std::to_string(vpp) + " m" +
                             std::to_string(m) + " stage " + std::to_string(s);
            EXPECT_EQ(got, want) << at;
            EXPECT_EQ(got_chunk, want_chunk) << at;
            if (sch == Schedule::zero_bubble) EXPECT_LE(trailing_w, pp - s) << at;  // dp tail bound (frame.cpp)
            // the last backward of every stage is micro-batch m-1 of chunk 0 (the chain bound)
            int last_b = -1;
            for (int i = int(acts.size()) - 1; i >= 0; --i)
              if (acts[i].phase == Phase::B) {
                last_b = i;
                break;
              }
            ASSERT_GE(last_b, 0);
            EXPECT_EQ(acts[last_b].microbatch, m - 1) << at;
            EXPECT_EQ(acts[last_b].chunk, 0) << at;
            EXPECT_EQ(acts[0].phase, Phase::F) << at;
            EXPECT_EQ(acts[0].microbatch, 0) << at;
            EXPECT_EQ(acts[0].chunk, 0) << at;
          }
        }
}

// The walks skip the repeated periods of a list's steady state: the peak is the same double as walking
// every action, for chunk totals that repeat exactly (round numbers) and ones that drift (random).
TEST(Bounds, PeriodicWalkEqualsTheFullWalkBitForBit) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0.1, 3.0);
  int skipped_tables = 0, checked = 0;
  for (Schedule sch : {Schedule::gpipe, Schedule::one_f_one_b, Schedule::zero_bubble, Schedule::interleaved})
    for (int pp : {1, 2, 3, 4, 8, 16})
      for (int vpp : {1, 2, 3, 8})
        for (int m : {1, 4, 16, 48, 64, 256}) {
          if ((sch == Schedule::interleaved) != (vpp > 1)) continue;
          if (sch == Schedule::interleaved && (pp == 1 || m % pp != 0)) continue;
          const ScheduleTable t = make_schedule_table(sch, pp, vpp, m);
          for (int s = 0; s < pp; ++s) {
            const std::vector<Action>& list = t.actions[size_t(s)];
            const WalkPeriod wp = walk_period(list);
            std::string at = to_string(sch) + " pp" + std::to_string(pp) + " vpp" + std::to_string(vpp) + " m" +
                             std::to_string(m) + " stage " + std::to_string(s);
            for (int64_t j = wp.begin + wp.period; wp.period > 0 && j < wp.end; ++j) {
              ASSERT_EQ(list[size_t(j)].phase, list[size_t(j - wp.period)].phase) << at;
              ASSERT_EQ(list[size_t(j)].chunk, list[size_t(j - wp.period)].chunk) << at;
            }
            if (wp.end - wp.begin >= 4 * wp.period && wp.period > 0) ++skipped_tables;
            for (int round = 0; round < 3; ++round) {
              std::vector<ChunkTotals> ct(static_cast<size_t>(vpp));
              for (ChunkTotals& c : ct) {
                c.act = round == 0 ? 1024.0 * (1 + &c - ct.data()) : u(rng) * 1e9;
                c.act_w = sch == Schedule::zero_bubble ? c.act * (round == 0 ? 0.25 : u(rng) / 4) : 0.0;
                c.transient = round == 2 ? u(rng) * 1e8 : 0.0;
                c.fwd_transient = round == 2 ? u(rng) * 1e8 : 0.0;
              }
              const double full = stage_peak_activations(list, ct.data(), WalkPeriod{});
              EXPECT_EQ(stage_peak_activations(list, ct.data(), wp), full) << at << " round " << round;
              ++checked;
            }
          }
        }
  EXPECT_GT(checked, 1000);
  EXPECT_GT(skipped_tables, 300);  // the steady states are found (1F1B: period 2, interleaved: 2 pp vpp)
  EXPECT_EQ(walk_period(make_schedule_table(Schedule::one_f_one_b, 4, 1, 64).actions[0]).period, 2);
  EXPECT_EQ(walk_period(make_schedule_table(Schedule::interleaved, 4, 3, 64).actions[1]).period, 2 * 4 * 3);
}

TEST(Bounds, FastPlacementMatchesRankGrid) {
  int checked = 0;
  for (int tp : {1, 2, 4, 8})
    for (int cp : {1, 2, 3})
      for (int dp : {1, 2, 3, 4, 6, 16})
        for (int pp : {1, 2, 3})
          for (int ep : {1, 2, 4})
            for (int etp : {1, 2}) {
              if ((tp * cp * dp) % (ep * etp) != 0) continue;
              RankGrid g(tp, cp, dp, pp, etp, ep);
              for (Dim d : {Dim::tp, Dim::cp, Dim::dp, Dim::pp, Dim::ep, Dim::etp, Dim::edp})
                for (int dom : {1, 4, 8, 64, 72}) {
                  GroupPlacement a = g.placement(d, dom);
                  GroupPlacement b = fast_placement(tp, cp, dp, pp, etp, ep, d, dom);
                  std::string at = "tp" + std::to_string(tp) + " cp" + std::to_string(cp) + " dp" + std::to_string(dp) + " pp" +
                                   std::to_string(pp) + " ep" + std::to_string(ep) + " etp" + std::to_string(etp) + " " +
                                   to_string(d) + " domain " + std::to_string(dom);
                  EXPECT_EQ(a.size, b.size) << at;
                  EXPECT_EQ(a.domains, b.domains) << at;
                  EXPECT_EQ(a.max_per_domain, b.max_per_domain) << at;
                  EXPECT_EQ(a.uniform, b.uniform) << at;
                  ++checked;
                }
            }
  EXPECT_GT(checked, 1000);
}

}  // namespace
}  // namespace mplan
