// Executor building blocks on one process: layout-independent initialisation and shard gather/load,
// learning-rate schedule, data assembly per rank (context-parallel chunks, DP split), byte tokenizer,
// checkpoint files (checksum, truncation, atomic commit and pruning), MoE capacity dropping, and the
// plan checks made before launching.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/hash.h"
#include "executor/backend/cpu/cpu_backend.h"
#include "executor/checkpoint/checkpoint.h"
#include "executor/data/data_source.h"
#include "executor/model/params.h"
#include "executor/optim/lr_schedule.h"
#include "executor/train/launch.h"
#include "executor/train/trainer.h"
#include "mpi_env.h"
#include "test_plans.h"

using namespace mplan;
using namespace mplan::exec;
namespace fs = std::filesystem;

namespace {
std::string tmp(const std::string& name) {
  std::string d = ::testing::TempDir() + "/mplan_units_" + std::to_string(getpid()) + "_" + name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}
}  // namespace

// The initialisation before the shared km::init_normal (the name hashed per element), written out
// here as the reference (its integer hash is the same splitmix64; the floating-point part is what
// must not drift): the shared function (which the GPU init kernel also runs) must give these
// values bit for bit, so golden states and equivalence tests keep their starting weights.
namespace {
float ref_init(uint64_t seed, const std::string& name, int64_t gi, float stddev) {
  uint64_t h = km::splitmix64(seed ^ km::splitmix64(fnv1a(name) ^ km::splitmix64(uint64_t(gi / 2))));
  double u1 = (double(h >> 11) + 0.5) * (1.0 / 9007199254740992.0);
  double u2 = double(km::splitmix64(h) >> 11) * (1.0 / 9007199254740992.0);
  double r = std::sqrt(-2.0 * std::log(u1));
  double a = 6.283185307179586 * u2;
  return float(stddev * r * ((gi % 2) ? std::sin(a) : std::cos(a)));
}
}  // namespace

TEST(Params, SharedInitFunctionReproducesThePreviousValuesBitForBit) {
  int64_t checked = 0;
  for (const std::string name : {"wte", "layers.0.attn.wq", "layers.31.mlp.fc2.weight"})
    for (uint64_t seed : {uint64_t(1234), uint64_t(7), uint64_t(0xdeadbeefcafeULL)})
      for (float sd : {0.02f, 0.00353f}) {
        const uint64_t key = fnv1a(name);
        for (int64_t gi = 0; gi < 20000; gi += 1 + gi / 64) {
          const uint32_t want = km::float_to_bits(ref_init(seed, name, gi, sd));
          ASSERT_EQ(km::float_to_bits(km::init_normal(seed, key, gi, sd)), want) << name << " seed " << seed << " element " << gi;
          // as compiled into the executor library (its own optimisation flags)
          ASSERT_EQ(km::float_to_bits(ParamStore::init_value(seed, name, gi, InitKind::normal, sd)), want) << gi;
          ++checked;
        }
        for (int64_t gi : {int64_t(1) << 31, (int64_t(1) << 33) + 1, int64_t(128256) * 4096 - 1})
          ASSERT_EQ(km::float_to_bits(km::init_normal(seed, key, gi, sd)), km::float_to_bits(ref_init(seed, name, gi, sd)));
      }
  EXPECT_GT(checked, 5000);
  EXPECT_EQ(ParamStore::init_value(5, "x", 3, InitKind::normal, 0.02f), ref_init(5, "x", 3, 0.02f));
}

