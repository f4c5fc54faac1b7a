// Plan file: write/read round trip, schema check, layout validation on read.
#include <gtest/gtest.h>

#include "core/json_fields.h"
#include "core/plan.h"
#include "core/presets.h"
#include "tests/core/plan_fixture.h"

using namespace mplan;

namespace {
Plan sample() { return preset_plan("llama3-8b", 64, 256, 8192, 2, 2); }
}  // namespace

TEST(Plan, RoundTripThroughFile) {
  Plan p = sample();
  std::string path = ::testing::TempDir() + "/plan.json";
  ASSERT_TRUE(write_plan_file(path, p).ok());
  auto r = read_plan_file(path);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(plan_to_json(*r), plan_to_json(p));
}

TEST(Plan, SchemaIsChecked) {
  auto j = plan_to_json(sample());
  j["schema"] = "mplan.plan/9";
  auto r = plan_from_json(j);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("plan.schema: 'mplan.plan/9' is not supported"), std::string::npos);
}

TEST(Plan, InvalidLayoutIsRejectedWithRule) {
  auto j = plan_to_json(sample());
  j["parallel"]["tp"] = 3;
  j["parallel"]["world_size"] = 48;
  j["parallel"].erase("dp");
  auto r = plan_from_json(j);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("tp=3 does not divide num_attention_heads=32"), std::string::npos) << r.error().message();
}

TEST(Plan, UnnamedContextParallelExchangeIsTheFrameworks) {
  Plan p = sample();
  p.parallel.tp = 1;
  p.parallel.sp = false;
  p.parallel.cp = 2;
  auto j = plan_to_json(p);
  j["parallel"].erase("cp_comm_type");
  j["parallel"].erase("dp");
  for (auto [fw, want] :
       {std::pair{"megatron", CpCommType::p2p}, {"torchtitan", CpCommType::allgather}, {"maxtext", CpCommType::allgather}}) {
    j["framework"] = fw;
    j["parallel"]["zero"] = std::string(fw) == "megatron" ? 1 : 3;  // torchtitan and MaxText shard fully
    auto r = plan_from_json(j);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(r->parallel.cp_comm_type, want) << fw;
  }
  j["parallel"]["cp_comm_type"] = "a2a";  // a named one is kept
  auto r = plan_from_json(j);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->parallel.cp_comm_type, CpCommType::a2a);
}

TEST(Plan, PackedDocumentLengthRoundTripsAndIsBounded) {
  Plan p = sample();
  p.training.packed_doc_tokens = 230;
  auto j = plan_to_json(p);
  EXPECT_EQ(j["training"]["packed_doc_tokens"], 230);
  auto r = plan_from_json(j);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->training.packed_doc_tokens, 230);
  EXPECT_FALSE(plan_to_json(sample())["training"].contains("packed_doc_tokens"));  // unpacked: not written
  j["training"]["packed_doc_tokens"] = 9000;                                       // longer than seq_length 8192
  r = plan_from_json(j);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("packed_doc_tokens"), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find("at most seq_length (8192)"), std::string::npos) << r.error().message();
}

TEST(Plan, TorchCompileIsATorchtitanFieldThatRoundTrips) {
  Plan p = sample();
  p.training.framework = Framework::torchtitan;
  p.parallel.zero = 3;  // FSDP (torchtitan has zero 0 and 3)
  p.training.torch_compile = true;
  auto j = plan_to_json(p);
  EXPECT_EQ(j["training"]["torch_compile"], true);
  auto r = plan_from_json(j);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_TRUE(r->training.torch_compile);
  EXPECT_FALSE(plan_to_json(sample())["training"].contains("torch_compile"));  // eager: not written
  j["framework"] = "megatron";  // Megatron fuses through Transformer Engine: the field does not apply
  r = plan_from_json(j);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("training.torch_compile"), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find("only to framework torchtitan"), std::string::npos) << r.error().message();
  j["framework"] = "torchtitan";
  j["training"]["torch_compile"] = "yes";  // not a boolean
  EXPECT_FALSE(plan_from_json(j).ok());
}

TEST(Plan, AtomicWriteLeavesNoTempFile) {
  std::string path = ::testing::TempDir() + "/atomic.json";
  ASSERT_EQ(write_text_file_atomic(path, "{}"), "");
  std::vector<std::string> problems;
  EXPECT_EQ(*read_text_file(path, problems), "{}");
  EXPECT_NE(write_text_file_atomic("/nonexistent-dir/x.json", "{}"), "");
}
