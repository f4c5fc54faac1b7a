// Layout rules: each is named in its message; valid layouts pass.
#include <gtest/gtest.h>

#include "core/parallel_config.h"
#include "core/presets.h"

using namespace mplan;

namespace {
struct Fixture {
  ModelSpec m = *model_preset("llama3-70b");
  ClusterSpec c = *cluster_preset("dgx-h100");
  TrainingSpec t{1024, 8192, Precision::bf16};
  ParallelConfig p;
  Fixture() {
    p.world_size = 512;
    p.tp = 8;
    p.sp = true;
    p.pp = 4;
  }
  std::string errors() const {
    std::string all;
    for (auto& e : validate_layout(m, c, t, p)) all += e + "\n";
    return all;
  }
};
}  // namespace

TEST(ParallelConfig, ValidLayout) {
  Fixture f;
  EXPECT_EQ(f.errors(), "");
  EXPECT_EQ(f.p.dp(), 16);
  EXPECT_EQ(f.p.num_microbatches(f.t.global_batch_size), 64);
}

TEST(ParallelConfig, TpMustDivideQueryGroups) {
  Fixture f;
  f.p.tp = 16;
  f.p.world_size = 1024;
  EXPECT_NE(f.errors().find("tp=16 does not divide num_query_groups=8"), std::string::npos) << f.errors();
}

TEST(ParallelConfig, BatchMustTile) {
  Fixture f;
  f.t.global_batch_size = 1000;
  f.p.micro_batch_size = 4;
  EXPECT_NE(f.errors().find("gbs=1000 is not a multiple of mbs*dp=4*16=64"), std::string::npos) << f.errors();
}

TEST(ParallelConfig, LayersMustSplit) {
  Fixture f;
  f.p.pp = 3;
  f.p.world_size = 384;
  EXPECT_NE(f.errors().find("layers do not split"), std::string::npos) << f.errors();
  Fixture g;
  g.p.pp = 4;
  g.p.vpp = 3;
  g.p.schedule = Schedule::interleaved;
  EXPECT_NE(g.errors().find("not divisible by vpp=3"), std::string::npos) << g.errors();
}

TEST(ParallelConfig, UnevenFirstLastStages) {
  Fixture f;
  f.p.pp = 4;
  f.p.num_layers_in_first_pipeline_stage = 17;
  f.p.num_layers_in_last_pipeline_stage = 17;
  f.p.world_size = 512;
  // 80 - 34 = 46 over 2 middle stages = 23 each
  EXPECT_EQ(f.errors(), "");
  auto n = layers_per_stage_chunk(f.m, f.p);
  EXPECT_EQ(n[0][0], 17);
  EXPECT_EQ(n[1][0], 23);
  EXPECT_EQ(n[3][0], 17);
}

TEST(ParallelConfig, SequenceAndContextRules) {
  Fixture f;
  f.p.cp = 3;
  f.p.world_size = 96 * 4;
  EXPECT_NE(f.errors().find("not divisible by 2*cp=6"), std::string::npos) << f.errors();
  Fixture g;
  g.p.tp = 1;
  g.p.sp = true;
  g.p.world_size = 64;
  EXPECT_NE(g.errors().find("sequence parallel needs tp > 1"), std::string::npos) << g.errors();
}

TEST(ParallelConfig, ExpertRules) {
  Fixture f;
  f.p.ep = 2;
  EXPECT_NE(f.errors().find("needs a mixture-of-experts model"), std::string::npos);
  Fixture g;
  g.m = *model_preset("mixtral-8x7b");
  g.p.ep = 3;
  g.p.world_size = 96;
  g.p.pp = 4;
  g.t.global_batch_size = 96;
  EXPECT_NE(g.errors().find("ep=3 does not divide num_experts=8"), std::string::npos) << g.errors();
}

TEST(ParallelConfig, ClusterTooSmallAndPrecision) {
  Fixture f;
  f.c.num_nodes = 2;
  EXPECT_NE(f.errors().find("cluster too small"), std::string::npos);
  Fixture g;
  g.c = *cluster_preset("dgx-a100-80g");
  g.t.precision = Precision::fp8;
  EXPECT_NE(g.errors().find("precision fp8 is not supported"), std::string::npos);
}

TEST(ParallelConfig, JsonRoundTripAndDpCheck) {
  Fixture f;
  auto j = parallel_to_json(f.p);
  auto r = parallel_from_json(j);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(parallel_to_json(*r), j);
  j["dp"] = 3;
  auto bad = parallel_from_json(j);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("parallel.dp: 3 disagrees"), std::string::npos);
}

TEST(ParallelConfig, MoeRuntimeOptionRules) {
  Fixture dense;
  dense.p.moe_force_balance = true;
  EXPECT_NE(dense.errors().find("moe_force_balance and moe_a2a_overlap need a mixture-of-experts model"), std::string::npos);
  Fixture f;
  f.m = *model_preset("mixtral-8x7b");
  f.p.tp = 2;
  f.p.pp = 4;
  f.p.world_size = 64;
  f.t.global_batch_size = 64;
  f.p.ep = 8;
  f.p.moe_dispatcher = MoeDispatcher::deepep;
  EXPECT_EQ(f.errors(), "");
  f.p.moe_a2a_overlap = true;  // pp 4 without interleaving: Megatron has no combined 1F1B for it
  EXPECT_NE(f.errors().find("moe_a2a_overlap needs pp=1 or interleaving"), std::string::npos) << f.errors();
  f.p.vpp = 2;
  f.p.schedule = Schedule::interleaved;
  EXPECT_EQ(f.errors(), "");
  f.p.ep = 1;
  EXPECT_NE(f.errors().find("moe_a2a_overlap needs expert parallelism"), std::string::npos);
}

TEST(ParallelConfig, MoeRuntimeOptionsJson) {
  ParallelConfig p;
  p.world_size = 8;
  p.ep = 8;
  p.moe_dispatcher = MoeDispatcher::hybridep;
  p.moe_force_balance = true;
  auto r = parallel_from_json(parallel_to_json(p));
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->moe_dispatcher, MoeDispatcher::hybridep);
  EXPECT_TRUE(r->moe_force_balance);
  EXPECT_FALSE(r->moe_a2a_overlap);
  auto j = parallel_to_json(p);
  j["moe_dispatcher"] = "nccl";
  auto bad = parallel_from_json(j);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("moe_dispatcher"), std::string::npos) << bad.error().message();
}

TEST(ParallelConfig, AttentionBackendJson) {
  ParallelConfig p;
  p.world_size = 8;
  p.attention_backend = AttentionBackend::triton;
  auto r = parallel_from_json(parallel_to_json(p));
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->attention_backend, AttentionBackend::triton);
  auto j = parallel_to_json(p);
  j["attention_backend"] = "xformers";
  auto bad = parallel_from_json(j);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("attention_backend"), std::string::npos) << bad.error().message();
}
