// Every preset validates, names match the contract, and every cluster number has a source.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/presets.h"

using namespace mplan;

TEST(Presets, RequiredModelNamesExistAndValidate) {
  for (const char* n : {"gpt3-175b", "llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b", "llama3-70b", "llama3.1-405b",
                        "mixtral-8x7b", "mixtral-8x22b", "qwen3-30b-a3b", "qwen3-235b-a22b", "deepseek-v3", "kimi-k2",
                        "gpt-oss-120b", "grok-1", "nemotron4-15b", "nemotron4-340b"}) {
    auto m = model_preset(n);
    EXPECT_TRUE(m.ok()) << n << ": " << (m.ok() ? "" : m.error().message());
  }
  for (const auto& n : model_preset_names()) EXPECT_TRUE(model_preset(n).ok()) << n;
}

TEST(Presets, RequiredClusterNamesExistWithSources) {
  for (const char* n :
       {"dgx-a100-40g", "dgx-a100-80g", "dgx-h100", "dgx-h200", "dgx-b200", "dgx-b300", "gb200-nvl72", "gb300-nvl72"}) {
    auto c = cluster_preset(n);
    ASSERT_TRUE(c.ok()) << n << ": " << (c.ok() ? "" : c.error().message());
    EXPECT_TRUE(unsourced_cluster_fields(*c).empty()) << n << " lacks sources for " << unsourced_cluster_fields(*c).front();
    EXPECT_TRUE(c->gpu.peak(Precision::bf16).has_value()) << n;
  }
}

TEST(Presets, UnknownNameSuggestsClosest) {
  auto m = resolve_model("llama3-8");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message().find("did you mean 'llama3-8b'"), std::string::npos) << m.error().message();
  auto c = resolve_cluster("dgx-h10");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message().find("did you mean 'dgx-h100'"), std::string::npos) << c.error().message();
}

TEST(Presets, MalformedFileIsAClearError) {
  std::string path = ::testing::TempDir() + "/bad_model.json";
  FILE* f = std::fopen(path.c_str(), "w");
  std::fputs("{\"num_layers\": 4,", f);
  std::fclose(f);
  auto m = resolve_model(path);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message().find("malformed JSON"), std::string::npos) << m.error().message();
}
