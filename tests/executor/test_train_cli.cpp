// `mplan train` end to end (self-launch through mpirun): JSON step lines, bit-identical resume from
// sharded checkpoints, loss falling on the shipped corpus, a dying rank aborting the job promptly
// with its name, a NaN loss stopping with the last good checkpoint kept, and plans refused before
// start (world size, memory, CUDA without a GPU).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "test_plans.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct Result {
  int code = -1;
  std::string out, err;
  double seconds = 0;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string tmpdir() {
  static int n = 0;
  std::string d = ::testing::TempDir() + "/mplan_train_" + std::to_string(getpid()) + "_" + std::to_string(n++);
  fs::create_directories(d);
  return d;
}

Result run_mplan(const std::string& args, const std::string& env = "") {
  std::string base = tmpdir() + "/io";
  std::string cmd = env + " " + std::string(MPLAN_BINARY_DIR) + "/bin/mplan " + args + " >" + base + ".out 2>" + base + ".err";
  auto t0 = std::chrono::steady_clock::now();
  int st = std::system(cmd.c_str());
  Result r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = slurp(base + ".out");
  r.err = slurp(base + ".err");
  return r;
}

std::string write_plan(const std::string& model, json parallel, int64_t gbs = 8, int64_t seq = 32) {
  if (!parallel.contains("micro_batch_size")) parallel["micro_batch_size"] = 2;
  std::string path = tmpdir() + "/plan.json";
  std::ofstream(path) << mplan::test::plan_json(mplan::test::tiny_model(model), parallel, gbs, seq).dump(2);
  return path;
}

std::vector<json> json_lines(const std::string& out) {
  std::vector<json> v;
  std::istringstream is(out);
  std::string line;
  while (std::getline(is, line))
    if (!line.empty() && line[0] == '{') v.push_back(json::parse(line));
  return v;
}

}  // namespace

TEST(TrainCli, JsonLinesCarryTheContractFields) {
  auto r = run_mplan("train --plan " + write_plan("gpt", {{"world_size", 1}}) + " --steps 3 --format json --peak-gflops 50");
  ASSERT_EQ(r.code, 0) << r.err;
  auto lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  for (const char* k : {"step", "loss", "step_time_s", "tokens_per_s", "mfu", "peak_memory_gib"})
    EXPECT_TRUE(lines[0].contains(k)) << k;
  EXPECT_EQ(lines[2]["step"], 3);
  EXPECT_GT(lines[0]["tokens_per_s"].get<double>(), 0);
  EXPECT_GT(lines[0]["peak_memory_gib"].get<double>(), 0);
  EXPECT_NEAR(lines[0]["loss"].get<double>(), std::log(256.0), 0.1);
}

TEST(TrainCli, ResumeGivesBitIdenticalLosses) {
  // 4 ranks: tp2 (sequence parallel) x dp2 with the distributed optimizer: every rank's checkpoint
  // shard holds different parameters and a different optimizer shard
  std::string plan = write_plan("llama", {{"world_size", 4}, {"tp", 2}, {"sp", true}, {"zero", 1}});
  std::string common = " --format json --lr-decay-steps 6 --warmup 1 --peak-gflops 50 --seed 5";
  auto full = run_mplan("train --plan " + plan + " --steps 6" + common);
  ASSERT_EQ(full.code, 0) << full.err;
  std::string ck = tmpdir() + "/ck";
  auto first = run_mplan("train --plan " + plan + " --steps 3 --checkpoint-dir " + ck + common);
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_EQ(slurp(ck + "/latest"), "step_00000003\n");
  EXPECT_TRUE(fs::exists(ck + "/step_00000003/rank_00003.bin"));
  auto resumed = run_mplan("train --plan " + plan + " --steps 6 --resume --checkpoint-dir " + ck + common);
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  auto a = json_lines(full.out), b = json_lines(first.out), c = json_lines(resumed.out);
  ASSERT_EQ(a.size(), 6u);
  ASSERT_EQ(b.size(), 3u);
  ASSERT_EQ(c.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(a[size_t(i)]["loss"].get<double>(), b[size_t(i)]["loss"].get<double>());
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(c[size_t(i)]["step"], i + 4);
    EXPECT_EQ(a[size_t(i + 3)]["loss"].get<double>(), c[size_t(i)]["loss"].get<double>()) << "step " << i + 4;
    EXPECT_EQ(a[size_t(i + 3)]["grad_norm"].get<double>(), c[size_t(i)]["grad_norm"].get<double>());
  }
  // a different layout must not load these shards
  auto wrong = run_mplan("train --plan " + write_plan("llama", {{"world_size", 4}, {"dp", 4}, {"zero", 1}}) +
                         " --steps 6 --resume --checkpoint-dir " + ck + common);
  EXPECT_EQ(wrong.code, 2);
  EXPECT_NE(wrong.err.find("different model or layout"), std::string::npos) << wrong.err;
}

