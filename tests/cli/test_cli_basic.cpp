// The mplan binary: help, version, presets, inspect, and exit code 2 with one clear message on bad input.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "run_cli.h"

TEST(Cli, HelpAndVersion) {
  auto h = run_mplan("--help");
  EXPECT_EQ(h.code, 0);
  EXPECT_NE(h.out.find("inspect"), std::string::npos);
  auto v = run_mplan("version");
  EXPECT_EQ(v.code, 0);
  EXPECT_NE(v.out.find("mplan 0."), std::string::npos);
}

TEST(Cli, ListsPresets) {
  auto m = run_mplan("models --format json");
  ASSERT_EQ(m.code, 0) << m.err;
  auto j = nlohmann::json::parse(m.out);
  EXPECT_GE(j.size(), 17u);
  auto c = run_mplan("clusters");
  EXPECT_EQ(c.code, 0);
  EXPECT_NE(c.out.find("gb200-nvl72"), std::string::npos);
}

TEST(Cli, InspectHuggingFaceConfigMatchesPublishedCount) {
  auto r = run_mplan("inspect --format json --model " + std::string(MPLAN_SOURCE_DIR) + "/tests/data/hf/llama3-8b.json");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_NEAR(j["params_total"].get<double>() / 8.03e9, 1.0, 0.005);
  EXPECT_GT(j["flops_per_token_full_attention"].get<double>(), j["flops_per_token_causal"].get<double>());
}

TEST(Cli, InspectTable) {
  auto r = run_mplan("inspect --model mixtral-8x7b");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("routed experts"), std::string::npos);
  EXPECT_NE(r.out.find("46.70 B total"), std::string::npos) << r.out;
}

TEST(Cli, BadInputExitsTwoWithMessage) {
  auto unknown = run_mplan("inspect --model llama3-8");
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.err.find("did you mean 'llama3-8b'"), std::string::npos) << unknown.err;
  auto bad_flag = run_mplan("inspect --model llama3-8b --format xml");
  EXPECT_EQ(bad_flag.code, 2);
  EXPECT_NE(bad_flag.err.find("xml"), std::string::npos);
  auto no_cmd = run_mplan("frobnicate");
  EXPECT_EQ(no_cmd.code, 2);
  std::string path = ::testing::TempDir() + "/neg.json";
  std::ofstream(path) << R"({"num_layers": -1, "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10,
    "activation": "gelu", "norm": "layernorm", "tied_embeddings": true, "position_embedding": "rope"})";
  auto neg = run_mplan("inspect --model " + path);
  EXPECT_EQ(neg.code, 2);
  EXPECT_NE(neg.err.find("model.num_layers: expected an integer in 0..100000, got '-1'"), std::string::npos) << neg.err;
}
