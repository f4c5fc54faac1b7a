// Shared by the torchtitan writers (planner/export_torchtitan.cpp: the v0.1 and v0.2.x TOML;
// planner/export_torchtitan_config.cpp: today's Python configuration): the torchtitan model definition
// an mplan model is, the layout checks of each version, and the modules of each pipeline stage.
#pragma once
#include <string>
#include <vector>

#include "planner/planner.h"

namespace mplan::torchtitan {

// torchtitan's own definition of a preset model: its module under torchtitan/models, the shipped
// configuration function to start from, the flavor and the Hugging Face assets folder.
struct ModelRef {
  const char* mplan_name;
  const char* module;     // llama3, deepseek_v3, qwen3, gpt_oss
  const char* config_fn;  // a function of torchtitan/models/<module>/config_registry.py
  const char* flavor;
  const char* hf_assets;
  RopeScalingType rope;  // the RoPE scaling of torchtitan's definition (a difference is noted)
};
// nullptr when torchtitan ships no definition of the model.
const ModelRef* model_ref(const std::string& mplan_name);

// What torchtitan `v` cannot run of the plan, each with what to change (empty: it can).
std::vector<std::string> layout_problems(const Plan& plan, TorchtitanVersion v);

// The modules of each pipeline stage in model order (chunk-major, stage i runs on rank i % pp):
// tok_embeddings with the first, the decoder layers "layers.N", the final norm and `head` with the last.
std::vector<std::vector<std::string>> stage_modules(const Plan& plan, const std::string& head);

// data_parallel_replicate_degree / data_parallel_shard_degree of the plan's ZeRO level.
int replicate_degree(const ParallelConfig& p);
int shard_degree(const ParallelConfig& p);

}  // namespace mplan::torchtitan
