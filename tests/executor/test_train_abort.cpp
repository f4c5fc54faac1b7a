// Issue 17, items 1 and 8: killing `mplan train` with SIGKILL takes mpirun and every rank down within
// 10 s; the run is recorded in the runs database with status "aborted" and the steps it did; a
// diverged run is recorded as "diverged"; partial checkpoint directories (step_N.tmp) left by a
// killed run are removed when the next run starts.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX kill(), not in <csignal>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "../cli/run_cli.h"  // slurp
#include "test_plans.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string tmpdir() {
  static int n = 0;
  std::string d = ::testing::TempDir() + "/mplan_abort_" + std::to_string(getpid()) + "_" + std::to_string(n++);
  fs::create_directories(d);
  return d;
}

std::string mplan_bin() { return std::string(MPLAN_BINARY_DIR) + "/bin/mplan"; }

std::string write_plan(const std::string& dir, int world) {
  std::string path = dir + "/abort-plan-" + std::to_string(getpid()) + ".json";
  json par = {{"world_size", world}, {"micro_batch_size", 2}, {"zero", 0}};
  std::ofstream(path) << mplan::test::plan_json(mplan::test::tiny_model("gpt"), par, 8, 32).dump(2);
  return path;
}

// What `mplan runs list --format json` says of the database `db` (its output kept in dir/list.json).
void list_runs(const std::string& dir, const std::string& db, json& runs) {
  const std::string list = dir + "/list.json";
  ASSERT_EQ(std::system((mplan_bin() + " runs list --db " + db + " --format json >" + list + " 2>&1").c_str()), 0) << slurp(list);
  runs = json::parse(slurp(list));
}

// Processes whose command line mentions `marker` (the unique plan path): the launcher, mpirun, ranks.
std::vector<pid_t> processes_with(const std::string& marker) {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    pid_t pid = pid_t(std::atoi(e->d_name));
    if (pid <= 0 || pid == getpid()) continue;
    std::string cmd = slurp("/proc/" + std::string(e->d_name) + "/cmdline");
    for (char& c : cmd)
      if (c == '\0') c = ' ';
    std::string stat = slurp("/proc/" + std::string(e->d_name) + "/stat");
    bool zombie = stat.find(") Z ") != std::string::npos;
    if (!zombie && cmd.find(marker) != std::string::npos) out.push_back(pid);
  }
  closedir(d);
  return out;
}

// Starts `mplan args` in the background with stdout/stderr in files; returns its pid.
pid_t spawn(const std::string& args, const std::string& out, const std::string& err) {
  pid_t pid = fork();
  if (pid == 0) {
    int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(o, 1);
    dup2(e, 2);
    execl("/bin/sh", "sh", "-c", ("exec " + mplan_bin() + " " + args).c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

bool wait_for(const std::function<bool()>& cond, double seconds) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return cond();
}

}  // namespace

TEST(TrainAbort, KilledLauncherTakesItsJobDownAndTheRunIsRecorded) {
  std::string dir = tmpdir(), plan = write_plan(dir, 2), db = dir + "/runs.db", ck = dir + "/ck";
  pid_t launcher = spawn("train --plan " + plan + " --steps 100000 --peak-gflops 50 --format json --runs-db " + db +
                             " --checkpoint-dir " + ck + " --checkpoint-every 1",
                         dir + "/out", dir + "/err");
  // wait until rank 0 prints steps (the job is really running)
  bool running = wait_for([&] { return slurp(dir + "/out").find("\"step\":3") != std::string::npos; }, 120);
  ASSERT_TRUE(running) << slurp(dir + "/err");
  ASSERT_GE(processes_with(plan).size(), 3u);  // launcher, mpirun, 2 ranks (at least 3 visible)
  ASSERT_EQ(kill(launcher, SIGKILL), 0);
  int st = 0;
  waitpid(launcher, &st, 0);
  auto t0 = std::chrono::steady_clock::now();
  bool gone = wait_for([&] { return processes_with(plan).empty(); }, 10);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<pid_t> left = processes_with(plan);
  for (pid_t p : left) kill(p, SIGKILL);  // do not leave them running when the test fails
  EXPECT_TRUE(gone) << left.size() << " process(es) still running 10 s after the launcher was killed";
  EXPECT_LT(took, 10.0);
  // the run is in the database, marked aborted, with the steps it made
  json runs;
  ASSERT_NO_FATAL_FAILURE(list_runs(dir, db, runs));
  ASSERT_EQ(runs.size(), 1u) << runs.dump(1);
  EXPECT_EQ(runs[0]["status"], "aborted");
  EXPECT_GE(runs[0]["summary"]["steps_total"].get<int>(), 3);
  // no partial checkpoint directory is left behind
  for (const auto& e : fs::directory_iterator(ck)) EXPECT_EQ(e.path().extension(), "") << e.path();
}

TEST(TrainAbort, SigtermToASingleProcessRunIsRecorded) {
  std::string dir = tmpdir(), plan = write_plan(dir, 1), db = dir + "/runs.db";
  pid_t pid = spawn("train --plan " + plan + " --steps 100000 --peak-gflops 50 --format json --runs-db " + db, dir + "/out",
                    dir + "/err");
  ASSERT_TRUE(wait_for([&] { return slurp(dir + "/out").find("\"step\":2") != std::string::npos; }, 120)) << slurp(dir + "/err");
  kill(pid, SIGTERM);
  int st = 0;
  waitpid(pid, &st, 0);
  EXPECT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 128 + SIGTERM);
  EXPECT_NE(slurp(dir + "/err").find("recorded with status 'aborted'"), std::string::npos) << slurp(dir + "/err");
  json runs;
  ASSERT_NO_FATAL_FAILURE(list_runs(dir, db, runs));
  ASSERT_EQ(runs.size(), 1u) << runs.dump(1);
  EXPECT_EQ(runs[0]["status"], "aborted");
  // aborted runs are not regression baselines
  std::string reg = dir + "/reg.txt";
  EXPECT_EQ(std::system((mplan_bin() + " regress --db " + db + " >" + reg + " 2>&1").c_str()), 0) << slurp(reg);
}

TEST(TrainAbort, DivergedRunIsRecordedAndStaleTmpCheckpointsAreRemoved) {
  std::string dir = tmpdir(), plan = write_plan(dir, 1), db = dir + "/runs.db", ck = dir + "/ck";
  fs::create_directories(ck + "/step_00000007.tmp");
  std::ofstream(ck + "/step_00000007.tmp/rank_00000.bin") << "partial";
  std::string cmd = "MPLAN_FAULT=nan@3 " + mplan_bin() + " train --plan " + plan + " --steps 5 --peak-gflops 50 --runs-db " + db +
                    " --checkpoint-dir " + ck + " >" + dir + "/out 2>&1";
  int st = std::system(cmd.c_str());
  EXPECT_EQ(WEXITSTATUS(st), 3) << slurp(dir + "/out");
  EXPECT_FALSE(fs::exists(ck + "/step_00000007.tmp"));
  EXPECT_NE(slurp(dir + "/out").find("removed 1 partial checkpoint directory"), std::string::npos) << slurp(dir + "/out");
  json runs;
  ASSERT_NO_FATAL_FAILURE(list_runs(dir, db, runs));
  ASSERT_EQ(runs.size(), 1u) << runs.dump(1);
  EXPECT_EQ(runs[0]["status"], "diverged");
  EXPECT_EQ(runs[0]["summary"]["steps_total"], 2);
}
