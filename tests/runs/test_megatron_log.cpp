// Megatron-LM log parsing across versions (2020, 2023, 2024, 2025 formats, committed fixtures), the
// warm-up rule, restarts, memory reports, and the check of the log's arguments against the plan.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "core/counting.h"
#include "runs/import.h"
#include "runs/log_jobs.h"
#include "runs/megatron_log.h"
#include "runs_test_util.h"

using namespace mplan::runs;

namespace {

// The file's one job.
LogJob parse(const std::string& file) {
  auto set = read_training_logs({runs_test::data_path(file)});
  EXPECT_TRUE(set.ok()) << (set.ok() ? "" : set.error().message());
  EXPECT_EQ(set->jobs.size(), 1u);
  return set.value().jobs.front();
}

std::vector<LogIteration> iterations(const LogJob& j) {
  std::vector<LogIteration> out;
  for (const auto& l : j.launches) out.insert(out.end(), l.iterations.begin(), l.iterations.end());
  return out;
}

size_t memory_reports(const LogJob& j) {
  size_t n = 0;
  for (const auto& l : j.launches) n += l.memory.size();
  return n;
}

ImportResult import_ok(const std::string& log_file, const std::string& plan_file, int warmup = 10) {
  ImportOptions opt;
  opt.warmup_iters = warmup;
  auto r = import_log_job(parse(log_file), runs_test::load_plan(plan_file), opt);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
  return r.value();
}

}  // namespace

TEST(MegatronLine, IterationLinesOfEveryVersion) {
  auto a = parse_megatron_iteration_line(
      " iteration      100/  500000 | elapsed time per iteration (ms): 309.4 | learning rate: 3.000E-06 | lm loss: "
      "9.866815E+00 | loss scale: 131072.0 | number of skipped iterations:  17 | number of nan iterations:   0 |");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->iteration, 100);
  EXPECT_EQ(a->train_iters, 500000);
  EXPECT_DOUBLE_EQ(a->elapsed_ms, 309.4);
  EXPECT_NEAR(*a->loss, 9.866815, 1e-9);
  EXPECT_NEAR(*a->learning_rate, 3e-6, 1e-15);
  EXPECT_EQ(a->skipped_iterations, 17);
  EXPECT_FALSE(a->tflops_per_gpu);
  EXPECT_FALSE(a->global_batch_size);
  EXPECT_TRUE(a->timestamp.empty());

  auto d = parse_megatron_iteration_line(
      "[default7]: [2025-03-04 22:09:32.209584] iteration        5/    1000 | consumed samples:         1280 | "
      "elapsed time per iteration (ms): 4742.3 | throughput per GPU (TFLOP/s/GPU): 275.4 | learning rate: "
      "1.000000E-05 | global batch size:   256 | lm loss: 1.005091E+01 | load_balancing_loss: 1.028485E+00 | loss "
      "scale: 1.0 | grad norm: 0.730 | number of skipped iterations:   0 | number of nan iterations:   0 |");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->iteration, 5);
  EXPECT_EQ(d->timestamp, "2025-03-04 22:09:32.209584");
  EXPECT_DOUBLE_EQ(*d->tflops_per_gpu, 275.4);
  EXPECT_EQ(*d->global_batch_size, 256);
  EXPECT_EQ(*d->consumed_samples, 1280);
  EXPECT_NEAR(*d->loss, 10.05091, 1e-9);  // "lm loss", not the load-balancing loss

  auto srun = parse_megatron_iteration_line(
      "7:  iteration       20/     100 | consumed samples:         2560 | elapsed time per iteration (ms): 1200.0 | "
      "learning rate: 1.0E-04 | global batch size:   128 | loss: 2.5E+00 | loss scale: 1.0 |");
  ASSERT_TRUE(srun);
  EXPECT_EQ(srun->iteration, 20);
  EXPECT_NEAR(*srun->loss, 2.5, 1e-12);  // first "... loss" field when there is no "lm loss"

  EXPECT_FALSE(parse_megatron_iteration_line(" validation loss at iteration 1000 | lm loss value: 4.3E+00 | "));
  EXPECT_FALSE(parse_megatron_iteration_line("saving checkpoint at iteration    1000 to checkpoints/gpt2"));
  EXPECT_FALSE(parse_megatron_iteration_line("time (ms) | forward-compute: 74.2 | backward-compute: 143.6"));
}

