// Published-run facts (data/run_facts): the embedded files parse, every fact cites a pinned source,
// rows pick up the facts of the runs they match, stated columns win, facts that would break a layout
// rule are skipped, and every recorded fact name is applied or declared not modelled; Megatron's
// pipeline-layout strings parse; packed sequences shrink attention.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/megatron_rules.h"
#include "core/presets.h"
#include "simulator/published.h"
#include "simulator/run_facts.h"
#include "simulator/simulator.h"
#include "tests/simulator/sim_fixtures.h"

using namespace mplan;

namespace {
std::vector<CsvRow> read(const std::string& rel) {
  auto rows = read_csv_file(std::string(MPLAN_SOURCE_DIR) + "/" + rel);
  EXPECT_TRUE(rows) << rel;
  return rows ? *rows : std::vector<CsvRow>{};
}
}  // namespace

TEST(RunFacts, EveryFactCitesAPinnedSource) {
  std::set<std::string> sources, runs;
  for (const CsvRow& s : read("data/run_facts/sources.csv")) {
    EXPECT_FALSE(s.get("repository").empty());
    EXPECT_GE(s.get("commit").size(), 10u) << s.get("source");
    sources.insert(s.get("source"));
  }
  for (const CsvRow& r : read("data/run_facts/runs.csv")) {
    EXPECT_FALSE(r.get("match").empty()) << r.get("run");
    EXPECT_TRUE(runs.insert(r.get("run")).second) << "duplicate run id " << r.get("run");
  }
  auto facts = read("data/run_facts/facts.csv");
  EXPECT_GT(facts.size(), 1000u);
  for (const CsvRow& f : facts) {
    EXPECT_TRUE(runs.count(f.get("run"))) << f.get("run");
    const std::string& c = f.get("citation");
    std::string src = c.substr(0, c.find(':'));
    EXPECT_TRUE(sources.count(src) || src == "paper") << f.get("run") << " " << f.get("fact") << ": " << c;
    EXPECT_FALSE(f.get("value").empty()) << f.get("run") << " " << f.get("fact");
  }
}

TEST(RunFacts, RowsGetTheFactsOfTheRunsTheyMatch) {
  CsvRow r;
  r.f = {{"source_id", "mbridge_perf_summary"},
         {"framework_version", "NeMo 26.06.01"},
         {"workload", "pretrain"},
         {"model", "DeepSeekV3"},
         {"gpu_type", "GB300"},
         {"num_gpus", "256"},
         {"precision", "mxfp8"}};
  auto facts = run_facts_for(r);
  bool layout = false, source_wide = false;
  for (const auto& f : facts) {
    layout = layout || (f.fact == "pipeline_model_parallel_layout" && f.value == "Et*4|(t*4|)*14tmL");
    source_wide = source_wide || f.fact == "tflops_flop_convention";
    EXPECT_FALSE(f.citation.empty());
  }
  EXPECT_TRUE(layout);
  EXPECT_TRUE(source_wide);
  // the source-wide fact comes first, so a run-specific one overrides it
  EXPECT_EQ(facts.front().fact, "tflops_flop_convention");
  r.f["gpu_type"] = "H200";  // no such run
  for (const auto& f : run_facts_for(r)) EXPECT_NE(f.fact, "pipeline_model_parallel_layout");
}

TEST(RunFacts, StatedColumnsWinAndRuleBreakingFactsAreSkipped) {
  CsvRow row;
  row.f = {{"recompute", "full"}};
  Plan plan;
  plan.model = *model_preset("llama3-8b");
  plan.cluster = *cluster_preset("dgx-h100");
  plan.training = {64, 4096, Precision::bf16};
  plan.parallel.world_size = 8;
  plan.parallel.recompute = Recompute::full;
  std::string notes;
  apply_run_facts({{"recompute_granularity", "selective", "", "x@1:y"},
                   {"fp8_param_gather", "True", "", "x@1:y"},
                   {"moe_expert_capacity_factor", "1.0", "", "x@1:y"}},
                  row, plan, notes);
  EXPECT_EQ(plan.parallel.recompute, Recompute::full);  // the row says full
  EXPECT_FALSE(plan.parallel.fp8_param_gather);         // bf16 training: not an fp8 recipe
  EXPECT_EQ(plan.parallel.moe_capacity_factor, 0);      // dense model: skipped
  row.f["recompute"] = "";
  plan.parallel.zero = 0;
  apply_run_facts({{"use_distributed_optimizer", "True", "", "x@1:y"}, {"overlap_moe_expert_parallel_comm", "True", "", "x@1:y"}},
                  row, plan, notes);
  EXPECT_EQ(plan.parallel.zero, 1);
  EXPECT_FALSE(plan.parallel.moe_a2a_overlap);
}

