// Issue 16: what `mplan search` ranks for the preset models on their natural clusters is a layout
// Megatron-LM builds, exported with its environment and every model argument, and read back
// (`mplan import --megatron-args`) into the same plan. The rule set below is written from Megatron-LM's
// own assertions (megatron/training/arguments.py validate_args, megatron/core/transformer/
// transformer_config.py TransformerConfig.__post_init__), independently of validate_layout.
#include <gtest/gtest.h>

#include "core/presets.h"
#include "planner/planner.h"
#include "planner_test_util.h"
#include "simulator/cost_params.h"

namespace mplan {
namespace {

// Megatron's assertions on a layout, as messages ("" when none breaks).
std::vector<std::string> megatron_violations(const Plan& plan) {
  const ModelSpec& m = plan.model;
  const ParallelConfig& p = plan.parallel;
  const TrainingSpec& t = plan.training;
  std::vector<std::string> v;
  auto need = [&](bool ok, const char* what) {
    if (!ok) v.push_back(what);
  };
  need(p.world_size % (p.tp * p.pp * p.cp) == 0, "world size divisible by tp*pp*cp");
  need(m.num_attention_heads % p.tp == 0, "num_attention_heads % tp == 0");
  need(m.mla || m.num_query_groups % p.tp == 0, "num_query_groups % tp == 0");
  need(t.global_batch_size % (int64_t(p.micro_batch_size) * p.dp()) == 0, "global batch divisible by mbs*dp");
  need(!(p.sp && p.tp > 1) || t.seq_length % p.tp == 0, "sequence parallel: seq % tp == 0");
  need(p.cp == 1 || t.seq_length % (2 * p.cp) == 0, "context parallel: seq % (2*cp) == 0");
  need(p.vpp == 1 || p.pp > 1, "virtual pipeline needs pp > 1");
  if (m.moe) {
    need(m.moe->num_experts % p.ep == 0, "num_moe_experts % ep == 0");
    need(p.tp == 1 || p.sp, "MoE with tp > 1 needs --sequence-parallel");
    need(!m.add_bias_linear || p.etp == 1, "Bias in Moe is only supported when ETP==1");
    if (p.moe_a2a_overlap) {
      need(p.ep > 1, "overlap_moe_expert_parallel_comm needs ep > 1");
      need(p.recompute != Recompute::full, "disable full recomputation with overlap_moe_expert_parallel_comm");
      need(!p.effective_recompute_modules().has(RecomputeModule::moe), "disable moe in recompute_modules");
      need(m.mtp_num_layers <= 1, "MTP supports at most one layer with overlap_moe_expert_parallel_comm");
      need(p.pp == 1 || p.vpp > 1, "EP A2A overlap with pp > 1 needs virtual pipeline");
    }
    if (m.moe->router_enable_expert_bias) need(m.moe->router_score_function == RouterScore::sigmoid, "expert bias needs sigmoid");
    if (m.moe->router_num_groups > 0) need(m.moe->num_experts % m.moe->router_num_groups == 0, "groups divide experts");
  } else {
    need(p.ep == 1 && p.etp == 1, "expert parallelism needs experts");
  }
  return v;
}

struct NaturalJob {
  const char* model;
  const char* cluster;
  int gpus;
  int64_t gbs, seq;
};

const std::vector<NaturalJob>& natural_jobs() {
  static const std::vector<NaturalJob> jobs = {
      {"llama2-7b", "dgx-a100-80g", 64, 512, 4096},     {"llama2-13b", "dgx-a100-80g", 128, 512, 4096},
      {"llama2-70b", "dgx-h100", 512, 1024, 4096},      {"llama3-8b", "dgx-h100", 64, 512, 8192},
      {"llama3-70b", "dgx-h100", 512, 1024, 8192},      {"llama3.1-405b", "dgx-h100", 2048, 2048, 8192},
      {"gpt3-175b", "dgx-a100-80g", 1024, 1536, 2048},  {"mixtral-8x7b", "dgx-h100", 128, 512, 4096},
      {"mixtral-8x22b", "dgx-h100", 256, 1024, 4096},   {"qwen3-30b-a3b", "dgx-h100", 128, 512, 4096},
      {"qwen3-235b-a22b", "dgx-h100", 512, 1024, 4096}, {"deepseek-v3", "dgx-h100", 1024, 4096, 4096},
      {"kimi-k2", "dgx-h100", 1024, 4096, 4096},        {"gpt-oss-120b", "dgx-h100", 128, 512, 4096},
      {"nemotron4-15b", "dgx-h100", 128, 768, 4096},    {"nemotron4-340b", "dgx-h100", 1536, 2304, 4096},
      {"grok-1", "dgx-h100", 512, 1024, 8192},
  };
  return jobs;
}

// The model fields Megatron's arguments carry (the name and sources are not arguments; a RoPE model's
// max_position_embeddings is written as max(seq, it) and is not read back).
nlohmann::json comparable(const ModelSpec& m) {
  nlohmann::json j = model_to_json(m);
  j.erase("name");
  if (m.position_embedding == PositionEmbedding::rope) j.erase("max_position_embeddings");
  return j;
}

TEST(MegatronRules, SearchOfEveryPresetRanksOnlyWhatMegatronBuildsAndRoundTrips) {
  SearchOptions o;
  o.top_k = 5;
  int plans = 0;
  for (const NaturalJob& nj : natural_jobs()) {
    auto model = model_preset(nj.model);
    ASSERT_TRUE(model.ok()) << nj.model;
    Plan job = test::job(*model, test::cluster(nj.cluster), nj.gpus, nj.gbs, nj.seq);
    auto r = search(job, shipped_calibration(), o);
    ASSERT_TRUE(r.ok()) << nj.model << ": " << r.error().message();
    ASSERT_FALSE(r->top.empty()) << nj.model;
    for (const auto& c : r->top) {
      const Plan& plan = c.plan;
      std::string text = export_megatron_args(plan);
      auto v = megatron_violations(plan);
      EXPECT_TRUE(v.empty()) << nj.model << ": " << (v.empty() ? "" : v.front()) << "\n" << text;
      // the environment Megatron's validate_args asserts (Hopper: tp/cp > 1 needs CUDA_DEVICE_MAX_CONNECTIONS=1)
      bool fsdp = plan.parallel.zero >= 2;
      if ((plan.parallel.tp > 1 || plan.parallel.cp > 1) && !fsdp && !plan.parallel.moe_a2a_overlap)
        EXPECT_NE(text.find("export CUDA_DEVICE_MAX_CONNECTIONS=1"), std::string::npos) << nj.model << "\n" << text;
      if (fsdp) EXPECT_NE(text.find("unset CUDA_DEVICE_MAX_CONNECTIONS"), std::string::npos) << text;
      auto back = import_megatron_plan(text, plan.cluster);
      ASSERT_TRUE(back.ok()) << nj.model << ": " << back.error().message() << "\n" << text;
      EXPECT_EQ(comparable(back->model), comparable(plan.model)) << nj.model << "\n" << text;
      EXPECT_EQ(back->model.name, plan.model.name);
      EXPECT_EQ(back->parallel.world_size, plan.parallel.world_size);
      EXPECT_EQ(parallel_to_json(back->parallel)["tp"], parallel_to_json(plan.parallel)["tp"]);
      EXPECT_EQ(back->training.global_batch_size, plan.training.global_batch_size);
      ++plans;
    }
  }
  EXPECT_GE(plans, 17);
}

TEST(MegatronRules, ModelArgumentsAreWritten) {
  Plan oss = test::job(*model_preset("gpt-oss-120b"), test::cluster("dgx-h100"), 64, 128, 4096);
  oss.parallel.tp = 2, oss.parallel.sp = true, oss.parallel.ep = 8;
  std::string t = export_megatron_args(oss);
  for (const char* want : {"--window-size 127,0", "--window-attn-skip-freq 2", "--softmax-type learnable",
                           "--rotary-base 150000", "--position-embedding-type yarn", "--rotary-scaling-factor 32",
                           "--norm-epsilon 1e-05", "export CUDA_DEVICE_MAX_CONNECTIONS=1"})
    EXPECT_NE(t.find(want), std::string::npos) << want << "\n" << t;
  // etp > 1 with MoE biases: Megatron's "Bias in Moe is only supported when ETP==1"
  oss.parallel.etp = 2;
  auto bad = validate_layout(oss.model, oss.cluster, oss.training, oss.parallel);
  ASSERT_FALSE(bad.empty());
  EXPECT_NE(bad.front().find("etp=2"), std::string::npos) << bad.front();
  Plan ds = test::job(*model_preset("deepseek-v3"), test::cluster("dgx-b200"), 256, 1024, 4096);
  ds.parallel.tp = 2, ds.parallel.sp = true, ds.parallel.ep = 64;
  std::string d = export_megatron_args(ds);
  for (const char* want : {"--moe-router-score-function sigmoid", "--moe-router-enable-expert-bias", "--moe-router-num-groups 8",
                           "--moe-router-group-topk 4", "--moe-router-topk-scaling-factor 2.5", "--rope-type yarn",
                           "--qk-layernorm", "--norm-epsilon 1e-06", "unset CUDA_DEVICE_MAX_CONNECTIONS"})
    EXPECT_NE(d.find(want), std::string::npos) << want << "\n" << d;
  Plan l = test::job(*model_preset("llama3.1-405b"), test::cluster("dgx-h100"), 64, 128, 8192);
  std::string lt = export_megatron_args(l);
  for (const char* want : {"--rotary-base 500000", "--use-rope-scaling", "--rope-scaling-factor 8"})
    EXPECT_NE(lt.find(want), std::string::npos) << want << "\n" << lt;
  EXPECT_EQ(lt.find("CUDA_DEVICE_MAX_CONNECTIONS"), std::string::npos) << "tp = cp = 1 needs no setting";
}

}  // namespace
}  // namespace mplan