TEST(MegatronLine, MemoryReports) {
  struct Case {
    std::string line;
    int rank, after_iteration;
    double max_allocated_mib, max_reserved_mib;
  };
  const std::vector<Case> cases = {
      {"after 100 iterations memory (MB) | allocated: 3286.48583984375 | max allocated: 5461.34814453125 | cached: "
       "6542.0 | max cached: 6542.0",
       -1, 100, 5461.34814453125, 6542.0},
      {"[default1]:[Rank 17] (after 5 iterations) memory (MB) | allocated: 31137.25 | max allocated: 52933.32 | "
       "reserved: 57910.62 | max reserved: 57910.62",
       17, 5, 52933.32, 57910.62},
      {"[Rank 0] (after 1 iterations) memory (GB) | allocated: 20.5 | max allocated: 40.0 | reserved: 44.0 | max "
       "reserved: 45.0",
       0, 1, 40.0 * 1024, 45.0 * 1024},
  };
  for (const Case& c : cases) {
    auto m = parse_megatron_memory_line(c.line);
    ASSERT_TRUE(m) << c.line;
    EXPECT_EQ(m->rank, c.rank) << c.line;
    EXPECT_EQ(m->after_iteration, c.after_iteration) << c.line;
    EXPECT_DOUBLE_EQ(m->max_allocated_mib, c.max_allocated_mib) << c.line;
    EXPECT_DOUBLE_EQ(m->max_reserved_mib, c.max_reserved_mib) << c.line;
  }

  EXPECT_FALSE(parse_megatron_memory_line(
      "[Rank 0] (before save_checkpoint for iteration 100) memory (MB) | allocated: 1.0 | max allocated: 2.0"));
  EXPECT_FALSE(parse_megatron_memory_line("[E ProcessGroupNCCL.cpp:475] [Rank 5] Watchdog caught collective operation"));
}

TEST(MegatronLog, Format2020) {
  LogJob job = parse("megatron_2020_gpt2_345m.log");
  EXPECT_EQ(job.format.rfind("megatron-lm-2020", 0), 0u) << job.format;
  EXPECT_EQ(job.framework, "Megatron-LM");
  auto its = iterations(job);
  ASSERT_EQ(its.size(), 20u);
  EXPECT_EQ(its.front().iteration, 100);
  EXPECT_EQ(its.back().iteration, 2000);
  EXPECT_EQ(memory_reports(job), 1u);
  EXPECT_EQ(job.launches[0].args.at("tensor_model_parallel_size"), "2");
  EXPECT_EQ(job.launches[0].args.at("fp16"), "True");
  EXPECT_EQ(job.launches[0].first_datetime, "2020-11-20 09:12:44");

  ImportResult r = import_ok("megatron_2020_gpt2_345m.log", "gpt2_345m_v100_tp2.plan.json");
  EXPECT_EQ(r.run.source, "megatron-log");
  EXPECT_EQ(r.run.started_at, "2020-11-20T09:12:44Z");  // no zone in the log, no --tz: as if UTC (warned)
  EXPECT_TRUE(runs_test::has_warning(r.run, "carry no time zone"));
  EXPECT_EQ(r.warmup_excluded, 1);  // the first line averages iterations 1..100
  EXPECT_TRUE(r.run.steps[0].warmup);
  RunSummary s = summarize(r.run.steps, {});
  // 32 x 1024 tokens at ~248 ms on 8 V100 (125 TFLOP/s fp16): 2.27 GFLOP/token -> ~30% MFU.
  EXPECT_NEAR(s.step_time_s, 0.248, 0.002);
  EXPECT_NEAR(s.mfu, 2271713280.0 * 32768 / 0.248 / 8 / 125e12, 0.005);
  EXPECT_NEAR(s.tokens_per_s, 32768 / 0.248, 1000);
  EXPECT_NEAR(s.peak_memory_gib, 6542.0 / 1024, 1e-9);
  EXPECT_FALSE(r.run.steps[0].reported_tflops_per_gpu);  // this version printed no throughput: absent, not 0
  EXPECT_TRUE(r.run.steps[0].peak_memory_gib);           // reported after iteration 100, the first line's
}

