// What the fault-testing of the CLI found (issue 17), reproduced: exit 2 with a short message instead
// of exit 1 "internal error"; output paths that never clobber a device, a symlink or a directory;
// inputs that refuse devices, FIFOs and oversized files before reading them.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>

#include "run_cli.h"

namespace {

const std::string kJob = "--model llama3-8b --cluster dgx-h100 --gbs 64 --seq 2048 ";

std::string tmp(const std::string& name) { return temp_path("cli_rel", name); }

// A valid plan file written by `mplan search --out` (what users pass to export/train).
std::string plan_file() {
  static std::string path = [] {
    auto r = run_mplan("search " + kJob + "--gpus 8 --top 1 --out " + tmp("plans"));
    EXPECT_EQ(r.code, 0) << r.err;
    return tmp("plans/plan-01.json");
  }();
  return path;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(CliReliability, HugePipelineLayoutIsBadInputNotInternalError) {
  auto r = run_mplan("simulate " + kJob + "--gpus 8 --pp 2 --pipeline-layout 99999999999");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "--pipeline-layout")) << r.err;
  EXPECT_FALSE(has(r.err, "internal error")) << r.err;
}

TEST(CliReliability, OutOfRangeCountsGiveAShortRange) {
  auto r = run_mplan("simulate " + kJob + "--gpus 0");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "--gpus: must be an integer in 1..")) << r.err;
  EXPECT_LT(r.err.size(), 200u) << r.err;  // not the 300-digit double range of CLI::PositiveNumber
  auto nan = run_mplan("train --plan " + plan_file() + " --lr nan");
  EXPECT_EQ(nan.code, 2) << nan.err;
}

TEST(CliReliability, MalformedProfileDbIsBadInput) {
  // a profile whose device row holds a JSON array where an object of peaks belongs
  auto imp = run_mplan("profile --import " + std::string(MPLAN_SOURCE_DIR) + "/data/calibration/local-cpu/profile.sql --db " +
                       tmp("bad.db"));
  ASSERT_EQ(imp.code, 0) << imp.err;
  ASSERT_EQ(std::system(("sqlite3 " + tmp("bad.db") + " \"UPDATE devices SET peak_tflops='[1]'\"").c_str()), 0);
  auto r = run_mplan("calibrate --db " + tmp("bad.db") + " --out " + tmp("cal.json"));
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_FALSE(has(r.err, "internal error")) << r.err;
}

TEST(CliReliability, OutputToCharacterDeviceWritesThrough) {
  struct stat before {
  }, after{};
  ASSERT_EQ(::stat("/dev/null", &before), 0);
  for (const std::string& cmd :
       {"export --plan " + plan_file() + " --out /dev/null", "simulate --plan " + plan_file() + " --trace /dev/null"}) {
    auto r = run_mplan(cmd);
    EXPECT_EQ(r.code, 0) << cmd << "\n" << r.err;
  }
  ASSERT_EQ(::stat("/dev/null", &after), 0);
  EXPECT_TRUE(S_ISCHR(after.st_mode));
  EXPECT_EQ(before.st_ino, after.st_ino);
}

TEST(CliReliability, OutputThroughSymlinkWritesItsTarget) {
  std::string target = tmp("megatron.sh"), link = tmp("megatron-link.sh");
  ::unlink(link.c_str());
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  auto r = run_mplan("export --plan " + plan_file() + " --out " + link);
  ASSERT_EQ(r.code, 0) << r.err;
  struct stat st {};
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_TRUE(has(slurp(target), "--tensor-model-parallel-size"));
}

TEST(CliReliability, OutputToDirectoryIsRefused) {
  auto r = run_mplan("export --plan " + plan_file() + " --out " + tmp(""));
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "is a directory")) << r.err;
}

