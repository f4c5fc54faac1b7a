// Each framework release's documented per-step defaults load from the embedded data/frameworks/*.json
// (simulator/framework_data.h): every framework has a file, the values are the cited ones, and
// framework_params charges them: the loop's per-step host time (stated, or the calibration's fitted
// step_host_sync_s where the data says "fitted") and the FP8 scaling kernels' bytes.
#include <gtest/gtest.h>

#include "core/ops.h"
#include "core/presets.h"
#include "simulator/compute_cost.h"
#include "simulator/framework_data.h"
#include "simulator/layer_cost.h"

namespace mplan {
namespace {

constexpr Framework kAll[] = {Framework::megatron, Framework::torchtitan, Framework::llm_foundry, Framework::maxtext};

TEST(FrameworkData, EveryFrameworkHasItsDocumentedPerStepDefaults) {
  for (Framework f : kAll) {
    const FrameworkStep& s = framework_step(f);
    EXPECT_TRUE(s.grad_clip) << to_string(f);  // all four clip by the global norm (1.0) by default
    EXPECT_GE(s.data_loading_s, 0.0) << to_string(f);
    // Megatron's distributed optimizer also writes the bf16 parameter copy and zeroes the main-grad
    // buffer; Composer's DecoupledAdamW runs eight single-tensor kernels per parameter (80 B); the
    // fused AdamW of the others reads and writes the states once (28 B)
    const double bytes = f == Framework::megatron ? 34.0 : f == Framework::llm_foundry ? 80.0 : 28.0;
    EXPECT_EQ(s.optimizer_bytes_per_param, bytes) << to_string(f);
    EXPECT_GE(s.logging_s, 0.0) << to_string(f);
    // an FP8 cast reads the bf16 tensor and writes at least its fp8 copy
    EXPECT_GE(s.fp8_act_bytes, 3.0) << to_string(f);
  }
  // MaxText's one measured per-step gap (maxtext pull request #324: 3.8 ms between steps)
  EXPECT_DOUBLE_EQ(framework_step(Framework::maxtext).data_loading_s, 0.0038);
  // no published measurement of Composer's or Paxml's per-step host gap: fitted; Megatron's and
  // torchtitan's loops keep the GPU fed (torchtitan's: the one-GPU H200 measurement)
  EXPECT_TRUE(framework_step(Framework::llm_foundry).host_sync_fitted);
  EXPECT_TRUE(framework_step(Framework::maxtext).host_sync_fitted);
  EXPECT_FALSE(framework_step(Framework::megatron).host_sync_fitted);
  EXPECT_FALSE(framework_step(Framework::torchtitan).host_sync_fitted);
  EXPECT_EQ(framework_step(Framework::torchtitan).stated_host_s(), 0.0);
  // torchao's tensorwise roofline: amax pass + cast to both layouts (6 B), the weight every micro-batch
  EXPECT_EQ(framework_step(Framework::torchtitan).fp8_act_bytes, 6.0);
  EXPECT_EQ(
      framework_step(Framework::torchtitan).fp8_weight_fwd_bytes + framework_step(Framework::torchtitan).fp8_weight_bwd_bytes,
      8.0);
  // Transformer Engine: one cast per tensor (3 B; casts fused into the producing norm / activation),
  // the weight cached across micro-batches
  EXPECT_EQ(framework_step(Framework::megatron).fp8_act_bytes, 3.0);
  EXPECT_EQ(framework_step(Framework::megatron).fp8_weight_fwd_bytes, 0.0);
}

TEST(FrameworkData, FrameworkParamsChargesTheStatedOrFittedPerStepHostTime) {
  CostParams prm;
  prm.optimizer_overhead_s = 0.01;  // a user's own calibrated per-step cost stays on top
  prm.step_host_sync_s = 0.07;      // charged only to the loops whose data says "fitted"
  for (Framework f : kAll) {
    const FrameworkStep& s = framework_step(f);
    const double want = 0.01 + s.stated_host_s() + (s.host_sync_fitted ? 0.07 : 0.0);
    EXPECT_DOUBLE_EQ(framework_params(prm, f).optimizer_overhead_s, want) << to_string(f);
  }
  EXPECT_DOUBLE_EQ(framework_params(prm, Framework::llm_foundry).optimizer_overhead_s, 0.08);
  EXPECT_DOUBLE_EQ(framework_params(prm, Framework::torchtitan).optimizer_overhead_s, 0.01);
  EXPECT_DOUBLE_EQ(framework_params(prm, Framework::maxtext).optimizer_overhead_s, 0.01 + 0.0038 + 0.07);
}

// The kernel gap is a measured constant (2.1 us launched on a stream, 1.3 us replayed from a CUDA
// graph, H100): a plan with CUDA graphs pays the shorter one on every kernel, the rest is unchanged.
TEST(FrameworkData, CudaGraphsShortenTheGapOfEveryKernel) {
  auto cl = cluster_preset("dgx-h100");
  ASSERT_TRUE(bool(cl));
  const CostParams prm;  // the measured defaults
  EXPECT_DOUBLE_EQ(prm.kernel_overhead_us, 2.1);
  EXPECT_DOUBLE_EQ(prm.kernel_overhead_graph_us, 1.3);
  const CostParams launched = framework_params(prm, Framework::megatron),
                   graphed = framework_params(prm, Framework::megatron, CudaGraphImpl::transformer_engine);
  EXPECT_DOUBLE_EQ(launched.kernel_overhead_us, 2.1);
  EXPECT_DOUBLE_EQ(graphed.kernel_overhead_us, 1.3);
  EXPECT_DOUBLE_EQ(framework_params(prm, Framework::megatron, CudaGraphImpl::local).kernel_overhead_us, 1.3);
  EXPECT_DOUBLE_EQ(framework_params(prm, Framework::megatron, CudaGraphImpl::full_iteration).kernel_overhead_us, 1.3);
  Op norm;
  norm.kind = OpKind::norm;
  norm.fwd_bytes = 4096.0 * 4096 * 4;
  const OpCost a = compute_op_cost(norm, Precision::bf16, *cl, launched),
               b = compute_op_cost(norm, Precision::bf16, *cl, graphed);
  EXPECT_NEAR(a.fwd_s - b.fwd_s, 0.8e-6, 1e-12);              // one kernel forward
  EXPECT_NEAR(a.bwd_input_s - b.bwd_input_s, 0.8e-6, 1e-12);  // one kernel backward
}

TEST(FrameworkData, TorchaosFp8CastsCostMoreThanTransformerEnginesFusedOnes) {
  auto cl = cluster_preset("dgx-h100");
  ASSERT_TRUE(bool(cl));
  Op gemm;
  gemm.kind = OpKind::gemm;
  gemm.gemm = GemmShape{8192, 4096, 4096, 1};
  CostParams prm;
  const CostParams te = framework_params(prm, Framework::megatron), ao = framework_params(prm, Framework::torchtitan);
  const OpCost a = compute_op_cost(gemm, Precision::fp8, *cl, te), b = compute_op_cost(gemm, Precision::fp8, *cl, ao);
  const double hbm = cl->gpu.hbm_gbps * 1e9 * prm.hbm_eff;
  // forward: 3 more bytes per input element and 5 per weight element; backward: 3 more per output
  // gradient element and 3 per weight element, all at the HBM rate
  EXPECT_NEAR(b.fwd_s - a.fwd_s, (8192.0 * 4096 * 3 + 4096.0 * 4096 * 5) / hbm, 1e-12);
  EXPECT_NEAR(b.bwd_input_s - a.bwd_input_s, (8192.0 * 4096 * 3 + 4096.0 * 4096 * 3) / hbm, 1e-12);
  // bf16 GEMMs have no casts
  const OpCost c = compute_op_cost(gemm, Precision::bf16, *cl, te), d = compute_op_cost(gemm, Precision::bf16, *cl, ao);
  EXPECT_DOUBLE_EQ(c.fwd_s, d.fwd_s);
}

}  // namespace
}  // namespace mplan
