// Model, cluster and plan files refuse what used to be accepted silently (issue 17): duplicate keys,
// null, physically impossible numbers; each refusal names the field.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "core/plan.h"
#include "core/presets.h"

using namespace mplan;

namespace {
std::string write(const std::string& name, const std::string& text) {
  std::string p = ::testing::TempDir() + "/strict_" + std::to_string(::getpid()) + "_" + name;
  std::ofstream(p) << text;
  return p;
}
std::string cluster_json(const std::string& peak) {
  return R"({"name": "x", "gpu": {"name": "G", "arch": "hopper", "peak_tflops": {"bf16": )" + peak +
         R"(}, "memory_gib": 80, "hbm_gbps": 3350, "sm_count": 132}, "gpus_per_node": 8, "scale_up_bw_gbps": 450,
         "scale_up_latency_us": 2, "scale_out_bw_gbps": 50, "scale_out_latency_us": 5, "num_nodes": 4})";
}
}  // namespace

TEST(StrictInputs, DuplicateKeyInModelFileIsRefused) {
  std::string p = write("dup.json", R"({"name": "t", "num_layers": 4, "num_layers": 40, "hidden_size": 64,
    "ffn_hidden_size": 256, "num_attention_heads": 4, "vocab_size": 256, "activation": "gelu", "norm": "layernorm",
    "tied_embeddings": true, "position_embedding": "rope"})");
  auto r = resolve_model(p);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("key 'num_layers' is given twice"), std::string::npos) << r.error().message();
}

TEST(StrictInputs, ClusterPeakIsBounded) {
  ASSERT_TRUE(resolve_cluster(write("ok.json", cluster_json("989.4"))).ok());
  auto r = resolve_cluster(write("peak.json", cluster_json("1e308")));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("cluster.gpu.peak_tflops.bf16: must be > 0 and <= 1e+06, got 1e+308"), std::string::npos)
      << r.error().message();
  EXPECT_EQ(r.error().problems.size(), 1u) << r.error().message();
}

TEST(StrictInputs, PlanNullAndHugeValuesNamed) {
  Plan p;
  p.model = *model_preset("llama3-8b");
  p.cluster = *cluster_preset("dgx-h100");
  p.training = {64, 2048, Precision::bf16};
  p.parallel.world_size = 8;
  auto j = plan_to_json(p);
  j["training"]["seq_length"] = nullptr;
  j["parallel"]["tp"] = 1ll << 40;
  auto r = plan_from_json(j);
  ASSERT_FALSE(r.ok());
  std::string e = r.error().message();
  EXPECT_NE(e.find("training.seq_length: null is not a value"), std::string::npos) << e;
  EXPECT_NE(e.find("parallel.tp: must be <= 1048576"), std::string::npos) << e;
}
