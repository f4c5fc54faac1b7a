// The memory options on the command line: simulate takes the framework, recompute modules, offloading,
// optimizer storage and MoE capacity; validate reports per-row fits; bad values exit 2 naming the
// field and what would be valid.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "run_cli.h"

namespace {
const std::string kJob = "simulate --model llama3-70b --cluster dgx-h100 --gpus 64 --gbs 64 --seq 8192 --tp 8 --pp 4 ";
double peak(const std::string& extra) {
  auto r = run_mplan(kJob + extra + " --format json");
  EXPECT_EQ(r.code, 0) << extra << ": " << r.err;
  if (r.code != 0) return 0;
  return nlohmann::json::parse(r.out)["peak_memory_gib"].get<double>();
}
}  // namespace

TEST(CliMemory, OptionsChangeThePredictedMemory) {
  double base = peak("--recompute selective");
  EXPECT_LT(peak("--recompute selective --recompute-modules core_attn,layernorm,mlp"), base);
  EXPECT_LT(peak("--recompute selective --offload-modules core_attn,attn_proj"), base);
  EXPECT_LT(peak("--recompute selective --grad-reduce-in-bf16"), base);
  EXPECT_LT(peak("--recompute selective --main-params remainder --adam-states-bf16"), base);
  auto r = run_mplan(kJob + "--recompute selective --recompute-modules layernorm --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["plan"]["framework"], "megatron");
  EXPECT_EQ(j["plan"]["parallel"]["recompute_modules"], nlohmann::json::array({"layernorm"}));
}

TEST(CliMemory, BadMemoryOptionsExitTwoNamingTheField) {
  struct Case {
    std::string args;
    std::vector<std::string> said;  // each must be in the error
  };
  const std::vector<Case> cases = {
      {kJob + "--recompute selective --recompute-modules attention",
       {"--recompute-modules: 'attention' is not a Megatron recompute module", "core_attn|layernorm|mlp"}},
      {kJob + "--recompute-modules mlp", {"need recompute=selective"}},
      {kJob + "--framework torchtitan --zero 3 --offload-modules core_attn,attn_proj",
       {"offload_modules", "framework torchtitan"}},
      {"simulate --model mixtral-8x7b --cluster dgx-h100 --gpus 8 --gbs 8 --seq 4096 --ep 8 --moe-capacity-factor 0",
       {"--moe-capacity-factor: must be a number in (0,"}},
      {kJob + "--framework deepspeed", {"megatron"}},
      // Megatron: Transformer Engine fuses, nothing to compile
      {kJob + "--torch-compile", {"--torch-compile: applies only to --framework torchtitan"}},
      {kJob + "--fp8-param-gather", {"fp8_param_gather needs an fp8 precision"}},
      {kJob + "--cpu-offload-layers 10", {"cpu_offload_layers needs pp=1"}},
  };
  for (const Case& c : cases) {
    auto r = run_mplan(c.args);
    EXPECT_EQ(r.code, 2) << c.args;
    for (const std::string& said : c.said) EXPECT_NE(r.err.find(said), std::string::npos) << c.args << ": " << r.err;
  }
}

TEST(CliMemory, PlanFileMemoryFieldsAreChecked) {
  auto r = run_mplan(kJob + "--recompute selective --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  auto plan = nlohmann::json::parse(r.out)["plan"];
  plan["parallel"]["recompute_modules"] = {"core_attn", "mlpp"};
  std::string path = ::testing::TempDir() + "/bad_modules.plan.json";
  std::ofstream(path) << plan.dump();
  auto bad = run_mplan("simulate --plan " + path);
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("parallel.recompute_modules: 'mlpp' is not a Megatron recompute module"), std::string::npos) << bad.err;
  plan["parallel"]["recompute_modules"] = {"core_attn"};
  plan["framework"] = "jax";
  std::ofstream(path) << plan.dump();
  auto fw = run_mplan("simulate --plan " + path);
  EXPECT_EQ(fw.code, 2);
  EXPECT_NE(fw.err.find("plan.framework: 'jax' is not one of megatron|torchtitan|llm-foundry|maxtext"), std::string::npos)
      << fw.err;
}

TEST(CliMemory, ALayoutThatDoesNotFitNamesTheOptionThatMakesItFit) {
  // Llama-3-70B, tp 4 pp 4, 8k tokens, nothing recomputed: does not fit in 80 GB
  const std::string job = "simulate --model llama3-70b --cluster dgx-h100 --gpus 32 --gbs 64 --seq 8192 --tp 4 --pp 4 ";
  auto r = run_mplan(job + "--format json");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_FALSE(j["fits"].get<bool>());
  ASSERT_TRUE(j.contains("fits_with"));
  const auto& f = j["fits_with"];
  ASSERT_TRUE(f.is_object()) << f.dump();
  EXPECT_FALSE(f["option"].get<std::string>().empty());
  EXPECT_GT(f["step_time_s"].get<double>(), 0);
  EXPECT_LE(f["peak_memory_gib"].get<double>(), j["capacity_gib"].get<double>());
  auto t = run_mplan(job);
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("fits with"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find(f["option"].get<std::string>()), std::string::npos) << t.out;
  // a layout that fits has no fits_with
  auto ok = run_mplan(job + "--recompute full --format json");
  ASSERT_EQ(ok.code, 0) << ok.err;
  EXPECT_FALSE(nlohmann::json::parse(ok.out).contains("fits_with"));
}
