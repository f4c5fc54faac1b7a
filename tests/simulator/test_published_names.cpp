// Published tables spell one model several ways ("Mixtral 8x7B", "Mixtral-8x7B", "MIXTRAL_8x7B"):
// a row maps to the model preset whatever its separators, Grok-1 rows to the grok-1 preset, Mistral /
// Qwen rows without a preset to the Llama architecture from their columns, and hybrid Mamba rows are
// refused naming what cannot be expressed (simulator/published.cpp).
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>

#include "core/counting.h"
#include "simulator/published.h"

namespace mplan {
namespace {

Expected<PublishedRun> run_of(const std::string& model, const std::string& dims = ",,,,,", const std::string& gpu = "H100",
                              const std::string& framework = "Megatron-Core", int tp = 8) {
  std::ostringstream csv;
  csv << "row_id,source_id,framework,model,layers,hidden,ffn_hidden,heads,kv_heads,vocab,seq_len,gpu_type,num_gpus,gbs,mbs,"
         "tp,sp,pp,cp,ep,moe_num_experts,moe_topk,precision,tokens_per_sec_per_gpu\n";
  csv << "R-1,src," << framework << "," << model << "," << dims << ",4096," << gpu << ",64,256,1," << tp
      << ",,4,1,1,,,bf16,1000\n";
  auto rows = read_csv_text(csv.str(), "synthetic");
  if (!rows || rows->size() != 1) return Error("csv not read");
  return published_run_from_row(rows->front(), RowSettings::as_stated);
}

TEST(PublishedNames, SeparatorsDoNotHideAPreset) {
  for (const char* name : {"Mixtral-8x7B", "Mixtral 8x7B", "MIXTRAL_8x7B", "mixtral 8x7b (MaxText)"}) {
    auto r = run_of(name);
    ASSERT_TRUE(bool(r)) << name << ": " << r.error().message();
    ASSERT_TRUE(r->plan.model.moe.has_value()) << name;
    EXPECT_EQ(r->plan.model.moe->num_experts, 8) << name;
    EXPECT_EQ(r->plan.model.num_layers, 32) << name;
  }
  // 8x22B is another preset, not 8x7B's
  auto big = run_of("Mixtral 8x22B");
  ASSERT_TRUE(bool(big)) << big.error().message();
  EXPECT_EQ(big->plan.model.num_layers, 56);
}

// NVIDIA's Paxml recipes train Paxml's own GPT configs (GPT5BBase, GPT175BBase): a "(Paxml)" row without
// dimensions takes them from its preset; a GPT row naming no framework preset is still refused.
TEST(PublishedNames, PaxmlGptRowsUsePaxmlsConfigs) {
  auto small = run_of("GPT 5B (Paxml)", ",,,,,", "H100", "Paxml (JAX)", 1);
  ASSERT_TRUE(bool(small)) << small.error().message();
  EXPECT_EQ(small->plan.model.num_layers, 24);
  EXPECT_EQ(small->plan.model.ffn_hidden_size, 16384);
  auto big = run_of("GPT 175B (Paxml)", ",,,,,", "H100", "Paxml (JAX)", 1);
  ASSERT_TRUE(bool(big)) << big.error().message();
  EXPECT_EQ(big->plan.model.num_layers, 96);
  EXPECT_EQ(big->plan.model.vocab_size, 50257);
  EXPECT_FALSE(bool(run_of("GPT 175B")));
}

TEST(PublishedNames, GrokRowsUseTheGrokPreset) {
  auto r = run_of("Grok-1 314B");
  ASSERT_TRUE(bool(r)) << r.error().message();
  ASSERT_TRUE(r->plan.model.moe.has_value());
  EXPECT_EQ(r->plan.model.num_layers, 64);
  EXPECT_EQ(r->plan.model.hidden_size, 6144);
}

TEST(PublishedNames, MistralAndQwenWithoutAPresetAreBuiltAsLlamaFromTheirColumns) {
  for (const char* name : {"Mistral 7B", "Qwen2.5 7B"}) {
    auto r = run_of(name, "32,4096,14336,32,8,32000");
    ASSERT_TRUE(bool(r)) << name << ": " << r.error().message();
    EXPECT_EQ(r->plan.model.activation, Activation::swiglu) << name;
    EXPECT_EQ(r->plan.model.norm, NormKind::rmsnorm) << name;
    EXPECT_EQ(r->plan.model.num_query_groups, 8) << name;
  }
  // a family nobody documented is still refused by name, not guessed
  auto unknown = run_of("Frobnicator 7B", "32,4096,14336,32,8,32000");
  ASSERT_FALSE(bool(unknown));
  EXPECT_NE(unknown.error().message().find("Frobnicator 7B"), std::string::npos);
}

TEST(PublishedNames, HybridMambaRowsUseTheirPresetsAndOthersAreRefusedSayingSo) {
  const std::map<std::string, int> layers = {{"Nemotron_3_Nano", 52},        {"Nemotron 3 Super", 88}, {"Nemotron_3_Ultra", 108},
                                             {"Nemotron_3_5_Lightning", 52}, {"Nemotron-H 56B", 118},  {"NemotronH_56B", 118}};
  for (const auto& [name, n] : layers) {
    auto r = run_of(name, n == 118 ? "118,8192,,64,8,131072" : ",,,,,", "H100", "Megatron-Core", 2);
    ASSERT_TRUE(bool(r)) << name << ": " << r.error().message();
    EXPECT_TRUE(r->plan.model.is_hybrid()) << name;
    EXPECT_EQ(r->plan.model.num_layers, n) << name;
  }
  // a hybrid without a preset: its layer pattern is in no column
  auto r = run_of("Nemotron-H 4B", "52,3072,,32,8,131072");
  ASSERT_FALSE(bool(r));
  EXPECT_NE(r.error().message().find("hybrid Mamba"), std::string::npos) << r.error().message();
}

// Llama 4 Scout and Maverick come from their presets (parameters as the model cards: 109B / 400B total,
// 17B active); another Llama 4 is refused naming it.
TEST(PublishedNames, Llama4RowsUseTheirPresets) {
  auto scout = run_of("LLAMA4-Scout-LLM", "48,5120,16384,40,8,202048", "H100", "Megatron-Core", 1);
  ASSERT_TRUE(bool(scout)) << scout.error().message();
  ASSERT_TRUE(scout->plan.model.moe.has_value());
  EXPECT_EQ(scout->plan.model.moe->num_experts, 16);
  EXPECT_NEAR(count_params(scout->plan.model).total, 109e9, 1.5e9);
  EXPECT_NEAR(count_params(scout->plan.model).active, 17e9, 0.3e9);
  auto mav = run_of("Llama 4 Maverick", ",,,,,", "H100", "Megatron-Core", 1);
  ASSERT_TRUE(bool(mav)) << mav.error().message();
  EXPECT_EQ(mav->plan.model.num_moe_layers(), 24);
  EXPECT_NEAR(count_params(mav->plan.model).total, 400e9, 2e9);
  auto other = run_of("Llama 4 Behemoth", "64,8192,,64,8,202048");
  ASSERT_FALSE(bool(other));
  EXPECT_NE(other.error().message().find("Llama 4"), std::string::npos) << other.error().message();
}

// Megatron-Bridge's performance summary force-balances every MoE benchmark: a release default of that
// line (data/frameworks/megatron.json) for MoE rows that do not state their routing; NeMo 2.0's scripts
// and dense rows are left alone.
TEST(PublishedNames, MegatronBridgeMoeRowsRouteWithForcedBalanceAsStated) {
  auto mb = run_of("Mixtral 8x7B", ",,,,,", "H100", "Megatron-Bridge / Megatron-Core (NeMo container)");
  ASSERT_TRUE(bool(mb)) << mb.error().message();
  EXPECT_TRUE(mb->plan.parallel.moe_force_balance);
  EXPECT_NE(mb->notes.find("forced MoE routing (release default)"), std::string::npos) << mb->notes;
  auto nemo = run_of("Mixtral 8x7B", ",,,,,", "H100", "NeMo 2.0 (Megatron-Core)");
  ASSERT_TRUE(bool(nemo)) << nemo.error().message();
  EXPECT_FALSE(nemo->plan.parallel.moe_force_balance);
  // a row that states learned (dropless) routing keeps it
  std::ostringstream csv;
  csv << "row_id,source_id,framework,model,seq_len,gpu_type,num_gpus,gbs,mbs,tp,pp,ep,precision,notes,tokens_per_sec_per_gpu\n"
      << "R-2,src,Megatron-Bridge / Megatron-Core (NeMo container),Mixtral 8x7B,4096,H100,64,256,1,8,1,4,bf16,routing: "
         "dropless,1000\n";
  auto rows = read_csv_text(csv.str(), "synthetic");
  ASSERT_TRUE(rows && rows->size() == 1);
  auto learned = published_run_from_row(rows->front(), RowSettings::as_stated);
  ASSERT_TRUE(bool(learned)) << learned.error().message();
  EXPECT_FALSE(learned->plan.parallel.moe_force_balance) << learned->notes;
  auto dense = run_of("LLAMA3-8B", ",,,,,", "H100", "Megatron-Bridge / Megatron-Core (NeMo container)");
  ASSERT_TRUE(bool(dense)) << dense.error().message();
  EXPECT_FALSE(dense->plan.parallel.moe_force_balance);
}

TEST(PublishedNames, GpuTypesAreComparedLikeModelNames) {
  const std::pair<const char*, const char*> same[] = {
      {"H100 SXM5", "dgx-h100"},      {"H100-80GB", "dgx-h100"},     {"h100", "dgx-h100"},
      {"H200 SXM", "dgx-h200"},       {"A100 80GB", "dgx-a100-80g"}, {"A100-SXM4-40GB", "dgx-a100-40g"},
      {"GB200 NVL72", "gb200-nvl72"}, {"B200", "dgx-b200"},          {"H100-96GB-HBM2e", "grand-teton-h100"}};
  for (const auto& [gpu, cluster] : same) {
    auto r = run_of("LLAMA3-8B", ",,,,,", gpu);
    ASSERT_TRUE(bool(r)) << gpu << ": " << r.error().message();
    EXPECT_EQ(r->plan.cluster.name, cluster) << gpu;
  }
  // a card of another form factor or an A100 without its memory size names no preset: refused by name
  for (const char* gpu : {"H100 PCIe", "H100 NVL", "A100", "MI300X"}) {
    auto r = run_of("LLAMA3-8B", ",,,,,", gpu);
    ASSERT_FALSE(bool(r)) << gpu;
    EXPECT_NE(r.error().message().find(gpu), std::string::npos) << r.error().message();
  }
}

}  // namespace
}  // namespace mplan