TEST(Params, InitialisationDependsOnlyOnNameAndGlobalIndex) {
  CpuBackend be;
  ParamStore whole, rows0, rows1, cols1;
  whole.add({.name = "w", .rows = 6, .cols = 4, .map = ShardMap::whole(6, 4)});
  rows0.add({.name = "w", .rows = 3, .cols = 4, .map = ShardMap::rows(6, 4, 0, 3)});
  // one padding row (like a padded vocabulary shard)
  rows1.add({.name = "w", .rows = 4, .cols = 4, .map = ShardMap::rows(6, 4, 3, 6)});
  cols1.add({.name = "w", .rows = 6, .cols = 2, .map = ShardMap::cols(6, 4, 2)});
  for (ParamStore* p : {&whole, &rows0, &rows1, &cols1}) p->allocate(be, 1, 1, 99);
  const float* w = whole.w(0);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(rows0.w(0)[i * 4 + j], w[i * 4 + j]);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(rows1.w(0)[i * 4 + j], w[(i + 3) * 4 + j]);
  for (int j = 0; j < 4; ++j) EXPECT_EQ(rows1.w(0)[12 + j], 0.0f);  // padding row
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 2; ++j) EXPECT_EQ(cols1.w(0)[i * 2 + j], w[i * 4 + 2 + j]);
  // the shards reassemble the whole tensor, and a full tensor loads back into shards
  auto full = ParamStore::assemble({rows0.serialize_shards(), rows1.serialize_shards()});
  ASSERT_EQ(full["w"].size(), 24u);
  for (int i = 0; i < 24; ++i) EXPECT_EQ(full["w"][size_t(i)], w[i]);
  double mean = 0, var = 0;
  ParamStore big;
  big.add({.name = "stats", .rows = 200, .cols = 200, .map = ShardMap::whole(200, 200)});
  big.allocate(be, 1, 1, 5);
  for (int i = 0; i < 40000; ++i) mean += big.w(0)[i] / 40000.0;
  for (int i = 0; i < 40000; ++i) var += (big.w(0)[i] - mean) * (big.w(0)[i] - mean) / 40000.0;
  EXPECT_NEAR(mean, 0.0, 3e-4);
  EXPECT_NEAR(std::sqrt(var), 0.02, 3e-4);
  std::map<std::string, std::vector<float>> f2 = {{"w", std::vector<float>(24, 1.5f)}};
  EXPECT_TRUE(cols1.load_full(f2).empty());
  EXPECT_EQ(cols1.w(0)[5], 1.5f);
}

TEST(LrSchedule, WarmupThenCosineToMin) {
  LrSchedule s{1e-3f, 1e-4f, 10, 110};
  EXPECT_FLOAT_EQ(s.at(1), 1e-4f);
  EXPECT_FLOAT_EQ(s.at(10), 1e-3f);
  EXPECT_NEAR(s.at(60), 5.5e-4f, 1e-9);
  EXPECT_FLOAT_EQ(s.at(110), 1e-4f);
  EXPECT_FLOAT_EQ(s.at(500), 1e-4f);
  EXPECT_GT(s.at(30), s.at(31));
}

TEST(Data, RanksSeeTheirContextChunksAndDataParallelShare) {
  auto plan =
      plan_from_json(test::plan_json(test::tiny_model("llama"), {{"world_size", 4}, {"cp", 2}, {"micro_batch_size", 2}}, 8, 32));
  ASSERT_TRUE(plan) << plan.error().message();
  auto src = make_synthetic_data(3, 255);
  std::vector<int32_t> seq(33);
  for (int cp = 0; cp < 2; ++cp)
    for (int dp = 0; dp < 2; ++dp) {
      RankCoord c;
      c.cp = cp;
      c.dp = dp;
      LayoutDims d = make_layout_dims(plan.value(), c);
      EXPECT_EQ(d.Tl, 16);
      Micro m = make_micro(*src, d, 5, 1);
      // cp rank r holds chunks r and 3 - r of 4 chunks of 8 tokens
      std::vector<int32_t> want;
      for (int ch : {cp, 3 - cp})
        for (int t = 0; t < 8; ++t) want.push_back(ch * 8 + t);
      EXPECT_EQ(m.seq_pos, want);
      // sequence of (b = 1) is global index step * gbs + dp * (gbs / dp) + mb * mbs + b
      src->sequence(5 * 8 + dp * 4 + 1 * 2 + 1, 32, seq.data());
      for (int t = 0; t < 16; ++t) {
        EXPECT_EQ(m.tokens[size_t(16 + t)], seq[size_t(want[size_t(t)])]);
        EXPECT_EQ(m.targets[size_t(16 + t)], seq[size_t(want[size_t(t)] + 1)]);
      }
    }
  EXPECT_EQ(ByteTokenizer::decode(ByteTokenizer::encode("h\xc3\xa9llo")), "h\xc3\xa9llo");
  EXPECT_EQ(ByteTokenizer::encode("A")[0], 65);
}