// Facts a recipe helper sets together are recorded together: Megatron-Bridge 26.08's MXFP8 Qwen3 recipes
// call _enable_hybridep_full_iteration_mxfp8, which turns on full-iteration CUDA graphs and the EP
// all-to-all overlap; and DeepSeek-V3 (MLA, head_dim_qk 192) on GB200 under NeMo r2.3.0's Transformer
// Engine runs unfused attention while the H100 run of the same release keeps cuDNN's fused kernel.
TEST(RunFacts, RecipeHelperFactsAndTheBlackwellMlaAttentionKernel) {
  CsvRow r;
  r.f = {{"source_id", "mbridge_perf_summary"},
         {"framework_version", "NeMo 26.08"},
         {"workload", "pretrain"},
         {"model", "Qwen3_30B_a3B"},
         {"gpu_type", "GB300"},
         {"num_gpus", "8"},
         {"precision", "mxfp8"}};
  std::map<std::string, std::string> got;
  for (const auto& f : run_facts_for(r)) got[f.fact] = f.value;
  EXPECT_EQ(got["cuda_graph_impl"], "full_iteration");
  EXPECT_EQ(got["overlap_moe_expert_parallel_comm"], "True");
  // the recipe sets NVTE_CUTEDSL_FUSED_GROUPED_MLP=1: one fused grouped kernel for the experts
  EXPECT_EQ(got["cutedsl_fused_grouped_mlp"], "True");
  Plan moe;
  moe.model = *model_preset("qwen3-30b-a3b");
  moe.cluster = *cluster_preset("dgx-h100");
  moe.training = {64, 4096, Precision::bf16};
  moe.parallel.world_size = 8;
  moe.parallel.ep = 8;
  std::string notes;
  apply_run_facts({{"cutedsl_fused_grouped_mlp", "True", "", "x@1:y"}}, r, moe, notes);
  EXPECT_TRUE(moe.parallel.moe_fused_grouped_mlp);
  EXPECT_NE(notes.find("fused grouped expert MLP (recipe)"), std::string::npos) << notes;
  CsvRow d;
  d.f = {{"source_id", "dgxc_benchmarking"},
         {"url", "https://github.com/NVIDIA/dgxc-benchmarking/blob/8a983f7baecdf284862ffff21eeb0dc8d571fe3f/x"},
         {"model", "DeepSeek-V3 671B"},
         {"gpu_type", "GB200"},
         {"precision", "bf16"}};
  got.clear();
  for (const auto& f : run_facts_for(d)) got[f.fact] = f.value;
  EXPECT_EQ(got["attention_backend"], "unfused");
  d.f["gpu_type"] = "H100";
  got.clear();
  for (const auto& f : run_facts_for(d)) got[f.fact] = f.value;
  EXPECT_FALSE(got.count("attention_backend"));
  EXPECT_EQ(got["recompute_modules"], "mla_up_proj");
}

TEST(RunFacts, MegatronPipelineLayoutStrings) {
  auto l = parse_megatron_pipeline_layout("Et*4|(t*4|)*14tmL", 4, 4);
  ASSERT_EQ(l.size(), 4u);
  int total = 0;
  for (const auto& st : l)
    for (int v : st) total += v;
  EXPECT_EQ(total, 61);
  EXPECT_EQ(l[0][0], 4);
  EXPECT_EQ(l[3][3], 1);  // the last virtual stage: one layer, MTP and loss
  EXPECT_TRUE(parse_megatron_pipeline_layout("Et*4|(t*4|)*14tmL", 4, 2).empty());  // 16 stages, not 8
  EXPECT_TRUE(parse_megatron_pipeline_layout("Et|(tt", 1, 2).empty());             // unbalanced
  EXPECT_TRUE(parse_megatron_pipeline_layout("Ex|tL", 2, 1).empty());              // unknown symbol
}

