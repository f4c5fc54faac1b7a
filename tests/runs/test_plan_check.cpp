// The plan check: every argument that sets FLOPs or memory is compared with the plan (a wrong model
// is refused, naming the argument), and implausible MFU (a plan for the wrong GPU: above 100% of its
// peak; the framework's own TFLOP/s far from mplan's) is refused with its likely cause.
#include <gtest/gtest.h>

#include <functional>
#include <sstream>

#include "log_gen.h"
#include "runs/import.h"
#include "runs/log_jobs.h"
#include "runs/plan_check.h"
#include "runs_test_util.h"

using namespace mplan::runs;
using mplan::Plan;

namespace {

Plan llama3() { return runs_test::load_plan("llama3_8b_h100_dp8.plan.json"); }
Plan mixtral() { return runs_test::load_plan("mixtral_8x7b_h100_tp2_pp4_ep8.plan.json"); }

LogJob job_of(const std::string& text) { return runs_test::read_log_text(text).jobs.front(); }

LogJob megatron_job(const Plan& p, double mfu = 0.4, double reported = 1.0, bool args = true) {
  log_gen::LaunchSpec s;
  if (args) s.args = log_gen::megatron_args(p);
  s.mfu = mfu;
  s.reported_factor = reported;
  return job_of(log_gen::megatron_launch(p, s));
}

std::string refusal(const LogJob& job, const Plan& plan) {
  auto r = import_log_job(job, plan, {});
  return r.ok() ? "" : r.error().message();
}

}  // namespace

TEST(PlanCheck, EveryFlopOrMemoryArgumentIsCompared) {
  const Plan base = llama3();
  const LogJob job = megatron_job(base);
  ASSERT_EQ(refusal(job, base), "");
  struct Case {
    const char* what;
    std::function<void(Plan&)> edit;
    const char* expect;
  };
  std::vector<Case> cases = {
      {"ffn", [](Plan& p) { p.model.ffn_hidden_size = 11008; },
       "ffn_hidden_size = 14336 but the plan has model.ffn_hidden_size = 11008"},
      {"query groups", [](Plan& p) { p.model.num_query_groups = 32; },
       "num_query_groups = 8 but the plan has model.num_query_groups = 32"},
      {"kv channels", [](Plan& p) { p.model.kv_channels = 64; }, "kv_channels = 128 but the plan has model.kv_channels = 64"},
      {"vocab", [](Plan& p) { p.model.vocab_size = 32000; },
       "padded vocab = 128256 (original 128256) but the plan has model.vocab_size = 32000"},
      {"sequence", [](Plan& p) { p.training.seq_length = 4096; },
       "seq_length = 8192 but the plan has training.seq_length = 4096"},
      {"precision", [](Plan& p) { p.training.precision = mplan::Precision::fp8; }, "but the plan has training.precision = fp8"},
      {"gated mlp", [](Plan& p) { p.model.activation = mplan::Activation::gelu; },
       "swiglu = True but the plan has model.activation = False"},
      {"tied", [](Plan& p) { p.model.tied_embeddings = true; }, "untie_embeddings_and_output_weights = True"},
      {"batch", [](Plan& p) { p.training.global_batch_size = 256; },
       "global_batch_size = 128 but the plan has training.global_batch_size = 256"},
      {"recompute", [](Plan& p) { p.parallel.recompute = mplan::Recompute::full; },
       "recompute_granularity = None but the plan has parallel.recompute = full"},
      {"optimizer", [](Plan& p) { p.parallel.zero = 0; }, "use_distributed_optimizer = True but the plan has parallel.zero = 0"},
      {"layers", [](Plan& p) { p.model.num_layers = 16; }, "num_layers = 32 but the plan has model.num_layers = 16"},
  };
  for (const auto& c : cases) {
    Plan p = base;
    c.edit(p);
    std::string msg = refusal(job, p);
    EXPECT_NE(msg.find(c.expect), std::string::npos) << c.what << ":\n" << msg;
    EXPECT_NE(msg.find("--allow-mismatch"), std::string::npos) << c.what;
  }
  // A padded vocabulary in the plan matches too (Megatron pads to 128 x tp).
  Plan padded = base;
  padded.model.vocab_size = 128256;
  EXPECT_EQ(refusal(job, padded), "");
}