TEST(MegatronLog, Format2023WithResumedJob) {
  LogJob job = parse("megatron_2023_llama2_7b_resumed.log");
  EXPECT_EQ(job.format.rfind("megatron-lm-2021", 0), 0u) << job.format;
  ASSERT_EQ(job.launches.size(), 2u);  // one job, resumed once (same configuration, from iteration 100)
  auto its = iterations(job);
  ASSERT_EQ(its.size(), 12u + 20u);
  EXPECT_EQ(job.launches[1].iterations.front().iteration, 110);
  EXPECT_EQ(memory_reports(job), 8u);  // four model-parallel ranks, reported in both attempts

  ImportResult r = import_ok("megatron_2023_llama2_7b_resumed.log", "llama2_7b_a100_tp2_pp2.plan.json");
  ASSERT_EQ(r.run.steps.size(), 32u);
  EXPECT_EQ(r.warmup_excluded, 2);  // iteration 10, and 110 right after the resume from iteration 100
  EXPECT_TRUE(r.run.steps[0].warmup);
  EXPECT_FALSE(r.run.steps[1].warmup);
  EXPECT_TRUE(r.run.steps[12].warmup);
  EXPECT_FALSE(r.run.steps[13].warmup);
  EXPECT_TRUE(runs_test::has_warning(r.run, "restarts at iteration 110"));
  EXPECT_EQ(r.run.software["framework"], "Megatron-LM");
  EXPECT_EQ(r.run.software["transformer_impl"], "transformer_engine");
  RunSummary s = summarize(r.run.steps, {});
  EXPECT_NEAR(s.step_time_s, 8.66, 0.05);
  EXPECT_NEAR(s.mfu, 42863689728.0 * 1048576 / 8.66 / 32 / 312e12, 0.005);  // ~52% on A100
  EXPECT_NEAR(s.peak_memory_gib, 52310.0 / 1024, 1e-9);                     // max over ranks, max reserved
  ASSERT_TRUE(r.run.steps[1].loss);
  EXPECT_NEAR(*r.run.steps[1].loss, 10.4 - 7.8 * (1 - std::exp(-20.0 / 80)), 0.05);
}

TEST(MegatronLog, Format2024ThroughputAndTimestamps) {
  LogJob job = parse("megatron_2024_llama3_8b.log");
  EXPECT_EQ(job.format.rfind("megatron-core-2024", 0), 0u) << job.format;
  auto its = iterations(job);
  ASSERT_EQ(its.size(), 50u);
  EXPECT_EQ(its[0].timestamp.size(), 19u);

  ImportResult r = import_ok("megatron_2024_llama3_8b.log", "llama3_8b_h100_dp8.plan.json");
  EXPECT_EQ(r.warmup_excluded, 10);  // log interval 1: iterations 1..10
  for (int i = 0; i < 50; ++i) EXPECT_EQ(r.run.steps[i].warmup, i < 10) << i;
  RunSummary s = summarize(r.run.steps, {});
  EXPECT_NEAR(s.step_time_s, 16.2, 0.05);
  EXPECT_NEAR(s.mfu, 51470401536.0 * 1048576 / 16.2 / 8 / 989.4e12, 0.003);  // ~42%
  EXPECT_NEAR(s.peak_memory_gib, 66830.0 / 1024, 1e-9);
  // Megatron-LM of 2024 counted full attention: its throughput is ~1.125x mplan's causal FLOPs.
  const StepMetric& m = r.run.steps[20];
  EXPECT_NEAR(*m.reported_tflops_per_gpu / m.tflops_per_gpu, 57912852480.0 / 51470401536.0, 0.01);
  EXPECT_FALSE(runs_test::has_warning(r.run, "reported"));
  EXPECT_EQ(r.run.started_at, "2024-06-12T10:11:02Z");
}

TEST(MegatronLog, Format2025MoeWithRankPrefixes) {
  LogJob job = parse("megatron_2025_mixtral_8x7b.log");
  EXPECT_EQ(job.format.rfind("megatron-core-2025", 0), 0u) << job.format;
  auto its = iterations(job);
  ASSERT_EQ(its.size(), 21u);
  EXPECT_EQ(its[0].iteration, 1);
  EXPECT_EQ(memory_reports(job), 16u);
  EXPECT_EQ(job.launches[0].args.at("expert_model_parallel_size"), "8");

  ImportResult r = import_ok("megatron_2025_mixtral_8x7b.log", "mixtral_8x7b_h100_tp2_pp4_ep8.plan.json");
  // Iteration 1 (its own line), 5 (2..5) and 10 (6..10) fall in the first 10 iterations.
  EXPECT_EQ(r.warmup_excluded, 3);
  EXPECT_TRUE(r.run.steps[2].warmup);
  EXPECT_FALSE(r.run.steps[3].warmup);
  RunSummary s = summarize(r.run.steps, {});
  EXPECT_NEAR(s.step_time_s, 4.4, 0.03);
  EXPECT_NEAR(s.mfu, 79706456064.0 * 1048576 / 4.4 / 64 / 989.4e12, 0.003);  // ~30%
  EXPECT_NEAR(s.peak_memory_gib, 31877.90 * 1.86 * 1.12 / 1024, 0.01);       // second report, last stage
  const StepMetric& m = r.run.steps[10];
  EXPECT_NEAR(*m.reported_tflops_per_gpu / m.tflops_per_gpu, 1.0, 0.01);  // causal convention since 2025
}

