// The framework profiles of data/frameworks/*.json ("capabilities"): every framework has one, the values
// reproduce what the frameworks' sources say, and a malformed file is refused naming the capability.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <utility>

#include "core/framework_profile.h"

using namespace mplan;

TEST(FrameworkProfile, EveryFrameworkHasACitedProfile) {
  for (const std::string& name : framework_choices()) {
    const FrameworkProfile& p = framework_profile(*parse_framework(name));
    EXPECT_FALSE(p.release.empty()) << name;
  }
}

TEST(FrameworkProfile, ValuesFollowTheFrameworksSources) {
  const FrameworkProfile& mg = framework_profile(Framework::megatron);
  const FrameworkProfile& tt = framework_profile(Framework::torchtitan);
  const FrameworkProfile& mx = framework_profile(Framework::maxtext);
  const FrameworkProfile& lf = framework_profile(Framework::llm_foundry);
  EXPECT_EQ(mg.model_states, ModelStateLayout::mixed_precision_master);
  EXPECT_TRUE(mg.megatron_core_rules && mg.supports_fp8_param_gather);
  EXPECT_EQ(mg.remat_style, RematStyle::modules);
  EXPECT_FALSE(mg.kv_repeated || mg.ring_attention_eager || mg.eager_by_default || mg.supports_torch_compile);
  EXPECT_EQ(tt.model_states, ModelStateLayout::sharded_fp32);
  EXPECT_TRUE(tt.kv_repeated && tt.ring_attention_eager && tt.eager_by_default && tt.supports_torch_compile);
  EXPECT_EQ(tt.remat_style, RematStyle::op_sac);
  EXPECT_EQ(tt.unfused_loss, UnfusedLoss::torch_eager_fp32);
  EXPECT_EQ(tt.default_microbatches_per_stage, 1);
  EXPECT_EQ(tt.default_interleaved_chunks, 2);
  EXPECT_EQ(tt.layer_checkpoint_every, 2);
  EXPECT_TRUE(tt.fsdp_pp_keeps_stage_gathered && tt.fsdp_root_unsharded);
  EXPECT_EQ(mx.remat_style, RematStyle::jax_policy);
  // what a run that configures no recompute gets: Megatron none, torchtitan every second block, MaxText full
  EXPECT_EQ(mg.default_recompute, DefaultRecompute::none);
  EXPECT_EQ(tt.default_recompute, DefaultRecompute::selective_layer);
  EXPECT_EQ(mx.default_recompute, DefaultRecompute::full);
  EXPECT_EQ(lf.default_recompute, DefaultRecompute::none);
  EXPECT_EQ(mx.unfused_loss, UnfusedLoss::torch_eager_fp32);
  EXPECT_FALSE(lf.megatron_core_rules || mx.megatron_core_rules || tt.megatron_core_rules);
  EXPECT_EQ(frameworks_with(&FrameworkProfile::supports_torch_compile), "torchtitan");
  EXPECT_EQ(frameworks_with(&FrameworkProfile::megatron_core_rules), "megatron");
}

namespace {
std::string file_with(const std::string& caps) {
  return R"({"schema": "mplan.framework_defaults/1", "framework": "megatron", "release": "r", "capabilities": {)" + caps + "}}";
}
std::string refusal(const std::string& text) {
  try {
    parse_framework_profile(text, "x.json");
  } catch (const std::logic_error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(FrameworkProfile, MalformedFilesAreRefusedNamingTheCapability) {
  EXPECT_NE(refusal("{").find("not an mplan.framework_defaults/1 file"), std::string::npos);
  EXPECT_NE(refusal(file_with("")).find("capabilities.model_states missing"), std::string::npos);
  EXPECT_NE(refusal(file_with(R"("model_states": {"value": "bf16", "note": "n", "citation": "c"})"))
                .find("capabilities.model_states.value must be one of mixed_precision_master | sharded_fp32"),
            std::string::npos);
  EXPECT_NE(refusal(file_with(R"("model_states": {"value": "sharded_fp32", "note": "n", "citation": ""})"))
                .find("capabilities.model_states needs a non-empty citation"),
            std::string::npos);
}

TEST(FrameworkProfile, EveryShippedKeyIsKnownAndAnUnknownOneIsRefused) {
  // the shipped megatron profile with one extra key: refused, so a capability in the data is read by code
  const std::pair<const char*, const char*> values[] = {{"model_states", "\"sharded_fp32\""},
                                                        {"megatron_core_rules", "false"},
                                                        {"remat_style", "\"modules\""},
                                                        {"unfused_loss", "\"torch_eager_fp32\""},
                                                        {"kv_repeated", "false"},
                                                        {"ring_attention_eager", "false"},
                                                        {"eager_by_default", "false"},
                                                        {"supports_torch_compile", "false"},
                                                        {"supports_fp8_param_gather", "false"},
                                                        {"fsdp_pp_keeps_stage_gathered", "false"},
                                                        {"fsdp_root_unsharded", "false"},
                                                        {"default_microbatches_per_stage", "0"},
                                                        {"default_interleaved_chunks", "0"},
                                                        {"layer_checkpoint_every", "0"},
                                                        {"default_recompute", "\"full\""}};
  std::string caps;
  for (const auto& [k, v] : values)
    caps += std::string(caps.empty() ? "" : ", ") + "\"" + k + "\": {\"value\": " + v + ", \"note\": \"n\", \"citation\": \"c\"}";
  EXPECT_EQ(refusal(file_with(caps)), "");
  EXPECT_EQ(parse_framework_profile(file_with(caps), "x.json").model_states, ModelStateLayout::sharded_fp32);
  EXPECT_EQ(parse_framework_profile(file_with(caps), "x.json").default_recompute, DefaultRecompute::full);
  EXPECT_NE(refusal(file_with(caps + R"(, "ring_attention": {"value": true, "note": "n", "citation": "c"})"))
                .find("capabilities.ring_attention is not a known capability"),
            std::string::npos);
}