TEST(CliReliability, InputsRefuseDevicesAndFifosWithoutBlocking) {
  std::string fifo = tmp("in.fifo");
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  for (const std::string& src : {std::string("/dev/zero"), fifo}) {
    for (const std::string& cmd :
         {"simulate --plan " + src, "simulate " + kJob + "--gpus 8 --calibration " + src, "validate --runs " + src,
          "train --plan " + src, "runs import --db " + tmp("r.db") + " --plan " + plan_file() + " --csv " + src,
          "runs import --db " + tmp("r.db") + " --plan " + plan_file() + " --megatron-log " + src}) {
      auto t0 = std::chrono::steady_clock::now();
      auto r = run_shell("timeout 20 " + std::string(MPLAN_BINARY_DIR) + "/bin/mplan " + cmd);
      EXPECT_EQ(r.code, 2) << cmd << "\n" << r.err;
      EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(15)) << cmd;
      EXPECT_TRUE(has(r.err, "character device") || has(r.err, "FIFO")) << cmd << "\n" << r.err;
    }
  }
}

TEST(CliReliability, CalibrationOfAnotherArchitectureNeedsForce) {
  auto cal = run_mplan("calibrate --shipped dgx-a100-80g --out " + tmp("a100.json"));
  ASSERT_EQ(cal.code, 0) << cal.err;
  EXPECT_TRUE(has(slurp(tmp("a100.json")), "\"arch\": \"ampere\""));
  auto r = run_mplan("simulate " + kJob + "--gpus 8 --tp 8 --calibration " + tmp("a100.json"));
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "fitted for ampere")) << r.err;
  EXPECT_TRUE(has(r.err, "--force")) << r.err;
  auto s = run_mplan("search " + kJob + "--gpus 8 --top 1 --calibration " + tmp("a100.json"));
  EXPECT_EQ(s.code, 2) << s.err;
  auto f = run_mplan("simulate " + kJob + "--gpus 8 --tp 8 --calibration " + tmp("a100.json") + " --force");
  EXPECT_EQ(f.code, 0) << f.err;
  EXPECT_TRUE(has(f.err, "warning")) << f.err;
  auto same = run_mplan(
      "simulate --model llama3-8b --cluster dgx-a100-80g --gbs 64 --seq 2048 --gpus 8 --tp 8 "
      "--calibration " +
      tmp("a100.json"));
  EXPECT_EQ(same.code, 0) << same.err;
}

TEST(CliReliability, ValidateRefusesCsvWithoutItsColumns) {
  std::ofstream(tmp("other.csv")) << "name,value\nx,1\ny,2\n";
  auto r = run_mplan("validate --runs " + tmp("other.csv"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(has(r.err, "missing column(s)")) << r.err;
  EXPECT_FALSE(has(r.out, "MAPE")) << r.out;
  std::ofstream(tmp("empty.csv")) << "row_id,model\n";
  auto e = run_mplan("validate --memory " + tmp("empty.csv"));
  EXPECT_EQ(e.code, 2) << e.out;
}

TEST(CliReliability, ImpossibleInputNumbersAreRefusedNotPrinted) {
  std::ofstream(tmp("peak.json")) << R"({"name": "x", "gpu": {"name": "G", "arch": "hopper", "peak_tflops": {"bf16": 1e308},
    "memory_gib": 80, "hbm_gbps": 3350, "sm_count": 132}, "gpus_per_node": 8, "scale_up_bw_gbps": 450,
    "scale_up_latency_us": 2, "scale_out_bw_gbps": 50, "scale_out_latency_us": 5, "num_nodes": 4})";
  auto r = run_mplan("simulate --model llama3-8b --cluster " + tmp("peak.json") + " --gbs 64 --seq 2048 --gpus 8");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "peak_tflops.bf16")) << r.err;
  EXPECT_FALSE(has(r.out, "inf") || has(r.out, "nan")) << r.out;
  // a Megatron log whose elapsed time is 1e308 ms is not a step
  std::string log = tmp("huge.log");
  std::ofstream out(log);
  for (int i = 1; i <= 20; ++i)
    out << " iteration " << i << "/ 100 | consumed samples: " << 64 * i
        << " | elapsed time per iteration (ms): " << (i == 15 ? "1e308" : "1000.0")
        << " | learning rate: 1.0E-04 | global batch size: 64 | lm loss: 5.0 | loss scale: 1.0 |"
           " number of skipped iterations: 0 | number of nan iterations: 0 |\n";
  out.close();
  auto imp = run_mplan("runs import --db " + tmp("huge.db") + " --megatron-log " + log + " --plan " + plan_file() +
                       " --no-predict --allow-mismatch");
  EXPECT_EQ(imp.code, 2) << imp.out << imp.err;
  EXPECT_TRUE(has(imp.err, "step_time_s")) << imp.err;
}

