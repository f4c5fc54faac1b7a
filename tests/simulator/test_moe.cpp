// MoE cost effects: learned-routing load imbalance over expert-parallel ranks, domain-deduplicating
// dispatchers (DeepEP/HybridEP) across NVLink domains, and EP all-to-all overlap.
#include <gtest/gtest.h>

#include <cmath>

#include "core/presets.h"
#include "core/rank_grid.h"
#include "simulator/collectives.h"
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

TEST(MoeCost, DeepEpHelpsOnlyAcrossDomains) {
  CostParams c = default_cost_params(*cluster_preset("dgx-h100"));
  Plan cross = moe_plan(16, 16), cross_deepep = cross;  // two 8-GPU nodes
  cross_deepep.parallel.moe_dispatcher = MoeDispatcher::deepep;
  EXPECT_LT(step(cross_deepep, c), step(cross, c));
  Plan intra = moe_plan(8, 8), intra_deepep = intra;
  intra_deepep.parallel.moe_dispatcher = MoeDispatcher::deepep;
  EXPECT_DOUBLE_EQ(step(intra_deepep, c), step(intra, c));
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

}  // namespace
}  // namespace mplan
