// Jobs in log files: several jobs in one file (a smoke job then the real one, benchmark passes with
// different settings, a rerun from scratch), resumes kept as one run, per-rank files combined (two
// files, a torchrun --log-dir tree with two attempts), and the errors when files cannot be combined.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "log_gen.h"
#include "runs/import.h"
#include "runs/log_jobs.h"
#include "runs_test_util.h"

using namespace mplan::runs;
using mplan::Plan;

namespace {

Plan llama3() { return runs_test::load_plan("llama3_8b_h100_dp8.plan.json"); }

LogSet read_log(const std::string& text) { return runs_test::read_log_text(text, "slurm-4711.out"); }

log_gen::LaunchSpec launch(const Plan& p, int64_t first, int64_t last, double t0 = 0) {
  log_gen::LaunchSpec s;
  s.args = log_gen::megatron_args(p);
  s.first = first, s.last = last, s.interval = 10, s.t0 = t0;
  return s;
}

}  // namespace

TEST(LogJobs, SmokeJobThenRealJobAreTwoJobs) {
  Plan plan = llama3();
  Plan smoke = plan;
  smoke.model.num_layers = 2;  // the usual two-layer smoke test before the real job
  std::string text =
      log_gen::megatron_launch(smoke, launch(smoke, 10, 30)) + log_gen::megatron_launch(plan, launch(plan, 10, 200, 600));
  LogSet set = read_log(text);
  ASSERT_EQ(set.jobs.size(), 2u);
  EXPECT_EQ(set.jobs[0].iteration_lines(), 3);
  EXPECT_EQ(set.jobs[1].iteration_lines(), 20);
  EXPECT_EQ(set.jobs[1].index, 2);
  // Each job is checked against its own arguments: the smoke job does not match the plan...
  auto bad = import_log_job(set.jobs[0], plan, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("num_layers = 2 but the plan has model.num_layers = 32"), std::string::npos)
      << bad.error().message();
  EXPECT_NE(bad.error().message().find("job 1:"), std::string::npos);
  // ...the real job does, with only its own steps and memory.
  auto ok = import_log_job(set.jobs[1], plan, {});
  ASSERT_TRUE(ok.ok()) << ok.error().message();
  EXPECT_EQ(ok->run.steps.size(), 20u);
  EXPECT_EQ(ok->run.steps.front().step, 10);
  EXPECT_FALSE(std::any_of(ok->run.warnings.begin(), ok->run.warnings.end(),
                           [](const std::string& w) { return w.find("restarts") != std::string::npos; }));
}

TEST(LogJobs, BenchmarkPassesWithDifferentSettingsAreSeparateJobs) {
  Plan plan = llama3();
  std::string text;
  for (int mbs : {1, 2, 4, 8}) {
    Plan p = plan;
    p.parallel.micro_batch_size = mbs;
    text += log_gen::megatron_launch(p, launch(p, 10, 50, mbs * 1000.0));
  }
  LogSet set = read_log(text);
  ASSERT_EQ(set.jobs.size(), 4u);
  for (const auto& j : set.jobs) EXPECT_EQ(j.iteration_lines(), 5);
  EXPECT_TRUE(import_log_job(set.jobs[0], plan, {}).ok());
  for (int k = 1; k < 4; ++k) EXPECT_FALSE(import_log_job(set.jobs[size_t(k)], plan, {}).ok()) << k;
  EXPECT_NE(describe_job(set.jobs[2]).find("job 3: slurm-4711.out lines"), std::string::npos);
}

TEST(LogJobs, ResumeOfTheSameJobIsOneRunAndRerunFromScratchIsAnother) {
  Plan plan = llama3();
  auto first = launch(plan, 10, 120);
  first.memory_mib = 60000;
  auto resumed = launch(plan, 110, 200, 3000);  // restarted from the iteration-100 checkpoint
  resumed.memory_mib = 70000;
  LogSet set = read_log(log_gen::megatron_launch(plan, first) + log_gen::megatron_launch(plan, resumed));
  ASSERT_EQ(set.jobs.size(), 1u);
  ASSERT_EQ(set.jobs[0].launches.size(), 2u);
  auto r = import_log_job(set.jobs[0], plan, {});
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ(r->run.steps.size(), 12u + 10u);
  EXPECT_TRUE(r->run.steps[12].warmup);  // 110 is the first line after the restart
  // The resumed launch's memory report is not applied to the first launch's steps.
  EXPECT_NEAR(*r->run.steps[11].peak_memory_gib, 60000 / 1024.0, 1e-9);
  EXPECT_NEAR(*r->run.steps[13].peak_memory_gib, 70000 / 1024.0, 1e-9);

  // The same configuration started again from iteration 1: a new run, not a resume.
  LogSet again = read_log(log_gen::megatron_launch(plan, launch(plan, 10, 100)) +
                          log_gen::megatron_launch(plan, launch(plan, 10, 100, 5000)));
  EXPECT_EQ(again.jobs.size(), 2u);
  // Without an arguments block, a restart that continues counting is a resume; one from 1 is a new job.
  auto bare = launch(plan, 10, 100);
  bare.args.clear();
  auto bare_resume = launch(plan, 60, 150, 3000);
  bare_resume.args.clear();
  EXPECT_EQ(read_log(log_gen::megatron_launch(plan, bare) + log_gen::megatron_launch(plan, bare_resume)).jobs.size(), 1u);
  EXPECT_EQ(read_log(log_gen::megatron_launch(plan, bare) + log_gen::megatron_launch(plan, bare)).jobs.size(), 2u);
}