TEST(TrainCli, LossFallsOnTheCorpus) {
  std::string corpus = std::string(MPLAN_SOURCE_DIR) + "/data/corpus/public_domain.txt";
  auto r = run_mplan("train --plan " + write_plan("gpt", {{"world_size", 2}, {"zero", 0}}) +
                     " --steps 40 --lr 3e-3 --format json --peak-gflops 50 --data " + corpus);
  ASSERT_EQ(r.code, 0) << r.err;
  auto l = json_lines(r.out);
  ASSERT_EQ(l.size(), 40u);
  double first = l[0]["loss"], last = 0;
  for (size_t i = 35; i < 40; ++i) last += l[i]["loss"].get<double>() / 5;
  EXPECT_NEAR(first, std::log(256.0), 0.1);
  EXPECT_LT(last, first - 1.5) << "mean loss of the last 5 steps " << last << " vs first " << first;
}

// OpenMPI refuses mpirun's `-x` beside an environment list in mca_base_env_list; a user who sets one
// (sanitizer options for the ranks, say) can still train: mplan moves its variables into that list.
TEST(TrainCli, RunsWhenTheUserSetsAnMpiEnvironmentList) {
  auto r = run_mplan(
      "train --plan " + write_plan("gpt", {{"world_size", 2}, {"zero", 0}}) + " --steps 2 --format json --peak-gflops 50",
      "OMPI_MCA_mca_base_env_list='MPLAN_TEST_MARK=1'");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err.find("mixing"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("\"step\""), std::string::npos) << r.out;
}

TEST(TrainCli, DyingRankAbortsPromptlyNamingIt) {
  auto r = run_mplan("train --plan " + write_plan("gpt", {{"world_size", 2}, {"pp", 2}}) + " --steps 50 --peak-gflops 50",
                     "MPLAN_FAULT=kill@1@3");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("rank 1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("died"), std::string::npos) << r.err;
  EXPECT_LT(r.seconds, 60.0);
}

TEST(TrainCli, NanLossStopsAndKeepsTheLastGoodCheckpoint) {
  std::string ck = tmpdir() + "/ck";
  auto r = run_mplan("train --plan " + write_plan("gpt", {{"world_size", 2}, {"zero", 1}}) +
                         " --steps 10 --checkpoint-every 2 --peak-gflops 50 --checkpoint-dir " + ck,
                     "MPLAN_FAULT=nan@5");
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("step 5: loss is nan"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("step_00000004"), std::string::npos) << r.out;
  EXPECT_EQ(slurp(ck + "/latest"), "step_00000004\n");
  EXPECT_FALSE(fs::exists(ck + "/step_00000005"));
  // and training resumes from it
  auto again = run_mplan("train --plan " + write_plan("gpt", {{"world_size", 2}, {"zero", 1}}) +
                         " --steps 6 --resume --peak-gflops 50 --format json --checkpoint-dir " + ck);
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(json_lines(again.out).size(), 2u);
}

TEST(TrainCli, RefusesPlansThisMachineCannotRun) {
  auto big_world = run_mplan("train --plan " + write_plan("gpt", {{"world_size", 64}, {"dp", 64}}, 128) + " --steps 1");
  EXPECT_EQ(big_world.code, 2);
  EXPECT_NE(big_world.err.find("ranks per core"), std::string::npos) << big_world.err;
  json huge = mplan::test::tiny_model("llama");
  huge.update({{"num_layers", 64},
               {"hidden_size", 8192},
               {"ffn_hidden_size", 28672},
               {"num_attention_heads", 64},
               {"vocab_size", 128256}});
  std::string path = tmpdir() + "/huge.json";
  std::ofstream(path) << mplan::test::plan_json(huge, {{"world_size", 1}, {"micro_batch_size", 1}}, 1, 128).dump();
  auto mem = run_mplan("train --plan " + path + " --steps 1");
  EXPECT_EQ(mem.code, 2);
  EXPECT_NE(mem.err.find("GiB available"), std::string::npos) << mem.err;
  auto cuda = run_mplan("train --backend cuda --plan " + write_plan("gpt", {{"world_size", 1}}) + " --steps 1");
  if (!fs::exists("/dev/nvidia0")) {
    EXPECT_EQ(cuda.code, 2);
    EXPECT_NE(cuda.err.find("no NVIDIA GPU"), std::string::npos) << cuda.err;
  }
  auto missing = run_mplan("train --plan " + write_plan("gpt", {{"world_size", 1}}) + " --data /nonexistent.txt");
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("cannot read"), std::string::npos) << missing.err;
}

