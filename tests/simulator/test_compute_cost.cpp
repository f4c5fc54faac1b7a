// GEMM cost: tile and wave quantization make the time a non-decreasing step function of the shape.
#include <gtest/gtest.h>

#include "core/framework.h"
#include "core/ops.h"
#include "core/presets.h"
#include "core/rank_grid.h"
#include "simulator/compute_cost.h"
#include "simulator/framework_data.h"
#include "simulator/layer_cost.h"

namespace mplan {
namespace {

TEST(GemmCost, OneWaveCostsOneTileTime) {
  ClusterSpec c = *cluster_preset("dgx-h100");
  CostParams p = default_cost_params(c);
  p.gemm_ramp_us = 0;  // isolate the quantization (no ramp, no memory bound)
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

// The ramp is a fixed time per GEMM kernel, not a fixed amount of work: a GEMM too small to matter
// costs the same ramp on an H100 as on a GB200 and at FP8 as at BF16, though the GB200 is 2.5x faster.
TEST(GemmCost, TheRampIsTheSameTimeOnEveryGpuAndPrecision) {
  const ClusterSpec h100 = *cluster_preset("dgx-h100"), gb200 = *cluster_preset("gb200-nvl72");
  CostParams p = default_cost_params(h100);
  p.gemm_ramp_us = 20;
  p.gemm_eff_max = 0.7;
  p.precision_eff[Precision::fp8] = 1.0;
  p.hbm_eff = 1e6;  // no memory bound
  p.kernel_overhead_us = 0;
  const double ramp_s = 20e-6 / 0.7;
  const GemmShape tiny{1, 64, 64, 1};  // one wave of its smallest tiles is under 0.1 µs on either GPU
  for (const ClusterSpec* c : {&h100, &gb200})
    for (Precision prec : {Precision::bf16, Precision::fp8})
      EXPECT_NEAR(gemm_time_s(tiny, prec, *c, p), ramp_s, 0.01 * ramp_s) << c->name;
  // a large GEMM is at gemm_eff_max less the ramp's share: work / (work + ramp at the peak)
  const GemmShape big{128 * 132, 256, 8192, 1};  // one full wave of 128x256 tiles on an H100
  const double W = 2.0 * 128 * 132 * 256 * 8192, peak = *h100.gpu.peak(Precision::bf16) * 1e12;
  EXPECT_NEAR(gemm_efficiency(big, Precision::bf16, h100, p), 0.7 * W / (W + 20e-6 * peak), 1e-9);
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

// The attention kernel is a framework fact: torchtitan's SDPA and llm-foundry's flash-attn run
// FlashAttention-2, Megatron-Core cuDNN's fused attention; their measured rates differ on Hopper only,
// where PyTorch SDPA's bundled FlashAttention-2 build runs at its measured share of the flash-attn 2
// package's rate (data/frameworks kernels.flash_attention_2_rate).
TEST(AttentionKernel, FrameworkSelectsTheMeasuredFlashAttention2RateWhereOneExists) {
  Op att;
  att.kind = OpKind::attention;
  att.fwd_flops = 4e12;  // long enough that the ramp hardly matters
  for (const char* cl : {"dgx-h100", "dgx-b200"}) {
    ClusterSpec c = *cluster_preset(cl);
    const CostParams base = default_cost_params(c);
    CostParams zero_fe = base;
    zero_fe.framework_eff.clear();  // isolate the kernel choice from the frameworks' efficiency factors
    OpCost mega = compute_op_cost(att, Precision::bf16, c, framework_params(zero_fe, Framework::megatron));
    OpCost titan = compute_op_cost(att, Precision::bf16, c, framework_params(zero_fe, Framework::torchtitan));
    OpCost foundry = compute_op_cost(att, Precision::bf16, c, framework_params(zero_fe, Framework::llm_foundry));
    OpCost maxtext = compute_op_cost(att, Precision::bf16, c, framework_params(zero_fe, Framework::maxtext));
    EXPECT_DOUBLE_EQ(mega.fwd_s, maxtext.fwd_s) << cl;
    if (base.attn_fa2_fwd_eff > 0) {
      // FlashAttention-2 is the slower kernel on Hopper (FlashAttention-3 paper: 370 vs cuDNN's 600 TFLOP/s)
      EXPECT_GT(foundry.fwd_s, 1.3 * mega.fwd_s) << cl;
      EXPECT_GT(foundry.bwd_input_s, 1.3 * mega.bwd_input_s) << cl;
      EXPECT_NEAR(foundry.fwd_s / mega.fwd_s, base.attn_fwd_eff / base.attn_fa2_fwd_eff, 0.01) << cl;
      // SDPA's build: 294 against the package's 364 TFLOP/s (pytorch/benchmark #2296; FlashAttention-3 paper)
      const double rate = framework_step(Framework::torchtitan).flash_attention_2_rate;
      EXPECT_LT(rate, 1.0);
      EXPECT_NEAR(foundry.fwd_s / titan.fwd_s, rate, 0.01) << cl;
      EXPECT_NEAR(foundry.bwd_input_s / titan.bwd_input_s, rate, 0.01) << cl;
    } else {
      EXPECT_DOUBLE_EQ(titan.fwd_s, foundry.fwd_s) << cl;
      EXPECT_DOUBLE_EQ(titan.fwd_s, mega.fwd_s) << cl;  // no measurement: the fused rate for every framework
      EXPECT_DOUBLE_EQ(titan.bwd_input_s, mega.bwd_input_s) << cl;
    }
  }
  // the shipped calibration measures it on Hopper
  EXPECT_GT(default_cost_params(*cluster_preset("dgx-h100")).attn_fa2_fwd_eff, 0);
}

// A framework's TP-comm overlap hides its share of what the full chunked overlap hides: torchtitan's
// async TP (FrameworkRuns::tp_overlap_share < 1) lands between no overlap and Megatron's userbuffers.
TEST(TpOverlapShare, ScalesTheHiddenPartOfEachTpCollective) {
  ClusterSpec c = *cluster_preset("dgx-h100");
  CostParams p = default_cost_params(c);
  ModelSpec m = *model_preset("llama3-70b");
  OpContext oc;
  oc.tp = 8;
  oc.sp = true;
  oc.seq = 8192;
  const std::vector<Op> ops = layer_ops(m, 0, oc);
  ListTimingContext x;
  x.cl = &c;
  x.prm = &p;
  x.tp = 8;
  x.tp_pl = GroupPlacement{8, 1, 8, true};
  const std::vector<OpCost> cost = op_list_compute(ops, x);
  auto tp_time = [&](bool ovl, double share) {
    x.tp_comm_overlap = ovl;
    x.tp_overlap_share = share;
    ListTiming t = time_op_list(ops, cost, x);
    return t.F.tp + t.B.tp;
  };
  const double off = tp_time(false, 1), full = tp_time(true, 1);
  const double share = framework_runs(Framework::torchtitan).tp_overlap_share;
  ASSERT_LT(full, off);
  ASSERT_GT(share, 0.0);
  ASSERT_LT(share, 1.0);
  EXPECT_EQ(framework_runs(Framework::megatron).tp_overlap_share, 1.0);
  EXPECT_NEAR(tp_time(true, share) - full, (1 - share) * (off - full), 1e-9 * off);
  EXPECT_NEAR(tp_time(true, 0.0), off, 1e-12 * off);
}

// compute_op_cost keeps a per-thread memo of GEMM times: whatever it holds, an op costs the doubles
// gemm_time_s computes without it, under other parameters, clusters and precisions in between and after
// more shapes than the memo has slots (evictions).
TEST(GemmMemo, ReturnsTheComputedDoublesUnderEveryInput) {
  const ModelSpec m = *model_preset("llama3-70b");
  OpContext oc;
  oc.tp = 8;
  oc.seq = 4096;
  Op gemm;
  for (const Op& o : layer_ops(m, 0, oc))
    if (o.kind == OpKind::gemm && !op_has_role(o.id, kGroupedGemm)) gemm = o;
  ASSERT_EQ(gemm.kind, OpKind::gemm);
  const ClusterSpec h100 = *cluster_preset("dgx-h100"), a100 = *cluster_preset("dgx-a100-80g");
  const CostParams base = default_cost_params(h100);
  std::vector<CostParams> params(5, base);
  params[1].gemm_ramp_us *= 2;
  params[2].gemm_tile_n = 128;
  params[3].gemm_eff_max *= 0.9;
  params[4].hbm_eff *= 0.5;
  params[4].kernel_overhead_us += 1;
  int checked = 0;
  // each shape under every parameter set, cluster and precision in turn: a memo that left an input
  // out of its key would answer one of them with another's time
  for (int round = 0; round < 2; ++round)
    for (int64_t i = 0; i < 400; ++i) {
      const GemmShape s{1 + (i * 37) % 4096, 128 + (i % 7) * 1024, 256 + (i % 5) * 2048, 1};
      gemm.gemm = s;
      for (const ClusterSpec* c : {&h100, &a100})
        for (Precision prec : {Precision::bf16, Precision::fp32})
          for (const CostParams& p : params) {
            const OpCost got = compute_op_cost(gemm, prec, *c, p);
            ASSERT_EQ(got.fwd_s, gemm_time_s(s, prec, *c, p)) << i;
            ASSERT_EQ(got.bwd_input_s, gemm_time_s({s.m, s.k, s.n, s.groups}, prec, *c, p)) << i;
            ASSERT_EQ(got.bwd_weight_s, gemm_time_s({s.k, s.n, s.m, s.groups}, prec, *c, p)) << i;
            ++checked;
          }
    }
  EXPECT_EQ(checked, 2 * 400 * 5 * 2 * 2);
  // the parameters matter (a memo that ignored them would return the first one's time)
  gemm.gemm = {4096, 8192, 8192, 1};
  EXPECT_NE(compute_op_cost(gemm, Precision::bf16, h100, params[0]).fwd_s,
            compute_op_cost(gemm, Precision::bf16, h100, params[3]).fwd_s);
}

// mplan verify predicts the CUDA executor as it is: fp32 tensors around bf16 GEMMs. Its layers move
// 4-byte activations (twice the bytes of every memory-bound op, twice the saved GEMM inputs), and
// each bf16 GEMM pays the kernels converting its activation operands: 6 bytes per element of the
// input (forward, weight gradient) and of the output gradient (input gradient); none in fp8.
TEST(ExecutorCosts, Fp32ActivationsAndOperandConversions) {
  const ModelSpec m = *model_preset("llama3-8b");
  const ClusterSpec c = *cluster_preset("dgx-h100");
  OpContext bf, ex;
  bf.seq = ex.seq = 2048;
  ex.activation_bytes = 4;
  const std::vector<Op> a = layer_ops(m, 0, bf), b = layer_ops(m, 0, ex);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].kind == OpKind::elementwise) {
      EXPECT_DOUBLE_EQ(b[i].fwd_bytes, 2 * a[i].fwd_bytes) << a[i].name;
    }
    EXPECT_DOUBLE_EQ(b[i].fwd_flops, a[i].fwd_flops) << a[i].name;
  }
  const Op* qkv = nullptr;
  for (const Op& o : a)
    if (o.id == OpId::qkv_gemm) qkv = &o;
  ASSERT_NE(qkv, nullptr);
  CostParams p = default_cost_params(c);
  const OpCost plain = compute_op_cost(*qkv, Precision::bf16, c, p);
  p.gemm_operand_cast_bytes = 6;
  const OpCost cast = compute_op_cost(*qkv, Precision::bf16, c, p);
  const double hbm = c.gpu.hbm_gbps * 1e9 * p.hbm_eff, ovh = p.kernel_overhead_us * 1e-6;
  const GemmShape& s = qkv->gemm;
  EXPECT_NEAR(cast.fwd_s - plain.fwd_s, double(s.m) * s.k * 6 / hbm + ovh, 1e-12);
  EXPECT_NEAR(cast.bwd_input_s - plain.bwd_input_s, double(s.m) * s.n * 6 / hbm + ovh, 1e-12);
  EXPECT_NEAR(cast.bwd_weight_s - plain.bwd_weight_s, double(s.m) * s.k * 6 / hbm + ovh, 1e-12);
  CostParams fp8 = default_cost_params(c);
  const OpCost f0 = compute_op_cost(*qkv, Precision::fp8, c, fp8);
  fp8.gemm_operand_cast_bytes = 6;
  EXPECT_DOUBLE_EQ(compute_op_cost(*qkv, Precision::fp8, c, fp8).fwd_s, f0.fwd_s);  // fp8 has its own casts
}

}  // namespace
}  // namespace mplan
