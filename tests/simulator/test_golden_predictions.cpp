// Accuracy regression guard: the predictions of ~15 canonical jobs (dense, MoE, CP, FP8, FSDP, every
// framework, A100 to GB200) with the shipped calibration, kept in tests/data/golden_predictions.json.
// Any change of a prediction fails here and must be taken on purpose: rerun with
// MPLAN_UPDATE_GOLDEN=1 to rewrite the file, and review its diff.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "simulator/simulator.h"
#include "tests/golden_jobs.h"

using namespace mplan;

namespace {

using golden::J;
using golden::Job;

// The canonical jobs of this golden file.
std::vector<Job> jobs() {
  return {
      {"dense llama3-8b tp1 dp8", "llama3-8b", "dgx-h100", 8, 64, 8192, Precision::bf16, J{}},
      {"dense llama3-70b tp8 pp4 vpp5", "llama3-70b", "dgx-h100", 512, 1024, 8192, Precision::bf16,
       J{{"tp", 8}, {"pp", 4}, {"vpp", 5}, {"tp_comm_overlap", true}}},
      {"dense llama3.1-405b tp8 pp8 cp2 fp8", "llama3.1-405b", "dgx-h100", 1024, 512, 8192, Precision::fp8,
       J{{"tp", 8}, {"pp", 8}, {"cp", 2}, {"pipeline_layout", "balanced"}, {"fp8_param_gather", true}}},
      {"dense gpt3-175b A100 full recompute", "gpt3-175b", "dgx-a100-80g", 1024, 1536, 2048, Precision::bf16,
       J{{"tp", 8}, {"pp", 16}, {"recompute", "full"}}},
      {"cp llama3-8b 32k cp4", "llama3-8b", "dgx-h100", 32, 32, 32768, Precision::bf16, J{{"cp", 4}, {"tp", 2}}},
      {"fp8 llama3-70b B200", "llama3-70b", "dgx-b200", 64, 128, 8192, Precision::fp8,
       J{{"tp", 2}, {"pp", 4}, {"vpp", 5}, {"grad_reduce_in_bf16", true}}},
      {"fsdp llama3-8b zero3", "llama3-8b", "dgx-h100", 16, 64, 8192, Precision::bf16, J{{"zero", 3}}},
      {"moe mixtral-8x7b ep8 learned", "mixtral-8x7b", "dgx-h100", 64, 256, 4096, Precision::bf16, J{{"ep", 8}, {"tp", 1}}},
      {"moe qwen3-30b ep8 forced deepep", "qwen3-30b-a3b", "dgx-h100", 64, 512, 4096, Precision::bf16,
       J{{"ep", 8}, {"moe_force_balance", true}, {"moe_dispatcher", "deepep"}}},
      {"moe deepseek-v3 ep64 pp8 selective", "deepseek-v3", "dgx-h100", 1024, 4096, 4096, Precision::fp8,
       J{{"ep", 64},
         {"pp", 8},
         {"pipeline_layout", "balanced"},
         {"recompute", "selective"},
         {"recompute_modules", J::array({"mla_up_proj", "layernorm", "moe_act"})}}},
      {"moe gb200 qwen3-235b mxfp8", "qwen3-235b-a22b", "gb200-nvl72", 256, 2048, 4096, Precision::mxfp8,
       J{{"ep", 32}, {"pp", 4}, {"pipeline_layout", "balanced"}, {"moe_force_balance", true}, {"moe_dispatcher", "hybridep"}}},
      {"torchtitan llama3-8b fsdp selective", "llama3-8b", "grand-teton-h100", 8, 16, 8192, Precision::fp8,
       J{{"zero", 3}, {"micro_batch_size", 2}, {"recompute", "selective"}}, Framework::torchtitan},
      {"torchtitan llama3-70b tp8 fsdp full", "llama3-70b", "grand-teton-h100", 256, 512, 8192, Precision::bf16,
       J{{"tp", 8}, {"zero", 3}, {"micro_batch_size", 16}, {"recompute", "full"}}, Framework::torchtitan},
      {"llm-foundry llama2-7b fsdp", "llama2-7b", "dgx-h100", 8, 64, 2048, Precision::bf16,
       J{{"zero", 3}, {"micro_batch_size", 8}, {"cross_entropy_fusion", true}}, Framework::llm_foundry},
      {"maxtext llama2-70b fsdp remat", "llama2-70b", "dgx-h100", 128, 256, 4096, Precision::bf16,
       J{{"zero", 3}, {"micro_batch_size", 2}, {"recompute", "selective"}, {"remat_policy", "save_dot_except_mlpwi"}},
       Framework::maxtext},
  };
}

// The job's fields over the defaults, sp on where tp > 1 and the interleaved schedule where vpp > 1
// unless the job says otherwise.
Plan plan_of(const Job& j) {
  nlohmann::json par = parallel_to_json(ParallelConfig{});
  par.erase("dp");
  for (auto it = j.parallel.begin(); it != j.parallel.end(); ++it) par[it.key()] = it.value();
  int tp = par.value("tp", 1);
  if (!j.parallel.contains("sp")) par["sp"] = tp > 1;
  int vpp = par.value("vpp", 1);
  if (vpp > 1) par["schedule"] = "interleaved";
  return golden::plan_with(j, par);
}

}  // namespace

TEST(GoldenPredictions, CanonicalJobsPredictWhatTheyDid) {
  const golden::File golden("golden_predictions.json");
  ASSERT_EQ(golden.missing(), "");
  nlohmann::json now = nlohmann::json::object();
  for (const Job& j : jobs()) {
    Plan p = plan_of(j);
    auto r = simulate(p, default_cost_params(p.cluster));
    ASSERT_TRUE(r) << j.name << ": " << r.error().message();
    now[j.name] = {{"tokens_per_s_per_gpu", r->tokens_per_s_per_gpu},
                   {"step_time_s", r->step_time_s},
                   {"mfu", r->mfu},
                   {"peak_memory_gib", r->peak_memory_gib},
                   {"fits", r->fits}};
    if (golden.updating()) continue;
    ASSERT_EQ(golden.lacks(j.name), "");
    const auto& g = golden.at(j.name);
    for (const char* k : {"tokens_per_s_per_gpu", "step_time_s", "mfu", "peak_memory_gib"})
      EXPECT_NEAR(now[j.name][k].get<double>() / g[k].get<double>(), 1.0, 1e-6)
          << j.name << " " << k << ": now " << now[j.name][k] << ", golden " << g[k];
    EXPECT_EQ(now[j.name]["fits"], g["fits"]) << j.name;
  }
  EXPECT_EQ(golden.write(now), "");
}
