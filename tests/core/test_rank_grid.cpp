// RankGrid against Megatron's documented 16-GPU example and brute-force enumeration.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "core/rank_grid.h"

using namespace mplan;

TEST(RankGrid, MegatronSixteenGpuExample) {
  // megatron/core/parallel_state.py initialize_model_parallel docstring: tp=2, pp=4, 16 GPUs.
  RankGrid g(/*tp=*/2, /*cp=*/1, /*dp=*/2, /*pp=*/4);
  std::vector<std::vector<int>> tp = {{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}, {12, 13}, {14, 15}};
  std::vector<std::vector<int>> dp = {{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8, 10}, {9, 11}, {12, 14}, {13, 15}};
  std::vector<std::vector<int>> pp = {{0, 4, 8, 12}, {1, 5, 9, 13}, {2, 6, 10, 14}, {3, 7, 11, 15}};
  EXPECT_EQ(g.groups(Dim::tp), tp);
  EXPECT_EQ(g.groups(Dim::dp), dp);
  EXPECT_EQ(g.groups(Dim::pp), pp);
}

TEST(RankGrid, BruteForceEveryDimension) {
  for (int tp : {1, 2, 4})
    for (int cp : {1, 2})
      for (int dp : {1, 2, 3})
        for (int pp : {1, 2}) {
          RankGrid g(tp, cp, dp, pp);
          int n = tp * cp * dp * pp;
          // brute force: two ranks share a group along d iff every other coordinate is equal
          for (Dim d : {Dim::tp, Dim::cp, Dim::dp, Dim::pp}) {
            auto groups = g.groups(d);
            std::set<int> seen;
            for (auto& grp : groups) {
              EXPECT_EQ(int(grp.size()), g.size(d));
              for (int r : grp) {
                EXPECT_TRUE(seen.insert(r).second);
                EXPECT_EQ(g.group_of(r, d), grp);
              }
              for (int a : grp)
                for (int b : grp) {
                  RankCoord ca = g.coord(a), cb = g.coord(b);
                  if (d != Dim::tp) {
                    EXPECT_EQ(ca.tp, cb.tp);
                  }
                  if (d != Dim::cp) {
                    EXPECT_EQ(ca.cp, cb.cp);
                  }
                  if (d != Dim::dp) {
                    EXPECT_EQ(ca.dp, cb.dp);
                  }
                  if (d != Dim::pp) {
                    EXPECT_EQ(ca.pp, cb.pp);
                  }
                }
            }
            EXPECT_EQ(int(seen.size()), n);
          }
          for (int r = 0; r < n; ++r) {
            RankCoord c = g.coord(r);
            EXPECT_EQ(g.rank_of_dense(c.tp, c.cp, c.dp, c.pp), r);
          }
        }
}

TEST(RankGrid, ExpertViewKeepsPipelineGroups) {
  // tp2 cp1 dp4 pp2 = 16 ranks; expert view etp1 ep4 edp2
  RankGrid g(2, 1, 4, 2, /*etp=*/1, /*ep=*/4);
  EXPECT_EQ(g.size(Dim::edp), 2);
  for (int r = 0; r < 16; ++r) {
    RankCoord c = g.coord(r);
    EXPECT_EQ(g.rank_of_expert(c.etp, c.ep, c.edp, c.pp), r);
  }
  // ep groups are consecutive within a pipeline stage
  EXPECT_EQ(g.group_of(0, Dim::ep), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(g.group_of(9, Dim::ep), (std::vector<int>{8, 9, 10, 11}));
  // the pipeline stage of every rank is the same in both views
  for (int r = 0; r < 16; ++r) EXPECT_EQ(g.coord(r).pp, r / 8);
  auto tpcp = g.groups(std::vector<Dim>{Dim::tp, Dim::dp});
  EXPECT_EQ(tpcp.size(), 2u);
  EXPECT_EQ(tpcp[0].size(), 8u);
}

TEST(RankGrid, PlacementOnNvlinkDomains) {
  RankGrid g(8, 1, 4, 2);  // 64 ranks on 8-GPU domains
  GroupPlacement tp = g.placement(Dim::tp, 8);
  EXPECT_EQ(tp.domains, 1);
  EXPECT_EQ(tp.max_per_domain, 8);
  GroupPlacement dp = g.placement(Dim::dp, 8);
  EXPECT_EQ(dp.domains, 4);
  EXPECT_EQ(dp.max_per_domain, 1);
  RankGrid h(4, 1, 8, 1);
  GroupPlacement dp2 = h.placement(Dim::dp, 8);
  EXPECT_EQ(dp2.domains, 4);
  EXPECT_EQ(dp2.max_per_domain, 2);
  EXPECT_TRUE(dp2.uniform);
}

// placement(d, domain) counts each domain's members in closed form: it equals the worst of the same
// sampled groups enumerated member by member (group_of + the counting placement of a member list).
TEST(RankGrid, ClosedFormPlacementEqualsEnumeratedGroups) {
  const int sizes[] = {1, 2, 3, 4, 6, 8, 16};
  int checked = 0;
  for (int tp : sizes)
    for (int cp : {1, 2, 3})
      for (int dp : sizes)
        for (int pp : {1, 2, 5}) {
          for (int etp : {1, 2})
            for (int ep : {1, 2, 4, 8}) {
              if ((tp * cp * dp) % (etp * ep) != 0) continue;
              RankGrid g(tp, cp, dp, pp, etp, ep);
              const int world = g.world_size();
              for (int dom : {1, 2, 4, 8, 18, 72})
                for (Dim d : {Dim::tp, Dim::cp, Dim::dp, Dim::pp, Dim::etp, Dim::ep, Dim::edp}) {
                  const int samples = std::min(world, 16);
                  GroupPlacement want;
                  for (int i = 0; i < samples; ++i) {
                    int rank = int((int64_t(world) * i) / samples);
                    GroupPlacement p = RankGrid::placement(g.group_of(rank, d), dom);
                    if (i == 0 || p.domains > want.domains || (p.domains == want.domains && !p.uniform)) want = p;
                  }
                  GroupPlacement got = g.placement(d, dom);
                  ASSERT_EQ(got.size, want.size) << tp << " " << cp << " " << dp << " " << pp << " dom " << dom;
                  ASSERT_EQ(got.domains, want.domains) << tp << " " << cp << " " << dp << " " << pp << " dom " << dom;
                  ASSERT_EQ(got.max_per_domain, want.max_per_domain) << tp << " " << cp << " " << dp << " " << pp;
                  ASSERT_EQ(got.uniform, want.uniform) << tp << " " << cp << " " << dp << " " << pp << " dom " << dom;
                  ++checked;
                }
            }
        }
  EXPECT_GT(checked, 10000);
}