TEST(MegatronLog, WarmupRuleIsAdjustable) {
  EXPECT_EQ(import_ok("megatron_2024_llama3_8b.log", "llama3_8b_h100_dp8.plan.json", 0).warmup_excluded, 0);
  EXPECT_EQ(import_ok("megatron_2024_llama3_8b.log", "llama3_8b_h100_dp8.plan.json", 3).warmup_excluded, 3);
  EXPECT_EQ(import_ok("megatron_2020_gpt2_345m.log", "gpt2_345m_v100_tp2.plan.json", 150).warmup_excluded, 2);
  ImportOptions opt;
  opt.warmup_iters = 1000;
  auto all = import_log_job(parse("megatron_2024_llama3_8b.log"), runs_test::load_plan("llama3_8b_h100_dp8.plan.json"), opt);
  ASSERT_FALSE(all.ok());
  EXPECT_NE(all.error().message().find("smaller --warmup"), std::string::npos);
  EXPECT_NE(warmup_rule_text(10).find("first 10 iterations"), std::string::npos);
}

TEST(MegatronLog, PlanThatContradictsTheLogIsRefused) {
  LogJob job = parse("megatron_2024_llama3_8b.log");
  mplan::Plan wrong = runs_test::load_plan("llama2_7b_a100_tp2_pp2.plan.json");
  auto r = import_log_job(job, wrong, {});
  ASSERT_FALSE(r.ok());
  std::string msg = r.error().message();
  EXPECT_NE(msg.find("tensor_model_parallel_size = 1 but the plan has parallel.tp = 2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("seq_length = 8192"), std::string::npos);
  EXPECT_NE(msg.find("--allow-mismatch"), std::string::npos);
  ImportOptions lax;
  lax.allow_mismatch = true;
  auto ok = import_log_job(job, wrong, lax);
  ASSERT_TRUE(ok.ok()) << ok.error().message();
  EXPECT_TRUE(runs_test::has_warning(ok->run, "world_size = 8 but the plan has parallel.world_size = 32"));
}

TEST(MegatronLog, NoIterationLinesIsAnErrorNamingTheFormatsRead) {
  std::istringstream in("hello\n[after megatron is initialized] datetime: 2024-01-01 00:00:00\n");
  std::vector<ScannedLog> files;
  files.push_back(scan_log(in, "x.log"));
  auto r = combine_logs(files);
  ASSERT_FALSE(r.ok());
  std::string msg = r.error().message();
  EXPECT_NE(msg.find("no training iteration lines"), std::string::npos) << msg;
  for (const char* f : {"Megatron-LM", "Megatron-DeepSpeed", "Megatron-Bridge", "NeMo 2.0", "--csv"})
    EXPECT_NE(msg.find(f), std::string::npos) << f;
  EXPECT_FALSE(read_training_logs({"/nonexistent/file.log"}).ok());
}

TEST(MegatronLog, BatchRampUpUsesTheLoggedBatch) {
  std::string text =
      " iteration       10/     100 | consumed samples:          320 | elapsed time per iteration (ms): 1000.0 | "
      "global batch size:    32 | lm loss: 5.0E+00 |\n"
      " iteration       20/     100 | consumed samples:          960 | elapsed time per iteration (ms): 2000.0 | "
      "global batch size:    64 | lm loss: 5.0E+00 |\n"
      " iteration       30/     100 | consumed samples:         2240 | elapsed time per iteration (ms): 4000.0 | "
      "global batch size:   128 | lm loss: 5.0E+00 |\n";
  LogSet set = runs_test::read_log_text(text, "ramp.log");
  ASSERT_EQ(set.jobs.size(), 1u);
  mplan::Plan plan = runs_test::load_plan("llama3_8b_h100_dp8.plan.json");
  ImportOptions opt;
  opt.allow_mismatch = true;  // 4 s per 128 x 8k step on 8 H100 would be > 100% MFU
  auto r = import_log_job(set.jobs.front(), plan, opt);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_TRUE(runs_test::has_warning(r->run, "ramp-up"));
  EXPECT_TRUE(runs_test::has_warning(r->run, "no 'arguments' block"));
  // Same tokens/s at every batch size (time doubles with the batch).
  EXPECT_NEAR(r->run.steps[1].tokens_per_s, r->run.steps[2].tokens_per_s, 1e-6);
  EXPECT_NEAR(r->run.steps[2].tokens_per_s, 128.0 * 8192 / 4.0, 1e-6);
}
