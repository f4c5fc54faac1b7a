// GEMM cost: tile and wave quantization make the time a non-decreasing step function of the shape.
#include <gtest/gtest.h>

#include "core/presets.h"
#include "simulator/compute_cost.h"

namespace mplan {
namespace {

TEST(GemmCost, OneWaveCostsOneTileTime) {
  ClusterSpec c = *cluster_preset("dgx-h100");
  CostParams p = default_cost_params(c);
  p.gemm_half_flops = 0;  // isolate the quantization (no ramp, no memory bound)
  p.hbm_eff = 1e6;
  p.kernel_overhead_us = 0;
  const int64_t n = 256, k = 8192;
  // while the output tiles fit in one wave over the SMs, the GEMM takes one tile's time
  double t1 = gemm_time_s({1, n, k, 1}, Precision::bf16, c, p);
  double t128 = gemm_time_s({128, n, k, 1}, Precision::bf16, c, p);
  double t129 = gemm_time_s({129, n, k, 1}, Precision::bf16, c, p);
  EXPECT_NEAR(t1, t128, 1e-12 * t128);
  EXPECT_NEAR(t129, t128, 1e-12 * t128);
  // one row more than a full wave of the largest tiles needs more time, but smaller tiles keep it
  // under two waves
  int sms = c.gpu.sm_count;
  double full = gemm_time_s({128 * sms, n, k, 1}, Precision::bf16, c, p);
  double spill = gemm_time_s({128 * sms + 1, n, k, 1}, Precision::bf16, c, p);
  EXPECT_GT(spill, full * 1.01);
  EXPECT_LT(spill, 2 * full);
  // a full wave of 128x256 tiles runs at the peak efficiency
  double W = 2.0 * 128 * sms * n * k;
  EXPECT_NEAR(W / (full * *c.gpu.peak(Precision::bf16) * 1e12), p.gemm_eff_max, 1e-9);
}

TEST(GemmCost, TimeNeverFallsAsRowsGrow) {
  ClusterSpec c = *cluster_preset("dgx-h100");
  CostParams p = default_cost_params(c);
  double prev = 0;
  for (int64_t m = 1; m <= 4096; m += 7) {
    double t = gemm_time_s({m, 1536, 4096, 8}, Precision::bf16, c, p);
    EXPECT_GE(t, prev * (1 - 1e-12)) << "m " << m;
    prev = t;
  }
}

}  // namespace
}  // namespace mplan