TEST(RunFacts, FirstAndLastPipelineStageLayerCounts) {
  CsvRow row;
  Plan plan;
  plan.model = *model_preset("llama3-8b");  // 32 layers
  plan.cluster = *cluster_preset("dgx-h100");
  plan.training = {64, 4096, Precision::bf16};
  plan.parallel.world_size = 8;
  plan.parallel.pp = 4;
  std::string notes;
  apply_run_facts(
      {{"num_layers_in_first_pipeline_stage", "7", "", "x@1:y"}, {"num_layers_in_last_pipeline_stage", "9", "", "x@1:y"}}, row,
      plan, notes);
  EXPECT_EQ(plan.parallel.num_layers_in_first_pipeline_stage, 7);
  EXPECT_EQ(plan.parallel.num_layers_in_last_pipeline_stage, 9);
  EXPECT_NE(notes.find("first/last pipeline stage 7/9 layers (recipe)"), std::string::npos) << notes;
  // 32 - 5 - 6 = 21 layers do not split over the 2 middle stages: the fact is skipped
  Plan other = plan;
  other.parallel.num_layers_in_first_pipeline_stage = other.parallel.num_layers_in_last_pipeline_stage = 0;
  notes.clear();
  apply_run_facts(
      {{"num_layers_in_first_pipeline_stage", "5", "", "x@1:y"}, {"num_layers_in_last_pipeline_stage", "6", "", "x@1:y"}}, row,
      other, notes);
  EXPECT_EQ(other.parallel.num_layers_in_first_pipeline_stage, 0);
  EXPECT_NE(notes.find("skipped"), std::string::npos) << notes;
}

namespace {
// Llama 3 8B in bf16 on one 8-GPU DGX H100 node (the layout the tests below start from)
Plan llama3_8b_on_8_h100(int64_t gbs, int64_t seq) { return preset_plan("llama3-8b", 8, gbs, seq, 1, 1); }
}  // namespace

TEST(RunFacts, PackedSequencesShrinkAttentionOnly) {
  // a fine-tuning job packing 230-token documents into 4096: attention runs within each document
  Plan plan = llama3_8b_on_8_h100(32, 4096);
  plan.training.method = TrainingMethod::sft;
  auto time_of = [](const StepReport& r, const std::string& op) {
    for (const auto& o : r.ops)
      if (o.name == op) return o.time_s;
    return 0.0;
  };
  auto plain = simulate(plan, CostParams{});
  CsvRow row;
  std::string notes;
  apply_run_facts({{"packed_doc_tokens", "230", "", "x@1:y"}}, row, plan, notes);
  EXPECT_EQ(plan.training.packed_doc_tokens, 230);
  auto packed = simulate(plan, CostParams{});
  ASSERT_TRUE(plain.ok() && packed.ok());
  EXPECT_GT(packed->tokens_per_s_per_gpu, plain->tokens_per_s_per_gpu);
  // attention's work falls to (230 + 1) / (4096 + 1) of the causal matrix; its fixed per-kernel costs stay
  EXPECT_LT(time_of(*packed, "attn_core"), 0.2 * time_of(*plain, "attn_core"));
  EXPECT_DOUBLE_EQ(time_of(*packed, "fc1_gemm"), time_of(*plain, "fc1_gemm"));
}

TEST(RunFacts, TorchCompileAppliesToTorchtitanAndFusesItsPointwiseOps) {
  // torchtitan's Llama 3 8B, FSDP over 8 GPUs: eager by default, compiled where the recipe says so
  Plan plan = llama3_8b_on_8_h100(16, 8192);
  plan.training.framework = Framework::torchtitan;
  plan.parallel.zero = 3;
  plan.parallel.micro_batch_size = 2;
  auto eager = simulate(plan, CostParams{});
  CsvRow row;
  std::string notes;
  apply_run_facts({{"torch_compile", "True", "", "x@1:y"}}, row, plan, notes);
  EXPECT_TRUE(plan.training.torch_compile);
  EXPECT_NE(notes.find("torch.compile (recipe)"), std::string::npos) << notes;
  auto compiled = simulate(plan, CostParams{});
  ASSERT_TRUE(eager.ok() && compiled.ok());
  // only the memory-bound pointwise work changes: faster, by less than the pointwise share of the step
  EXPECT_GT(compiled->tokens_per_s_per_gpu, 1.05 * eager->tokens_per_s_per_gpu);
  EXPECT_LT(compiled->tokens_per_s_per_gpu, 1.5 * eager->tokens_per_s_per_gpu);
  // a Megatron job keeps its fused kernels: the fact does not apply there
  plan.training.framework = Framework::megatron;
  plan.training.torch_compile = false;
  notes.clear();
  apply_run_facts({{"torch_compile", "True", "", "x@1:y"}}, row, plan, notes);
  EXPECT_FALSE(plan.training.torch_compile);
}