// Items 10 and 11: the cluster name the docs use resolves; a pp that does not divide the layers is
// refused with the two ways to keep it (Llama-3.1-405B's 126 layers on pp 16, as Meta trained it).
TEST(CliReliability, LocalCpuClusterResolves) {
  auto r = run_mplan("simulate --model llama3-8b --cluster local-cpu --precision fp32 --gpus 2 --gbs 2 --seq 256 --tp 2");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "local-cpu")) << r.out;
}

TEST(CliReliability, UnevenPipelineSuggestsBalancedAndFirstLastStages) {
  const std::string job = "--model llama3.1-405b --cluster dgx-h100 --gpus 2048 --gbs 2048 --seq 8192 --tp 8 --pp 16";
  auto r = run_mplan("simulate " + job);
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "--pipeline-layout balanced")) << r.err;
  EXPECT_TRUE(has(r.err, "--first-stage-layers 7 --last-stage-layers 7")) << r.err;
  for (const std::string& fix : {" --pipeline-layout balanced", " --first-stage-layers 7 --last-stage-layers 7"}) {
    auto ok = run_mplan("simulate " + job + fix);
    EXPECT_EQ(ok.code, 0) << fix << "\n" << ok.err;
  }
}

TEST(CliReliability, RunsDbThatIsNotAFileIsRefusedBeforeTraining) {
  for (const std::string& db : {std::string("/dev/null"), tmp("")}) {
    auto t0 = std::chrono::steady_clock::now();
    auto r = run_mplan("train --plan " + std::string(MPLAN_SOURCE_DIR) + "/data/plans/tiny.json --steps 5 --runs-db " + db);
    EXPECT_EQ(r.code, 2) << db << "\n" << r.err;
    EXPECT_TRUE(has(r.err, "--runs-db")) << r.err;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  }
}

// The run's provenance comes from git through core/process (no shell): the commit of the source tree
// this binary was built from, "-dirty" when tracked files changed, "unknown" outside a git checkout.
TEST(CliReliability, TrainStoresTheCommitOfItsSource) {
  const std::string src = MPLAN_SOURCE_DIR;
  auto head = run_shell("git -C '" + src + "' rev-parse HEAD");
  const std::string db = tmp("provenance.db");
  auto r = run_mplan("train --plan " + src + "/data/plans/tiny.json --steps 1 --peak-gflops 50 --runs-db " + db);
  ASSERT_EQ(r.code, 0) << r.err;
  auto list = run_mplan("runs list --db " + db + " --format json");
  ASSERT_EQ(list.code, 0) << list.err;
  auto j = nlohmann::json::parse(list.out);
  const nlohmann::json& run = j.is_array() ? j.at(0) : j.at("runs").at(0);
  const std::string commit = run.at("git_commit").get<std::string>();
  if (head.code != 0) {
    EXPECT_EQ(commit, "unknown");
  } else {
    EXPECT_EQ(commit.substr(0, 40), head.out.substr(0, 40));
    EXPECT_TRUE(commit.size() == 40 || commit == head.out.substr(0, 40) + "-dirty") << commit;
  }
}
