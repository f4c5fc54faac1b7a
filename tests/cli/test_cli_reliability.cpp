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

std::string tmp(const std::string& name) {
  static std::string d = [] {
    std::string p = ::testing::TempDir() + "/cli_rel_" + std::to_string(::getpid());
    ::mkdir(p.c_str(), 0755);
    return p;
  }();
  return d + "/" + name;
}

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
  auto imp = run_mplan("profile --import " + std::string(MPLAN_SOURCE_DIR) +
                       "/data/calibration/local-cpu/profile.sql --db " + tmp("bad.db"));
  ASSERT_EQ(imp.code, 0) << imp.err;
  ASSERT_EQ(std::system(("sqlite3 " + tmp("bad.db") + " \"UPDATE devices SET peak_tflops='[1]'\"").c_str()), 0);
  auto r = run_mplan("calibrate --db " + tmp("bad.db") + " --out " + tmp("cal.json"));
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_FALSE(has(r.err, "internal error")) << r.err;
}

TEST(CliReliability, OutputToCharacterDeviceWritesThrough) {
  struct stat before {}, after {};
  ASSERT_EQ(::stat("/dev/null", &before), 0);
  for (const std::string& cmd : {"export --plan " + plan_file() + " --out /dev/null",
                                 "simulate --plan " + plan_file() + " --trace /dev/null"}) {
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