TEST(PlanCheck, MoeArgumentsAreCompared) {
  const Plan base = mixtral();
  auto args = log_gen::megatron_args(base);
  log_gen::LaunchSpec s;
  s.args = args;
  s.mfu = 0.3;
  s.last_rank = 63;
  LogJob job = job_of(log_gen::megatron_launch(base, s));
  ASSERT_EQ(refusal(job, base), "");
  Plan p = base;
  p.model.moe->top_k = 1;
  EXPECT_NE(refusal(job, p).find("moe_router_topk = 2 but the plan has model.moe.top_k = 1"), std::string::npos);
  p = base;
  p.model.moe->num_experts = 16;
  EXPECT_NE(refusal(job, p).find("num_experts = 8 but the plan has model.moe.num_experts = 16"), std::string::npos);
  p = base;
  p.model.moe->moe_layer_freq = 2;  // every other layer
  EXPECT_NE(refusal(job, p).find("moe_layer_freq = 1 but the plan has model.moe"), std::string::npos) << refusal(job, p);
  p = base;
  p.model.moe->moe_ffn_hidden_size = 7168;
  EXPECT_NE(refusal(job, p).find("moe_ffn_hidden_size = 14336"), std::string::npos);
  // A dense plan for a MoE log.
  Plan dense = llama3();
  EXPECT_NE(refusal(job, dense).find("num_experts = 8 but the plan has model.moe.num_experts = 0"), std::string::npos);
  // An explicit layer pattern: first layer dense, then MoE.
  std::string pat = "[0";
  for (int i = 1; i < 32; ++i) pat += ", 1";
  args["moe_layer_freq"] = pat + "]";
  s.args = args;
  LogJob patterned = job_of(log_gen::megatron_launch(base, s));
  p = base;
  p.model.moe->first_k_dense_layers = 1;
  EXPECT_EQ(refusal(patterned, p), "");
  EXPECT_NE(refusal(patterned, base).find("moe_layer_freq = [0, 1, 1"), std::string::npos) << refusal(patterned, base);
  EXPECT_NE(refusal(patterned, base).find("32 MoE layers"), std::string::npos);
}

TEST(PlanCheck, WrongGpuPlanIsRefusedAsImplausible) {
  Plan h100 = llama3();
  LogJob job = megatron_job(h100, 0.42, 1.0, /*args=*/true);
  // The same job with a plan on A100: the arguments agree (no GPU in them), the MFU cannot.
  Plan a100 = h100;
  a100.cluster.gpu = runs_test::load_plan("llama2_7b_a100_tp2_pp2.plan.json").cluster.gpu;
  std::string msg = refusal(job, a100);
  EXPECT_NE(msg.find("exceeds 100% of the dense bf16 peak of the plan's GPU A100"), std::string::npos) << msg;
  EXPECT_NE(msg.find("faster GPU"), std::string::npos);
  ImportOptions lax;
  lax.allow_mismatch = true;
  auto r = import_log_job(job, a100, lax);
  ASSERT_TRUE(r.ok());
  EXPECT_GT(summarize(r->run.steps, {}).mfu, 1.0);
  EXPECT_FALSE(r->run.warnings.empty());
}

TEST(PlanCheck, ReportedThroughputOutsideTheBandIsRefused) {
  Plan truth = llama3();
  // No arguments block: only the framework's own TFLOP/s can reveal that the plan's model is wrong.
  LogJob job = megatron_job(truth, 0.40, 1.0, /*args=*/false);
  EXPECT_EQ(refusal(job, truth), "");
  Plan smaller = truth;
  smaller.model.ffn_hidden_size = 7168;  // MFU computed ~30% too low
  std::string msg = refusal(job, smaller);
  EXPECT_NE(msg.find("the framework reported 1."), std::string::npos) << msg;
  EXPECT_NE(msg.find("smaller than the job's"), std::string::npos) << msg;
  // Full-attention counting (older Megatron-LM) stays inside the band.
  LogJob full = megatron_job(truth, 0.40, 1.12, false);
  EXPECT_EQ(refusal(full, truth), "");
  ReportedBand b = reported_band(truth, "Megatron-LM", false);
  EXPECT_NEAR(b.lo, 0.85, 1e-12);
  EXPECT_GT(b.hi, 1.15 * 1.1);
  EXPECT_GT(reported_band(truth, "Megatron-DeepSpeed", true).hi, b.hi * 1.3);
}

TEST(PlanCheck, ConfigDifferencesNameTheChangedArguments) {
  Plan p = llama3();
  auto a = log_gen::megatron_args(p);
  auto b = a;
  b["micro_batch_size"] = "2";
  b["log_interval"] = "1";  // not part of the plan: no difference
  auto d = config_differences(read_log_config(a, {}, std::nullopt), read_log_config(b, {}, std::nullopt));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0], "micro_batch_size 1 -> 2");
}