// Phases before the first step are reported on stderr (where the time to step 1 goes), stdout stays
// the JSON lines.
TEST(TrainCli, PrintsItsStartPhasesOnStderr) {
  auto r = run_mplan("train --plan " + write_plan("gpt", {{"world_size", 1}}) + " --steps 1 --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* phase : {"initialising weights: ", "measuring the GEMM peak", "first step: "})
    EXPECT_NE(r.err.find(std::string("mplan train: ") + phase), std::string::npos) << phase << "\n" << r.err;
  EXPECT_EQ(r.out.find("mplan train:"), std::string::npos) << r.out;
  for (const json& j : json_lines(r.out)) EXPECT_TRUE(j.is_object());
  auto quick = run_mplan("train --plan " + write_plan("gpt", {{"world_size", 1}}) + " --steps 1 --peak-gflops 10");
  ASSERT_EQ(quick.code, 0) << quick.err;
  EXPECT_EQ(quick.err.find("measuring the GEMM peak"), std::string::npos) << quick.err;
}
#if defined(MPLAN_TEST_HAS_VERIFY)
TEST(VerifyCli, ComparesMeasuredAndPredictedPerOp) {
  std::string db = tmpdir() + "/profile.db";
  auto prof = run_mplan("profile --backend cpu --quick --no-progress --db " + db);
  ASSERT_EQ(prof.code, 0) << prof.err;
  auto r = run_mplan("verify --plan " + write_plan("llama", {{"world_size", 1}}) + " --steps 3 --format json --db " + db);
  ASSERT_EQ(r.code, 0) << r.err;
  json j = json::parse(r.out);
  for (const char* side : {"predicted", "measured"})
    for (const char* k : {"step_time_s", "peak_memory_gib", "mfu"}) {
      ASSERT_TRUE(j[side].contains(k)) << side << "." << k;
      EXPECT_GT(j[side][k].get<double>(), 0) << side << "." << k;
    }
  EXPECT_TRUE(j["error_pct"].contains("step_time"));
  EXPECT_TRUE(j["error_pct"].contains("peak_memory"));
  for (const char* k : {"measured_only", "predicted_only", "off_by_more_than_25pct"})
    EXPECT_TRUE(j["op_check"][k].is_array()) << k;
  bool qkv = false;
  for (const auto& op : j["ops"]) {
    if (op["name"] == "qkv_gemm") {
      qkv = true;
      EXPECT_GT(op["measured_s"].get<double>(), 0);
      EXPECT_GT(op["predicted_s"].get<double>(), 0);
    }
  }
  EXPECT_TRUE(qkv) << r.out;
}

// Issue 17: `mplan verify --plan P` works on a fresh clone: it uses the committed local-cpu profile
// when this machine matches it, else profiles this machine quickly; either way it says which, and the
// next verify finds the profile in the cache.
TEST(VerifyCli, WorksWithoutFlags) {
  std::string cache = tmpdir() + "/cache";
  std::string env = "XDG_CACHE_HOME=" + cache;
  std::string plan = write_plan("llama", {{"world_size", 1}});
  auto first = run_mplan("verify --plan " + plan + " --steps 2", env);
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_TRUE(first.err.find("committed local-cpu profile") != std::string::npos ||
              first.err.find("profiling it now") != std::string::npos)
      << first.err;
  EXPECT_NE(first.out.find("step time"), std::string::npos) << first.out;
  auto second = run_mplan("verify --plan " + plan + " --steps 2", env);
  ASSERT_EQ(second.code, 0) << second.err;
  EXPECT_NE(second.err.find("this machine's CPU profile"), std::string::npos) << second.err;
}
// Issue 29: `mplan verify --backend cuda` trains on the GPU and predicts from a GPU profile; without a
// GPU it says so before profiling anything, and a CPU profile is refused for it.
TEST(VerifyCli, CudaBackendNeedsAGpuAndAGpuProfile) {
  if (fs::exists("/dev/nvidia0")) GTEST_SKIP() << "this machine has a GPU (the GPU bundle runs verify --backend cuda)";
  std::string plan = write_plan("llama", {{"world_size", 1}});
  auto r = run_mplan("verify --plan " + plan + " --backend cuda --format json", "XDG_CACHE_HOME=" + tmpdir());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no NVIDIA GPU"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");  // nothing half-written on stdout
  auto bad = run_mplan("verify --plan " + plan + " --backend tpu");
  EXPECT_EQ(bad.code, 2) << bad.err;
}

