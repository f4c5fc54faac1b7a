// The fit's copy of the cost formulas: closed forms, and (when the simulator library is built) the
// same numbers as the simulator's own functions, so the copy cannot drift silently.
#include <gtest/gtest.h>

#include <cmath>

#include "core/presets.h"
#include "profiles/cost_eval.h"

#ifdef MPLAN_PROFILES_HAVE_SIMULATOR
#include "simulator/collectives.h"
#include "simulator/compute_cost.h"
#endif

using namespace mplan;
using namespace mplan::profiles;

TEST(CostEval, RingAllReduceIsAlphaBeta) {
  ClusterSpec c = *cluster_preset("dgx-h100");
  CostParams p;
  double bytes = 1 << 30;
  int n = 8;
  double t = eval_collective_time_s(Collective::all_reduce, bytes, n, 1, n, c, p);
  double bw = c.scale_up_bw_gbps * 1e9 * p.nvlink_eff;
  double alpha = c.scale_up_latency_us * 1e-6;
  // tree latency 2*log2(8)=6 steps beats the ring's 14; bandwidth term 2(n-1)/n * bytes / bw
  EXPECT_NEAR(t, 6 * alpha + 2.0 * (n - 1) / n * bytes / bw, 1e-12);
}

TEST(CostEval, WaveQuantisation) {
  CostParams p;
  // 132 SMs, 128x256 tiles: 132 tiles is one full wave, 133 tiles need two
  EXPECT_DOUBLE_EQ(eval_wave_eff(128 * 132, 256, 1, 132, p), 1.0);
  EXPECT_NEAR(eval_wave_eff(128 * 133, 256, 1, 132, p), 133.0 / 264.0, 1e-12);
  EXPECT_DOUBLE_EQ(eval_wave_eff(100, 100, 1, 1, p), 1.0);
}

TEST(CostEval, OpClasses) {
  EXPECT_EQ(op_kind_of("fc1_gemm"), OpKind::gemm);
  EXPECT_EQ(op_kind_of("router"), OpKind::gemm);
  EXPECT_EQ(op_kind_of("attn_core"), OpKind::attention);
  EXPECT_EQ(op_kind_of("final_norm"), OpKind::norm);
  EXPECT_EQ(op_kind_of("dispatch_a2a"), OpKind::comm);
  EXPECT_EQ(op_kind_of("adamw"), OpKind::optimizer);
  EXPECT_EQ(op_kind_of("rope"), OpKind::elementwise);
  for (const auto& name : op_vocabulary()) EXPECT_FALSE(to_string(op_kind_of(name)).empty()) << name;
}

#ifdef MPLAN_PROFILES_HAVE_SIMULATOR
TEST(CostEval, MatchesSimulator) {
  for (const char* preset : {"dgx-h100", "gb200-nvl72", "dgx-a100-80g"}) {
    ClusterSpec c = *cluster_preset(preset);
    CostParams p = default_cost_params(c);
    for (Precision prec : {Precision::bf16, Precision::fp8})
      for (int64_t m : {64, 1000, 8192})
        for (int64_t n : {256, 4096, 12288})
          for (int64_t k : {128, 4096}) {
            if (!c.gpu.peak(prec)) continue;
            GemmShape s{m, n, k, 1};
            EXPECT_DOUBLE_EQ(eval_gemm_time_s(s, prec, c, p), gemm_time_s(s, prec, c, p)) << preset << " " << m << "x" << n << "x" << k;
          }
    for (Collective coll : {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter, Collective::all_to_all,
                            Collective::send_recv})
      for (double bytes : {1024.0, 1e6, 1e9})
        for (auto [n, d] : {std::pair{2, 1}, std::pair{8, 1}, std::pair{16, 2}, std::pair{64, 8}}) {
          GroupPlacement g{n, d, n / d, true};
          EXPECT_DOUBLE_EQ(eval_collective_time_s(coll, bytes, n, d, n / d, c, p), collective_time_s(coll, bytes, g, c, p))
              << preset << " " << to_string(coll) << " n=" << n << " domains=" << d;
        }
  }
}
#endif