TEST(LogJobs, PerRankFilesAreCombined) {
  Plan plan = llama3();
  // Rank 0's file: arguments, datetimes and its memory report; the last rank's file: iteration lines.
  auto s = launch(plan, 10, 100);
  std::string all = log_gen::megatron_launch(plan, s);
  std::string rank0, last;
  std::istringstream in(all);
  for (std::string line; std::getline(in, line);)
    (line.find("iteration ") != std::string::npos || line.find("time across ranks") != std::string::npos ||
             line.find("forward-backward") != std::string::npos
         ? last
         : rank0) += line + "\n";
  std::string dir = runs_test::temp_dir();
  runs_test::write_bytes(dir + "/rank0.log", rank0);
  runs_test::write_bytes(dir + "/rank7.log", last);
  auto set = read_training_logs({dir + "/rank0.log", dir + "/rank7.log"});
  ASSERT_TRUE(set.ok()) << set.error().message();
  ASSERT_EQ(set->jobs.size(), 1u);
  const LogJob& job = set->jobs[0];
  EXPECT_EQ(job.iteration_lines(), 10);
  EXPECT_FALSE(job.config.empty());
  auto r = import_log_job(job, plan, {});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_TRUE(r->run.steps.back().peak_memory_gib);
  EXPECT_EQ(r->run.started_at, "2024-06-12T10:00:00Z");
  EXPECT_NE(job.where.find("rank0.log"), std::string::npos);

  // Rank 0's file alone: the error says that the iteration lines are on the last rank.
  auto alone = read_training_logs({dir + "/rank0.log"});
  ASSERT_FALSE(alone.ok());
  EXPECT_NE(alone.error().message().find("last rank"), std::string::npos) << alone.error().message();
  // The same pair as a directory.
  auto as_dir = read_training_logs({dir});
  ASSERT_TRUE(as_dir.ok()) << as_dir.error().message();
  EXPECT_EQ(as_dir->jobs.size(), 1u);
}

TEST(LogJobs, TorchrunLogDirWithTwoAttempts) {
  Plan plan = llama3();
  std::string root = runs_test::temp_dir() + "/logs/none_abc123";
  // attempt_0 died after iteration 120, attempt_1 resumed from the iteration-100 checkpoint.
  for (auto [attempt, first, last] : {std::tuple{0, 10, 120}, std::tuple{1, 110, 200}}) {
    auto s = launch(plan, first, last, attempt * 4000.0);
    s.memory_mib = 60000 + attempt * 1000;
    std::string all = log_gen::megatron_launch(plan, s), rank0, rank7, rank3;
    std::istringstream in(all);
    for (std::string line; std::getline(in, line);) (line.find("iteration ") != std::string::npos ? rank7 : rank0) += line + "\n";
    rank3 = log_gen::memory_line(3, first, 65000) + "\n";  // another stage's data-parallel rank 0
    std::string a = root + "/attempt_" + std::to_string(attempt);
    for (auto [rank, text] : {std::pair{0, rank0}, std::pair{3, rank3}, std::pair{7, rank7}}) {
      std::filesystem::create_directories(a + "/" + std::to_string(rank));
      runs_test::write_bytes(a + "/" + std::to_string(rank) + "/stdout.log", text);
      runs_test::write_bytes(a + "/" + std::to_string(rank) + "/stderr.log", "");
    }
    runs_test::write_bytes(a + "/0/error.json", "{}");
  }
  auto set = read_training_logs({root});
  ASSERT_TRUE(set.ok()) << set.error().message();
  ASSERT_EQ(set->jobs.size(), 1u);
  ASSERT_EQ(set->jobs[0].launches.size(), 2u);
  auto r = import_log_job(set->jobs[0], plan, {});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->run.steps.size(), 12u + 10u);
  EXPECT_NEAR(*r->run.steps.back().peak_memory_gib, 65000 / 1024.0, 1e-9);  // rank 3's report counts
  EXPECT_EQ(r->warmup_excluded, 2);
}

TEST(LogJobs, PerRankFilesThatDisagreeAreAnError) {
  Plan plan = llama3();
  std::string two =
      log_gen::megatron_launch(plan, launch(plan, 10, 50)) + log_gen::megatron_launch(plan, launch(plan, 10, 50, 900));
  auto one_spec = launch(plan, 10, 50);
  one_spec.args.clear();
  std::string one = log_gen::megatron_launch(plan, one_spec);
  std::string dir = runs_test::temp_dir();
  runs_test::write_bytes(dir + "/a.log", two);
  runs_test::write_bytes(dir + "/b.log", one);
  auto set = read_training_logs({dir + "/a.log", dir + "/b.log"});
  ASSERT_FALSE(set.ok());
  EXPECT_NE(set.error().message().find("disagree"), std::string::npos) << set.error().message();
  EXPECT_FALSE(read_training_logs({dir + "/missing.log"}).ok());
  std::filesystem::create_directories(dir + "/empty");
  EXPECT_FALSE(read_training_logs({dir + "/empty"}).ok());
}