// A run recorded on an H200 (docs/gpu-runs/h200-2026-11-28/3-final) predicted again from its CUPTI
// profile, with no GPU here: the measured side is the recorded summary's (median of steps 2..12).
TEST(VerifyCli, PredictsARecordedGpuRunFromItsProfile) {
  const std::string run = std::string(MPLAN_SOURCE_DIR) + "/docs/gpu-runs/h200-2026-11-28/";
  const std::string plan = run + "plan_llama.json", db = run + "3-final/gpu.db", summary = run + "3-final/train_llama.json";
  auto r = run_mplan("verify --plan " + plan + " --backend cuda --db " + db + " --measured " + summary + " --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  std::ifstream in(summary);
  const json sj = json::parse(in);
  std::vector<double> t;
  for (size_t i = 1; i < sj["steps"].size(); ++i) t.push_back(sj["steps"][i]["step_time_s"].get<double>());
  std::sort(t.begin(), t.end());
  const double median = t.size() % 2 ? t[t.size() / 2] : 0.5 * (t[t.size() / 2 - 1] + t[t.size() / 2]);
  EXPECT_DOUBLE_EQ(j["measured"]["step_time_s"].get<double>(), median);
  EXPECT_EQ(j["steps"].get<int>(), int(sj["steps"].size()));
  EXPECT_EQ(j["device"].get<std::string>().find("H200"), 0u) << j["device"];
  EXPECT_GT(j["predicted"]["step_time_s"].get<double>(), 0);
  bool attn = false;
  for (const auto& op : j["ops"]) attn |= op["name"] == "attn_core" && op["measured_s"].get<double>() > 0;
  EXPECT_TRUE(attn);
}

TEST(VerifyCli, ARecordedRunIsRefusedWithoutItsProfileOrForAnotherPlan) {
  const std::string run = std::string(MPLAN_SOURCE_DIR) + "/docs/gpu-runs/h200-2026-11-28/";
  const std::string db = run + "3-final/gpu.db", summary = run + "3-final/train_llama.json";
  auto no_db = run_mplan("verify --plan " + run + "plan_llama.json --backend cuda --measured " + summary);
  EXPECT_EQ(no_db.code, 2);
  EXPECT_NE(no_db.err.find("--db"), std::string::npos) << no_db.err;
  auto other = run_mplan("verify --plan " + run + "plan_gpt2.json --backend cuda --db " + db + " --measured " + summary);
  EXPECT_EQ(other.code, 2);
  EXPECT_NE(other.err.find("'llama-1.5b'"), std::string::npos) << other.err;
  EXPECT_EQ(other.out, "");
  const std::string junk = tmpdir() + "/junk.json";
  std::ofstream(junk) << R"({"steps": []})";
  auto bad = run_mplan("verify --plan " + run + "plan_llama.json --backend cuda --db " + db + " --measured " + junk);
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("not a training summary"), std::string::npos) << bad.err;
}

#endif  // MPLAN_TEST_HAS_VERIFY
