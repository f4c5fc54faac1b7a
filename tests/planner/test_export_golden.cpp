// Byte-identity guard of the plan vocabulary: for plans that together set every ParallelConfig field
// (dense, MoE, MLA, every precision, ZeRO 0-3, uneven pipelines, offloading, optimizer dtypes), the
// plan JSON, the Megatron-LM arguments and what parse_megatron_args reads back are kept in
// tests/data/golden_exports.json. Any change fails here and must be taken on purpose: rerun with
// MPLAN_UPDATE_GOLDEN=1 to rewrite the file, and review its diff.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "planner/planner.h"
#include "tests/golden_jobs.h"

namespace mplan {
namespace {

using golden::J;
using golden::Job;

// The canonical jobs of this golden file.
std::vector<Job> jobs() {
  return {
      {"llama3-8b dp8", "llama3-8b", "dgx-h100", 8, 64, 8192, Precision::bf16, J{}},
      {"llama3-70b tp8 pp4 vpp5 tpov", "llama3-70b", "dgx-h100", 512, 1024, 8192, Precision::bf16,
       J{{"tp", 8}, {"pp", 4}, {"vpp", 5}, {"tp_comm_overlap", true}, {"recompute", "selective"}}},
      {"llama3.1-405b balanced cp2 fp8", "llama3.1-405b", "dgx-h100", 1024, 512, 8192, Precision::fp8,
       J{{"tp", 8}, {"pp", 8}, {"cp", 2}, {"cp_comm_type", "a2a"}, {"pipeline_layout", "balanced"}, {"fp8_param_gather", true}}},
      {"llama3.1-405b first/last", "llama3.1-405b", "dgx-h100", 1024, 512, 8192, Precision::bf16,
       J{{"tp", 8},
         {"pp", 16},
         {"num_layers_in_first_pipeline_stage", 7},
         {"num_layers_in_last_pipeline_stage", 7},
         {"zero", 0},
         {"overlap_grad_reduce", false}}},
      {"gpt3-175b full recompute block", "gpt3-175b", "dgx-a100-80g", 1024, 1536, 2048, Precision::fp16,
       J{{"tp", 8}, {"pp", 16}, {"recompute", "full"}, {"recompute_num_layers", 2}, {"attention_backend", "unfused"}}},
      {"llama2-7b full uniform triton fp32", "llama2-7b", "dgx-a100-80g", 8, 64, 4096, Precision::fp32,
       J{{"recompute", "full"}, {"attention_backend", "triton"}, {"schedule", "gpipe"}}},
      {"llama3-8b zero3 zb", "llama3-8b", "dgx-h100", 16, 64, 8192, Precision::bf16,
       J{{"zero", 3}, {"pp", 2}, {"schedule", "zb"}, {"dp_replicate", 2}, {"overlap_param_gather", false}}},
      {"llama3-8b zero2 optimizer dtypes", "llama3-8b", "dgx-h100", 16, 64, 8192, Precision::bf16,
       J{{"zero", 2},
         {"main_params", "bf16"},
         {"adam_states_bf16", true},
         {"grad_reduce_in_bf16", true},
         {"cross_entropy_fusion", true}}},
      {"llama3-8b remainder offload", "llama3-8b", "dgx-h100", 8, 64, 8192, Precision::bf16,
       J{{"main_params", "remainder"}, {"offload_modules", J::array({"attn_norm", "core_attn", "mlp_norm"})}}},
      {"llama3-8b cpu offload none", "llama3-8b", "dgx-h100", 8, 64, 8192, Precision::bf16,
       J{{"cpu_offload_layers", 4}, {"main_params", "none"}}},
      {"mixtral-8x7b ep8 capacity", "mixtral-8x7b", "dgx-h100", 64, 256, 4096, Precision::bf16,
       J{{"ep", 8}, {"tp", 2}, {"moe_capacity_factor", 1.25}, {"moe_pad_to_capacity", true}}},
      {"qwen3-30b ep8 deepep forced", "qwen3-30b-a3b", "dgx-h100", 64, 512, 4096, Precision::bf16,
       J{{"ep", 8}, {"moe_force_balance", true}, {"moe_dispatcher", "deepep"}, {"moe_capacity_factor", 1.0}}},
      {"deepseek-v3 ep64 pp8 selective fp8", "deepseek-v3", "dgx-h100", 1024, 4096, 4096, Precision::fp8,
       J{{"ep", 64},
         {"pp", 8},
         {"vpp", 2},
         {"pipeline_layout", "balanced"},
         {"moe_a2a_overlap", true},
         {"recompute", "selective"},
         {"recompute_modules", J::array({"mla_up_proj", "layernorm", "moe_act"})}}},
      {"qwen3-235b gb200 mxfp8 hybridep", "qwen3-235b-a22b", "gb200-nvl72", 256, 2048, 4096, Precision::mxfp8,
       J{{"ep", 32}, {"etp", 2}, {"tp", 2}, {"pp", 4}, {"moe_dispatcher", "hybridep"}}},
      {"llama3-70b b200 nvfp4", "llama3-70b", "dgx-b200", 64, 128, 8192, Precision::nvfp4,
       J{{"tp", 2}, {"pp", 4}, {"vpp", 5}, {"cp", 2}, {"cp_comm_type", "allgather"}}},
      {"maxtext remat", "llama2-70b", "dgx-h100", 128, 256, 4096, Precision::bf16,
       J{{"zero", 3}, {"micro_batch_size", 2}, {"recompute", "selective"}, {"remat_policy", "save_dot_except_mlpwi"}}},
      // added with the field: the row in core/parallel_fields.cpp gives its JSON key, flag and parse
      {"llama3-8b cuda graphs", "llama3-8b", "dgx-h100", 8, 64, 8192, Precision::bf16,
       J{{"cuda_graph_impl", "transformer_engine"}}},
  };
}

TEST(GoldenExports, PlanJsonAndMegatronArgumentsAreByteIdentical) {
  const golden::File golden("golden_exports.json");
  ASSERT_EQ(golden.missing(), "");
  nlohmann::json now = nlohmann::json::object();
  for (const Job& j : jobs()) {
    Plan p = golden::plan_with(j, j.parallel);
    std::string text = export_megatron_args(p);
    auto back = parse_megatron_args(text);
    ASSERT_TRUE(back) << j.name << ": " << back.error().message();
    now[j.name] = {
        {"plan", parallel_to_json(p.parallel).dump()}, {"megatron", text}, {"parsed", parallel_to_json(back->parallel).dump()}};
    if (golden.updating()) continue;
    ASSERT_EQ(golden.lacks(j.name), "");
    for (const char* k : {"plan", "megatron", "parsed"}) EXPECT_EQ(now[j.name][k], golden.at(j.name)[k]) << j.name << " " << k;
  }
  EXPECT_EQ(golden.write(now), "");
}

}  // namespace
}  // namespace mplan
