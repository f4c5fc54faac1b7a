// ModelSpec JSON: defaults, round trip and one clear message per bad field.
#include <gtest/gtest.h>

#include "core/model_spec.h"

using namespace mplan;
using nlohmann::json;

namespace {
json minimal() {
  return {{"name", "tiny"},        {"num_layers", 4},          {"hidden_size", 64},    {"num_attention_heads", 4},
          {"vocab_size", 256},     {"activation", "swiglu"},   {"norm", "rmsnorm"},    {"tied_embeddings", true},
          {"position_embedding", "rope"}, {"ffn_hidden_size", 176}};
}
std::string errors_of(const json& j) {
  auto r = model_from_json(j);
  return r.ok() ? std::string() : r.error().message();
}
}  // namespace

TEST(ModelSpec, MegatronDefaults) {
  auto r = model_from_json(minimal());
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->num_query_groups, 4);
  EXPECT_EQ(r->kv_channels, 16);
  EXPECT_EQ(r->ffn_hidden_size, 176);
}

// Defaults that would change results are not guessed (issue 17): ffn_hidden_size is required, a
// kv_channels that hidden/heads cannot give exactly must be stated, null is not "missing".
TEST(ModelSpec, NoSilentDefaults) {
  json j = minimal();
  j.erase("ffn_hidden_size");
  EXPECT_NE(errors_of(j).find("model.ffn_hidden_size: missing"), std::string::npos) << errors_of(j);
  j = minimal();
  j["hidden_size"] = 66;  // 66 / 4 heads = 16.5
  EXPECT_NE(errors_of(j).find("model.kv_channels: missing, and hidden_size=66 is not divisible"), std::string::npos)
      << errors_of(j);
  j["kv_channels"] = 16;
  EXPECT_EQ(errors_of(j), "");
  j = minimal();
  j["ffn_hidden_size"] = nullptr;
  EXPECT_NE(errors_of(j).find("model.ffn_hidden_size: null is not a value"), std::string::npos) << errors_of(j);
}

TEST(ModelSpec, ImpossibleSizesAreRefused) {
  json j = minimal();
  j["num_layers"] = 1e9;
  std::string e = errors_of(j);
  EXPECT_NE(e.find("model.num_layers: 1000000000 exceeds 100000"), std::string::npos) << e;
  j = minimal();
  j["vocab_size"] = 1ll << 40;
  e = errors_of(j);
  EXPECT_NE(e.find("model.vocab_size: must be <="), std::string::npos) << e;
}

TEST(ModelSpec, RoundTrip) {
  json j = minimal();
  j["moe"] = {{"num_experts", 8}, {"top_k", 2}, {"moe_ffn_hidden_size", 32}, {"first_k_dense_layers", 1}};
  auto r = model_from_json(j);
  ASSERT_TRUE(r.ok()) << r.error().message();
  auto r2 = model_from_json(model_to_json(*r));
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(model_to_json(*r), model_to_json(*r2));
  EXPECT_FALSE(r->is_moe_layer(0));
  EXPECT_TRUE(r->is_moe_layer(1));
  EXPECT_EQ(r->num_moe_layers(), 3);
}

TEST(ModelSpec, MissingAndNegativeFieldsAreNamed) {
  json j = minimal();
  j.erase("num_layers");
  j["hidden_size"] = -5;
  std::string e = errors_of(j);
  EXPECT_NE(e.find("model.num_layers: missing"), std::string::npos) << e;
  EXPECT_NE(e.find("model.hidden_size: must be >= 1, got -5"), std::string::npos) << e;
}

TEST(ModelSpec, WrongTypesAndUnknownFields) {
  json j = minimal();
  j["num_layers"] = "four";
  j["activaton"] = "gelu";
  j["norm"] = "batchnorm";
  std::string e = errors_of(j);
  EXPECT_NE(e.find("model.num_layers: expected an integer"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'activation'"), std::string::npos) << e;
  EXPECT_NE(e.find("'batchnorm' is not one of layernorm|rmsnorm"), std::string::npos) << e;
}

TEST(ModelSpec, GroupsMustDivideHeads) {
  json j = minimal();
  j["num_query_groups"] = 3;
  EXPECT_NE(errors_of(j).find("does not divide num_attention_heads=4"), std::string::npos);
}

TEST(ModelSpec, MoeTopKRange) {
  json j = minimal();
  j["moe"] = {{"num_experts", 4}, {"top_k", 5}};
  EXPECT_NE(errors_of(j).find("model.moe.top_k"), std::string::npos);
}