TEST(Checkpoint, ChecksumTruncationAndAtomicCommit) {
  std::string root = tmp("ck");
  std::vector<float> a = {1, 2, 3}, b = {4, 5};
  for (int step : {2, 4, 6}) {
    fs::create_directories(checkpoint_step_dir(root, step, true));
    ASSERT_TRUE(write_rank_file(checkpoint_rank_file(checkpoint_step_dir(root, step, true), 0), {{"step", step}},
                                {{a.data(), 3}, {b.data(), 2}})
                    .ok());
    ASSERT_TRUE(commit_checkpoint(root, step, {{"step", step}}).ok());
  }
  auto latest = latest_checkpoint(root);
  ASSERT_TRUE(latest);
  EXPECT_EQ(fs::path(latest.value()).filename(), "step_00000006");
  EXPECT_FALSE(fs::exists(checkpoint_step_dir(root, 2, false)));  // pruned: two are kept
  EXPECT_TRUE(fs::exists(checkpoint_step_dir(root, 4, false)));
  std::vector<float> a2(3), b2(2);
  nlohmann::json h;
  const std::string f = checkpoint_rank_file(latest.value(), 0);
  ASSERT_TRUE(read_rank_file(f, &h, {{a2.data(), 3}, {b2.data(), 2}}).ok());
  EXPECT_EQ(a2, a);
  EXPECT_EQ(b2, b);
  EXPECT_EQ(h["step"], 6);
  // a flipped byte fails the checksum; a wrong size is reported; the header check can refuse
  {
    std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(-10, std::ios::end);
    io.put('\x7f');
  }
  auto st = read_rank_file(f, &h, {{a2.data(), 3}, {b2.data(), 2}});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("checksum"), std::string::npos);
  st = read_rank_file(checkpoint_rank_file(checkpoint_step_dir(root, 4, false), 0), &h, {{a2.data(), 3}});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("trailing"), std::string::npos);
  st = read_rank_file(checkpoint_rank_file(checkpoint_step_dir(root, 4, false), 0), &h, {{a2.data(), 3}, {b2.data(), 2}},
                      [](const nlohmann::json&) { return Status(Error("different layout")); });
  EXPECT_FALSE(st.ok());
  // no checkpoint at all
  EXPECT_FALSE(latest_checkpoint(tmp("empty")));
}

TEST(Checkpoint, CommitRefusesADirectoryWithoutEveryRankFile) {
  // an abort's cleanup once emptied step_*.tmp just before its commit (scripts/stress): the commit
  // must then refuse rather than give a committed name to a directory that cannot resume
  std::string root = tmp("ck_missing");
  std::vector<float> a = {1, 2, 3};
  const std::string dir = checkpoint_step_dir(root, 8, true);
  fs::create_directories(dir);
  ASSERT_TRUE(write_rank_file(checkpoint_rank_file(dir, 1), {{"step", 8}}, {{a.data(), 3}}).ok());
  Status st = commit_checkpoint(root, 8, {{"step", 8}, {"world_size", 2}});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("1 rank file(s), not 2"), std::string::npos) << st.error().message();
  EXPECT_FALSE(fs::exists(checkpoint_step_dir(root, 8, false)));
  EXPECT_FALSE(fs::exists(fs::path(root) / "latest"));
  ASSERT_TRUE(write_rank_file(checkpoint_rank_file(dir, 0), {{"step", 8}}, {{a.data(), 3}}).ok());
  EXPECT_TRUE(commit_checkpoint(root, 8, {{"step", 8}, {"world_size", 2}}).ok());
  EXPECT_TRUE(fs::exists(checkpoint_rank_file(checkpoint_step_dir(root, 8, false), 0)));
}

