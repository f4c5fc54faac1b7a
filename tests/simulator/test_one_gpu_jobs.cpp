// The one-GPU jobs measured on an H200 against PyTorch 2.11 (../shared/gpu/h200-2026-11-26/
// torch_ref.jsonl; its plans copied to tests/simulator/data/ as torchtitan eager and compiled): the
// modelled step without the fitted per-step constant (optimizer_overhead_s, docs/cost_model.md "The
// fitted per-step constant") stays within 30 % of the measured step, so a change to the GEMM ramp,
// the memory-bound ops or the eager/compiled pointwise kernels that breaks small jobs fails here. The
// shipped prediction with the constant is printed beside it (3-5x too slow for GPT-2: the constant is
// what issue 31 asks to replace). A second test keeps the decomposition of docs/cost_model.md ("What
// the one-GPU jobs need"): with the two terms fitted to multi-GPU rows taken out (the per-step
// constant and torchtitan's kernel-efficiency factor) every job is within 15 % of the H200.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "core/plan.h"
#include "simulator/cost_params.h"
#include "simulator/simulator.h"

namespace mplan {
namespace {

struct OneGpuJob {
  const char* plan;
  bool compiled;
  double measured_step_s;  // PyTorch 2.11 on one H200 (torch_ref.jsonl)
};

// eager = torchtitan eager, compiled = torchtitan compiled (the plans' framework and torch_compile)
constexpr OneGpuJob kJobs[] = {{"h200_gpt2_124m_torchtitan_eager.json", false, 0.039578},
                               {"h200_gpt2_124m_torchtitan_compiled.json", true, 0.026090},
                               {"h200_llama_1p5b_torchtitan_eager.json", false, 0.168714},  // mean of the two eager runs
                               {"h200_llama_1p5b_torchtitan_compiled.json", true, 0.139067}};

Plan read_job(const OneGpuJob& j) {
  auto read = read_plan_file(std::string(MPLAN_SOURCE_DIR) + "/tests/simulator/data/" + j.plan);
  EXPECT_TRUE(bool(read)) << j.plan << ": " << (read ? "" : read.error().message());
  return read ? *read : Plan{};
}

double step_s(const Plan& plan, const CostParams& prm) {
  auto r = simulate(plan, prm);
  EXPECT_TRUE(bool(r)) << (r ? "" : r.error().message());
  return r ? r->step_time_s : 0.0;
}

TEST(OneGpuJobs, TheModelledStepWithoutThePerStepConstantIsWithin30PercentOfTheH200) {
  for (const OneGpuJob& j : kJobs) {
    const Plan plan = read_job(j);
    ASSERT_EQ(plan.training.framework, Framework::torchtitan) << j.plan;
    ASSERT_EQ(plan.training.torch_compile, j.compiled) << j.plan;
    ASSERT_EQ(plan.parallel.world_size, 1) << j.plan;
    const CostParams shipped = default_cost_params(plan.cluster);
    CostParams modelled = shipped;
    modelled.optimizer_overhead_s = 0.0;
    const double with_constant = step_s(plan, shipped), without = step_s(plan, modelled);
    std::printf("%s: measured %.4f s; shipped %.4f s (%+.0f %%); without the per-step constant %.4f s (%+.0f %%)\n", j.plan,
                j.measured_step_s, with_constant, 100 * (with_constant / j.measured_step_s - 1), without,
                100 * (without / j.measured_step_s - 1));
    // the constant is all that separates the two
    EXPECT_NEAR(with_constant - without, shipped.optimizer_overhead_s, 1e-9) << j.plan;
    EXPECT_LT(std::abs(without / j.measured_step_s - 1), 0.30) << j.plan;
  }
}

TEST(OneGpuJobs, WithoutThePerStepConstantAndTorchtitansFittedFactorEveryJobIsWithin15Percent) {
  // The rest of the shipped fit (GEMM peak fraction and ramp, HBM rate, per-kernel cost, attention)
  // is kept: the compute model of a one-GPU step needs neither term, so whatever replaces them must
  // not charge a one-GPU job (docs/cost_model.md, "What the one-GPU jobs need").
  for (const OneGpuJob& j : kJobs) {
    const Plan plan = read_job(j);
    CostParams p = default_cost_params(plan.cluster);
    ASSERT_LT(p.framework_factor(Framework::torchtitan), 1.0) << "the shipped fit has a torchtitan factor";
    p.optimizer_overhead_s = 0.0;
    p.framework_eff[Framework::torchtitan] = 1.0;
    const double s = step_s(plan, p), err = s / j.measured_step_s - 1;
    std::printf("%s: measured %.4f s; without the constant and the torchtitan factor %.4f s (%+.0f %%)\n", j.plan,
                j.measured_step_s, s, 100 * err);
    EXPECT_LT(std::abs(err), 0.15) << j.plan;
  }
}

}  // namespace
}  // namespace mplan
