// Layout rules: each is named in its message; valid layouts pass.
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

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

// The default fixture after `change` breaks a rule whose message contains `said`.
void expect_broken(const std::function<void(Fixture&)>& change, const std::string& said) {
  Fixture f;
  change(f);
  EXPECT_NE(f.errors().find(said), std::string::npos) << said << ": " << f.errors();
}

// `p` goes through plan JSON unchanged, and the same JSON with `key` set to `value` is refused naming `said`.
ParallelConfig expect_json_round_trip(const ParallelConfig& p, const std::string& key, const nlohmann::json& value,
                                      const std::string& said) {
  auto j = parallel_to_json(p);
  auto r = parallel_from_json(j);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
  if (r.ok()) {
    EXPECT_EQ(parallel_to_json(*r), j);
  }
  j[key] = value;
  auto bad = parallel_from_json(j);
  EXPECT_FALSE(bad.ok()) << key;
  if (!bad.ok()) {
    EXPECT_NE(bad.error().message().find(said), std::string::npos) << bad.error().message();
  }
  return r.ok() ? *r : ParallelConfig{};
}
}  // namespace

TEST(ParallelConfig, ValidLayout) {
  Fixture f;
  EXPECT_EQ(f.errors(), "");
  EXPECT_EQ(f.p.dp(), 16);
  EXPECT_EQ(f.p.num_microbatches(f.t.global_batch_size), 64);
}

TEST(ParallelConfig, TpMustDivideQueryGroups) {
  expect_broken([](Fixture& f) { f.p.tp = 16, f.p.world_size = 1024; }, "tp=16 does not divide num_query_groups=8");
}

TEST(ParallelConfig, BatchMustTile) {
  expect_broken([](Fixture& f) { f.t.global_batch_size = 1000, f.p.micro_batch_size = 4; },
                "gbs=1000 is not a multiple of mbs*dp=4*16=64");
}

TEST(ParallelConfig, LayersMustSplit) {
  expect_broken([](Fixture& f) { f.p.pp = 3, f.p.world_size = 384; }, "layers do not split");
  expect_broken([](Fixture& f) { f.p.pp = 4, f.p.vpp = 3, f.p.schedule = Schedule::interleaved; }, "not divisible by vpp=3");
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
  expect_broken([](Fixture& f) { f.p.cp = 3, f.p.world_size = 96 * 4; }, "not divisible by 2*cp=6");
  expect_broken([](Fixture& f) { f.p.tp = 1, f.p.sp = true, f.p.world_size = 64; }, "sequence parallel needs tp > 1");
}

TEST(ParallelConfig, ExpertRules) {
  expect_broken([](Fixture& f) { f.p.ep = 2; }, "needs a mixture-of-experts model");
  expect_broken(
      [](Fixture& f) {
        f.m = *model_preset("mixtral-8x7b");
        f.p.ep = 3, f.p.world_size = 96, f.p.pp = 4, f.t.global_batch_size = 96;
      },
      "ep=3 does not divide num_experts=8");
}

TEST(ParallelConfig, ClusterTooSmallAndPrecision) {
  expect_broken([](Fixture& f) { f.c.num_nodes = 2; }, "cluster too small");
  expect_broken(
      [](Fixture& f) {
        f.c = *cluster_preset("dgx-a100-80g");
        f.t.precision = Precision::fp8;
      },
      "precision fp8 is not supported");
}

TEST(ParallelConfig, JsonRoundTripAndDpCheck) { expect_json_round_trip(Fixture().p, "dp", 3, "parallel.dp: 3 disagrees"); }

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
  ParallelConfig r = expect_json_round_trip(p, "moe_dispatcher", "nccl", "moe_dispatcher");
  EXPECT_EQ(r.moe_dispatcher, MoeDispatcher::hybridep);
  EXPECT_TRUE(r.moe_force_balance);
  EXPECT_FALSE(r.moe_a2a_overlap);
}

TEST(ParallelConfig, AttentionBackendJson) {
  ParallelConfig p;
  p.world_size = 8;
  p.attention_backend = AttentionBackend::triton;
  EXPECT_EQ(expect_json_round_trip(p, "attention_backend", "xformers", "attention_backend").attention_backend,
            AttentionBackend::triton);
}