TEST(Moe, CapacityFactorDropsTokensAndStillTrains) {
  auto plan = plan_from_json(test::plan_json(test::tiny_model("moe"), {{"world_size", 1}, {"micro_batch_size", 2}}));
  ASSERT_TRUE(plan);
  TrainOptions opt;
  opt.steps = 2;
  opt.peak_gflops = 1;
  auto dropless = Trainer::create(plan.value(), opt, MPI_COMM_SELF);
  opt.moe_capacity_factor = 0.5f;  // half the balanced load: many routed copies are dropped
  auto capped = Trainer::create(plan.value(), opt, MPI_COMM_SELF);
  ASSERT_TRUE(dropless && capped);
  StepMetrics a = dropless.value()->step(), b = capped.value()->step();
  EXPECT_TRUE(a.finite && b.finite);
  EXPECT_NE(a.loss, b.loss);
  EXPECT_GT(a.aux_loss, 0);
  EXPECT_NEAR(a.aux_loss, 3 * 1e-2, 0.005);  // about coeff per MoE layer (3 of 4) near balance
  EXPECT_TRUE(capped.value()->step().finite);
}

TEST(Preflight, RefusesWhatThisMachineCannotRun) {
  MachineInfo mi;
  mi.cores = 2;
  mi.mem_available_gib = 1.0;
  auto ok = plan_from_json(test::plan_json(test::tiny_model("gpt"), {{"world_size", 8}, {"micro_batch_size", 1}}));
  ASSERT_TRUE(ok);
  TrainOptions opt;
  EXPECT_TRUE(preflight(ok.value(), opt, mi).empty());
  auto p = preflight(ok.value(), opt, mi, 2);  // at most 2 ranks per core
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NE(p[0].find("ranks per core"), std::string::npos);
  nlohmann::json big = test::tiny_model("gpt");
  big["hidden_size"] = 4096;
  big["num_attention_heads"] = 32;
  big["ffn_hidden_size"] = 16384;
  auto huge = plan_from_json(test::plan_json(big, {{"world_size", 1}, {"micro_batch_size", 1}}, 8, 32));
  ASSERT_TRUE(huge);
  p = preflight(huge.value(), opt, mi);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NE(p[0].find("GiB available"), std::string::npos);
  nlohmann::json mla = test::tiny_model("llama");
  mla["mla"] = {{"kv_lora_rank", 16}, {"qk_head_dim", 16}, {"qk_rope_head_dim", 8}, {"v_head_dim", 16}};
  auto m = plan_from_json(test::plan_json(mla, {{"world_size", 1}, {"micro_batch_size", 1}}));
  ASSERT_TRUE(m) << m.error().message();
  p = preflight(m.value(), opt, mi);
  ASSERT_FALSE(p.empty());
  EXPECT_NE(p[0].find("multi-head latent attention"), std::string::npos);
  opt.resume = true;
  p = preflight(ok.value(), opt, mi);
  EXPECT_NE(p.back().find("--resume needs --checkpoint-dir"), std::string::npos);
}

// position_embedding none (ALiBi-free, the Nemotron hybrids' attention): no rotary pass and no position
// table, so the same initial weights give a different loss from the rotary twin, and it still trains.
TEST(Positions, AModelWithoutPositionsTrainsWithoutTheRotaryPass) {
  nlohmann::json none = test::tiny_model("llama");
  none["position_embedding"] = "none";
  auto rotary = plan_from_json(test::plan_json(test::tiny_model("llama"), {{"world_size", 1}, {"micro_batch_size", 2}}));
  auto plain = plan_from_json(test::plan_json(none, {{"world_size", 1}, {"micro_batch_size", 2}}));
  ASSERT_TRUE(rotary && plain);
  TrainOptions opt;
  opt.steps = 3;
  opt.peak_gflops = 1;
  auto a = Trainer::create(rotary.value(), opt, MPI_COMM_SELF);
  auto b = Trainer::create(plain.value(), opt, MPI_COMM_SELF);
  ASSERT_TRUE(a && b);
  StepMetrics ra = a.value()->step(), rb = b.value()->step();
  ASSERT_TRUE(ra.finite && rb.finite);
  EXPECT_NE(ra.loss, rb.loss);
  EXPECT_TRUE(b.value()->step().finite);
  EXPECT_TRUE(b.value()->step().finite);
}
