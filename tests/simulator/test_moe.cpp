// MoE cost effects: learned-routing load imbalance over expert-parallel ranks, domain-deduplicating
// dispatchers (DeepEP/HybridEP) across NVLink domains, EP all-to-all overlap, and expert GEMMs run
// one kernel per expert (Megatron-Core through Transformer Engine) or as one grouped kernel.
#include <gtest/gtest.h>

#include <cmath>

#include "core/framework.h"
#include "core/ops.h"
#include "core/presets.h"
#include "core/rank_grid.h"
#include "simulator/collectives.h"
#include "simulator/compute_cost.h"
#include "simulator/moe_load.h"
#include "simulator/simulator.h"
#include "tests/simulator/sim_fixtures.h"

namespace mplan {
namespace {

Plan moe_plan(int gpus, int ep) { return preset_plan("qwen3-30b-a3b", gpus, int64_t(gpus) * 4, 4096, 1, 1, 1, ep); }

double step(const Plan& p, const CostParams& c) { return simulate_ok(p, c).step_time_s; }

// A group of `size` ranks spread evenly over `domains` NVLink domains.
GroupPlacement spread(int size, int domains) {
  GroupPlacement g;
  g.size = size;
  g.domains = domains;
  g.max_per_domain = size / domains;
  return g;
}

TEST(MoeCost, LearnedRoutingIsSlowerThanForcedBalanceOnlyWithExpertParallelism) {
  CostParams c = default_cost_params(*cluster_preset("dgx-h100"));
  c.moe_expert_cv = 0.6;
  Plan p = moe_plan(8, 8);
  Plan forced = p;
  forced.parallel.moe_force_balance = true;
  EXPECT_GT(step(p, c), step(forced, c) * 1.02);
  auto mem = simulate(p, c), mem_forced = simulate(forced, c);
  ASSERT_TRUE(mem && mem_forced);
  EXPECT_GT(mem->peak_memory_gib, mem_forced->peak_memory_gib);  // the busiest rank holds more activations

  Plan one = moe_plan(1, 1), one_forced = one;
  one.training.global_batch_size = one_forced.training.global_batch_size = 4;
  one_forced.parallel.moe_force_balance = true;
  EXPECT_DOUBLE_EQ(step(one, c), step(one_forced, c));  // ep = 1: every expert on one rank, no imbalance

  c.moe_expert_cv = 0;  // then only the sampling floor remains, for both
  EXPECT_DOUBLE_EQ(step(p, c), step(forced, c));
}

TEST(MoeCost, ImbalanceGrowsWithExpertParallelSize) {
  CostParams c = default_cost_params(*cluster_preset("dgx-h100"));
  c.moe_expert_cv = 0.6;
  // same ranks, experts spread over more EP ranks: the busiest rank's excess over the mean grows
  auto excess = [&](int ep) {
    Plan p = moe_plan(8, ep), f = p;
    f.parallel.moe_force_balance = true;
    return step(p, c) / step(f, c);
  };
  EXPECT_GT(excess(8), excess(2));
}

TEST(MoeLoad, BusiestRankFromRoutingStatistics) {
  // expected maxima of standard normals (exact values)
  EXPECT_NEAR(expected_max_of_normals(2), 1.0 / std::sqrt(M_PI), 1e-4);
  EXPECT_NEAR(expected_max_of_normals(8), 1.4236, 1e-3);
  EXPECT_NEAR(expected_max_of_normals(64), 2.3440, 1e-3);
  EXPECT_DOUBLE_EQ(expected_max_of_normals(1), 0.0);
  // forced balance (random router logits) keeps the multinomial sampling floor: E=64, k=8, ep=8,
  // 1024 tokens per rank -> 0.0146 above the mean by Monte Carlo (notes of the MoE grounding)
  EXPECT_NEAR(moe_busiest_rank_factor(64, 8, 8, 1024, true, 0.3) - 1, 0.0148, 5e-4);
  EXPECT_NEAR(moe_busiest_rank_factor(8, 2, 8, 1024, true, 0.3) - 1, 0.0291, 5e-4);
  // learned routing: per-expert CV 0.3 summed over E/ep experts
  double f = moe_busiest_rank_factor(128, 8, 8, 4096, false, 0.3);
  EXPECT_NEAR(f - 1, 1.4236 * std::sqrt(120.0 / (127.0 * 4096 * 8) + 0.09 * 8 / 128), 1e-3);
  // more EP ranks over the same experts: a busier busiest rank; more tokens: closer to the mean
  EXPECT_GT(moe_busiest_rank_factor(256, 8, 64, 2048, false, 0.3), moe_busiest_rank_factor(256, 8, 8, 2048, false, 0.3));
  EXPECT_LT(moe_busiest_rank_factor(64, 8, 8, 8192, true, 0.3), moe_busiest_rank_factor(64, 8, 8, 1024, true, 0.3));
  EXPECT_DOUBLE_EQ(moe_busiest_rank_factor(64, 8, 1, 1024, false, 0.3), 1.0);
}

TEST(MoeCost, DomainDeduplicationSendsFewerNetworkBytes) {
  // 32 ranks over 4 domains, 128 experts, top-8: a token reaches ~3.6 of 4 domains, so ~2.7 remote
  // sends instead of 6 remote copies
  GroupPlacement g = spread(32, 4);
  double share = moe_remote_share(128, 8, g);
  double miss = 1;
  for (int i = 0; i < 8; ++i) miss *= (96.0 - i) / (128.0 - i);
  EXPECT_NEAR(share, 3 * (1 - miss) / 6.0, 1e-12);
  EXPECT_LT(share, 0.5);
  // top-1: nothing to deduplicate
  EXPECT_NEAR(moe_remote_share(128, 1, g), 1.0, 1e-12);
  // one domain: no network traffic to scale
  g.domains = 1;
  g.max_per_domain = 32;
  EXPECT_DOUBLE_EQ(moe_remote_share(128, 8, g), 1.0);

  g.domains = 4;
  g.max_per_domain = 8;
  ClusterSpec cl = *cluster_preset("dgx-h100");
  CostParams c = default_cost_params(cl);
  double plain = moe_all_to_all_time_s(1e9, 1.0, g, cl, c), dedup = moe_all_to_all_time_s(1e9, share, g, cl, c);
  EXPECT_LT(dedup, plain * 0.6);
  EXPECT_DOUBLE_EQ(plain, collective_time_s(Collective::all_to_all, 1e9, g, cl, c));
}

// DeepEP and HybridEP send a token once to each rank holding any of its experts (NCCL all-to-all sends
// every copy): 8 ranks of 16 experts each out of 128, top-8, so a token reaches 8 (1 - P) ranks, P the
// chance that none of its 8 experts is on a given rank.
TEST(MoeCost, RankDeduplicationSendsFewerNvlinkBytes) {
  GroupPlacement g = spread(8, 1);
  double miss = 1;
  for (int i = 0; i < 8; ++i) miss *= (112.0 - i) / (128.0 - i);
  const double share = moe_local_share(128, 8, g);
  EXPECT_NEAR(share, 8 * (1 - miss) / 8, 1e-12);
  EXPECT_LT(share, 0.7);
  EXPECT_DOUBLE_EQ(moe_local_share(128, 1, g), 1.0);  // top-1: one copy per token already
  // experts that do not split evenly over the ranks: left as a plain all-to-all
  EXPECT_DOUBLE_EQ(moe_local_share(100, 8, spread(8, 1)), 1.0);
  // 64 ranks of 8 of 512 experts, top-22 (Nemotron 3 Super): most of a token's experts sit on distinct ranks
  EXPECT_GT(moe_local_share(512, 22, spread(64, 1)), 0.8);
  ClusterSpec cl = *cluster_preset("dgx-h100");
  CostParams c = default_cost_params(cl);
  EXPECT_NEAR(moe_all_to_all_time_s(1e9, 1.0, g, cl, c, share),
              share * moe_all_to_all_time_s(1e9, 1.0, g, cl, c) + (1 - share) * moe_all_to_all_time_s(1e9, 1.0, g, cl, c, 0.0),
              1e-12);
}

TEST(MoeCost, DeepEpHelpsInsideADomainAndMoreAcrossDomains) {
  CostParams c = default_cost_params(*cluster_preset("dgx-h100"));
  Plan cross = moe_plan(16, 16), cross_deepep = cross;  // two 8-GPU nodes
  cross_deepep.parallel.moe_dispatcher = MoeDispatcher::deepep;
  EXPECT_LT(step(cross_deepep, c), step(cross, c));
  Plan intra = moe_plan(8, 8), intra_deepep = intra;
  intra_deepep.parallel.moe_dispatcher = MoeDispatcher::deepep;
  EXPECT_LT(step(intra_deepep, c), step(intra, c));
  EXPECT_LT(step(cross_deepep, c) / step(cross, c), step(intra_deepep, c) / step(intra, c));
}

TEST(MoeCost, AllToAllOverlapHidesExpertTraffic) {
  CostParams c = default_cost_params(*cluster_preset("dgx-h100"));
  Plan p = moe_plan(16, 16), ov = p;
  ov.parallel.moe_a2a_overlap = true;
  auto a = simulate(p, c), b = simulate(ov, c);
  ASSERT_TRUE(a && b);
  EXPECT_LT(b->time.ep_comm_exposed, a->time.ep_comm_exposed);
  EXPECT_LT(b->step_time_s, a->step_time_s);
  EXPECT_NEAR(b->time.total(), b->step_time_s, 1e-9 * b->step_time_s);
}

// Issue 16: group-limited routing (DeepSeek-V3: 256 experts in 8 groups, a token uses 4) caps the
// domains a token reaches: with EP=64 over 8 domains of 32 experts (one group each), 4 domains, of
// which 1 in 8 is the token's own, so 3.5 remote sends instead of ~4.6.
TEST(MoeCost, GroupLimitedRoutingCapsTheDomainsReached) {
  const GroupPlacement g = spread(64, 8);
  double free = moe_remote_share(256, 8, g);
  double limited = moe_remote_share(256, 8, g, 8, 4);
  double copies = 8 * (1 - 32.0 / 256);
  EXPECT_NEAR(limited, 4 * 7.0 / 8 / copies, 1e-12);
  EXPECT_LT(limited, free);
  // every group allowed: no cap
  EXPECT_DOUBLE_EQ(moe_remote_share(256, 8, g, 8, 8), free);
}

// Megatron-Core's grouped MLP launches one GEMM per local expert (FrameworkRuns::per_expert_gemms):
// the op costs exactly its experts' single GEMMs one after another, each with its own waves, ramp and
// overhead, so never less than one grouped kernel of the same work.
TEST(MoeCost, PerExpertGemmsCostTheirExpertsOneAfterAnother) {
  EXPECT_TRUE(framework_runs(Framework::megatron).per_expert_gemms);
  EXPECT_FALSE(framework_runs(Framework::torchtitan).per_expert_gemms);
  const ClusterSpec c = *cluster_preset("dgx-h100");
  const CostParams p = default_cost_params(c);
  OpContext oc;
  oc.ep = 16;
  oc.seq = 4096;
  Op fc1;
  for (const Op& o : layer_ops(*model_preset("qwen3-30b-a3b"), 0, oc))
    if (o.id == OpId::expert_fc1_gemm) fc1 = o;
  ASSERT_EQ(fc1.id, OpId::expert_fc1_gemm);
  ASSERT_EQ(fc1.gemm.groups, 8);  // 128 experts over EP 16
  ComputeRates grouped = compute_rates(Precision::bf16, c, p), per_expert = grouped;
  per_expert.per_expert_gemms = true;
  const OpCost one = compute_op_cost(fc1, grouped, p), each = compute_op_cost(fc1, per_expert, p);
  const GemmShape s = fc1.gemm;
  const double share = fc1.load_scale * double(s.groups);  // the op's work is its experts' GEMMs
  CostParams q = p;
  q.gemm_eff_max *= p.grouped_gemm_eff;
  EXPECT_DOUBLE_EQ(each.fwd_s, share * gemm_time_s({s.m, s.n, s.k, 1}, Precision::bf16, c, q));
  EXPECT_DOUBLE_EQ(each.bwd_weight_s, share * gemm_time_s({s.k, s.n, s.m, 1}, Precision::bf16, c, q));
  EXPECT_GT(each.fwd_s, one.fwd_s);
  EXPECT_GT(each.bwd_input_s, one.bwd_input_s);
  // a dense GEMM is one kernel either way
  for (const Op& o : layer_ops(*model_preset("qwen3-30b-a3b"), 0, oc)) {
    if (o.id == OpId::qkv_gemm) {
      EXPECT_EQ(compute_op_cost(o, per_expert, p).fwd_s, compute_op_cost(o, grouped, p).fwd_s);
    }
  }
}

// Transformer Engine's fused grouped MLP (parallel.moe_fused_grouped_mlp, the Megatron-Bridge recipes'
// cutedsl_fused_grouped_mlp) runs all local experts as one kernel: a Megatron plan with it costs its
// experts as one grouped GEMM, like a framework whose grouped MLP is one kernel, and is faster than
// the same plan with one GEMM per expert; a dense model is unaffected.
TEST(MoeCost, FusedGroupedMlpIsOneKernelForAllLocalExperts) {
  CostParams c = default_cost_params(*cluster_preset("dgx-h100"));
  Plan per_expert = moe_plan(8, 8), fused = per_expert;  // 16 local experts each
  ASSERT_EQ(per_expert.training.framework, Framework::megatron);
  fused.parallel.moe_fused_grouped_mlp = true;
  const StepReport a = simulate_ok(per_expert, c), b = simulate_ok(fused, c);
  EXPECT_LT(b.step_time_s, a.step_time_s);
  Plan dense = preset_plan("llama3-8b", 8, 32, 4096, 1, 1, 1, 1), dense_fused = dense;
  dense_fused.parallel.moe_fused_grouped_mlp = true;
  EXPECT_DOUBLE_EQ(step(dense_fused, c), step(dense, c));
}
}  // namespace
}  // namespace mplan