TEST(RunFacts, EveryFactNameIsAppliedOrDeclaredNotModelled) {
  // what apply_run_facts looks up, given each run's facts on plans that open every branch (Megatron,
  // MoE, pipeline, tensor and context parallel, fp8 and nvfp4: the fact names only some plans read)
  std::map<std::string, std::vector<RunFact>> by_run;
  std::set<std::string> recorded;
  for (const CsvRow& f : read("data/run_facts/facts.csv")) {
    by_run[f.get("run")].push_back({f.get("fact"), f.get("value"), f.get("note"), f.get("citation")});
    recorded.insert(f.get("fact"));
  }
  Plan base = preset_plan("mixtral-8x7b", 64, 256, 4096, 2, 2, 1, 8);
  base.parallel.cp = 2;
  std::set<std::string> read_names;
  for (Precision prec : {Precision::fp8, Precision::nvfp4}) {
    for (const auto& [run, facts] : by_run) {
      Plan plan = base;
      plan.training.precision = prec;
      std::string notes;
      apply_run_facts(facts, CsvRow{}, plan, notes, &read_names);
    }
  }
  // published_run_from_row reads its own few (the literal names stand in published.cpp)
  std::ifstream src(std::string(MPLAN_SOURCE_DIR) + "/simulator/published.cpp");
  std::stringstream text;
  text << src.rdbuf();
  for (std::string_view n : kPublishedRowFacts)
    EXPECT_NE(text.str().find("\"" + std::string(n) + "\""), std::string::npos) << n << " is not read by published.cpp";
  std::map<std::string, std::string> not_modelled;
  for (const CsvRow& r : read("data/run_facts/not_modelled.csv")) {
    EXPECT_FALSE(r.get("reason").empty()) << r.get("fact");
    EXPECT_TRUE(not_modelled.emplace(r.get("fact"), r.get("reason")).second) << "declared twice: " << r.get("fact");
    EXPECT_TRUE(recorded.count(r.get("fact"))) << r.get("fact") << " is declared but no run records it";
    EXPECT_FALSE(read_names.count(r.get("fact"))) << r.get("fact") << " is declared not modelled but apply_run_facts reads it";
  }
  for (const std::string& name : recorded) {
    const bool published = std::find(kPublishedRowFacts.begin(), kPublishedRowFacts.end(), name) != kPublishedRowFacts.end();
    EXPECT_TRUE(read_names.count(name) || published || not_modelled.count(name))
        << "run fact '" << name << "' (data/run_facts/facts.csv) is neither applied (simulator/run_facts_apply.cpp) "
        << "nor declared in data/run_facts/not_modelled.csv with the reason";
  }
}

TEST(RunFacts, CudaGraphImplIsReadFromItsFieldsRunFactName) {
  // the plan field's run-fact name is its descriptor row's (core/parallel_fields.h); full_iteration is
  // one of Megatron-Core's values since its CUDA-graph refactor; a value that is not one of Megatron's
  // leaves the plan as it was
  Plan plan = llama3_8b_on_8_h100(32, 4096);
  CsvRow row;
  std::string notes;
  apply_run_facts({{"cuda_graph_impl", "transformer_engine", "", "x@1:y"}}, row, plan, notes);
  EXPECT_EQ(plan.parallel.cuda_graph_impl, CudaGraphImpl::transformer_engine);
  EXPECT_NE(notes.find("CUDA graphs transformer_engine (recipe)"), std::string::npos) << notes;
  Plan other = llama3_8b_on_8_h100(32, 4096);
  apply_run_facts({{"cuda_graph_impl", "full_iteration", "", "x@1:y"}}, row, other, notes);
  EXPECT_EQ(other.parallel.cuda_graph_impl, CudaGraphImpl::full_iteration);
  Plan third = llama3_8b_on_8_h100(32, 4096);
  apply_run_facts({{"cuda_graph_impl", "per_layer", "", "x@1:y"}}, row, third, notes);
  EXPECT_EQ(third.parallel.cuda_graph_impl, CudaGraphImpl::none);
}
