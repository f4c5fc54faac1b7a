// Profile rows are costed exactly like the ops the simulator costs: GEMM rows as GEMMs of their
// shape, backward rows as the backward of the rebuilt forward op, collective rows on their placement.
#include <gtest/gtest.h>

#include <cmath>
#include <utility>

#include "core/presets.h"
#include "profiles/cost_eval.h"
#include "simulator/collectives.h"
#include "simulator/compute_cost.h"

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

TEST(CostEval, OpClasses) {
  const std::pair<const char*, OpKind> kinds[] = {{"fc1_gemm", OpKind::gemm},   {"gemm", OpKind::gemm},
                                                  {"router", OpKind::gemm},     {"attn_core", OpKind::attention},
                                                  {"final_norm", OpKind::norm}, {"dispatch_a2a", OpKind::comm},
                                                  {"adamw", OpKind::optimizer}, {"rope", OpKind::elementwise}};
  for (const auto& [name, kind] : kinds) EXPECT_EQ(op_kind_of(name), kind) << name;
  for (const auto& name : op_vocabulary()) EXPECT_FALSE(to_string(op_kind_of(name)).empty()) << name;
}

TEST(CostEval, RowsCostLikeTheSimulatorsOps) {
  ClusterSpec c = *cluster_preset("dgx-h100");
  CostParams p = default_cost_params(c);
  OpContext ctx;
  ctx.seq = 4096;
  for (const Op& op : layer_ops(*model_preset("llama3-8b"), 0, ctx)) {
    if (op.kind == OpKind::comm) continue;
    OpCost want = compute_op_cost(op, Precision::bf16, c, p);
    KernelRow r;
    r.op = op.name;
    r.dtype = "bf16";
    if (op.kind == OpKind::gemm) {
      r.m = op.gemm.m, r.n = op.gemm.n, r.k = op.gemm.k, r.groups = op.gemm.groups;
      EXPECT_DOUBLE_EQ(predict_kernel_s(r, c, p), want.fwd_s) << op.name;
      r.m = op.gemm.m, r.n = op.gemm.k, r.k = op.gemm.n;  // dgrad as the profiler stores it
      EXPECT_DOUBLE_EQ(predict_kernel_s(r, c, p), want.bwd_input_s) << op.name;
      r.m = op.gemm.k, r.n = op.gemm.n, r.k = op.gemm.m;  // wgrad
      EXPECT_DOUBLE_EQ(predict_kernel_s(r, c, p), want.bwd_weight_s) << op.name;
      continue;
    }
    r.pass = "fwd";
    r.flops = op.fwd_flops;
    r.bytes = op.fwd_bytes;
    EXPECT_DOUBLE_EQ(predict_kernel_s(r, c, p), want.fwd_s) << op.name;
    r.pass = "bwd";
    r.flops = 2 * op.fwd_flops;
    r.bytes = 2 * op.fwd_bytes;
    EXPECT_DOUBLE_EQ(predict_kernel_s(r, c, p), want.bwd_input_s) << op.name;
  }
}

TEST(CostEval, CollectiveRowsUseTheirPlacement) {
  ClusterSpec c = *cluster_preset("dgx-b200");
  CostParams p = default_cost_params(c);
  CollectiveRow r;
  r.op = "all_reduce";
  r.group_size = 32;
  r.domains = 4;
  r.bytes = 1 << 28;
  GroupPlacement g{32, 4, 8, true};
  EXPECT_DOUBLE_EQ(predict_collective_s(r, c, p), collective_time_s(Collective::all_reduce, double(r.bytes), g, c, p));
  r.op = "send_recv";
  r.group_size = 8;
  r.domains = 1;
  EXPECT_DOUBLE_EQ(predict_collective_s(r, c, p), p2p_time_s(double(r.bytes), true, c, p));
}
