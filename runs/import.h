// Turning measured logs into runs: the jobs of Megatron-LM / Megatron-DeepSpeed / Megatron-Bridge /
// NeMo logs and CSV files become RunRecords whose per-step metrics are derived from the measured
// step time and the plan (one FLOP convention for every source), with warm-up steps flagged by one
// stated rule, skipped intervals left out, the log's configuration checked against the plan and
// the resulting MFU checked for plausibility.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/plan.h"
#include "core/status.h"
#include "runs/log_jobs.h"
#include "runs/runs_db.h"
#include "runs/time_zone.h"

namespace mplan::runs {

struct ImportOptions {
  // Warm-up: a measurement is warm-up when the iterations it averages over include any of the first
  // `warmup_iters` iterations after the job (re)started. 0 keeps everything.
  int warmup_iters = 10;
  // Import even when the log's configuration contradicts the plan or the MFU is implausible (the
  // problems become run warnings).
  bool allow_mismatch = false;
  // Zone of the log's local times when the log states none (--tz).
  std::optional<TimeZone> tz;
};

// The warm-up rule in words, for command output and docs.
std::string warmup_rule_text(int warmup_iters);

struct ImportResult {
  RunRecord run;             // plan, plan_key, source, steps (with warm-up flags), started_at, warnings
  int warmup_excluded = 0;   // steps flagged warm-up
  int skipped_excluded = 0;  // steps flagged skipped (all iterations skipped, or NaN)
  std::string format;        // detected log format
  std::string framework;     // Megatron-LM | Megatron-DeepSpeed | Megatron-Bridge | NeMo | csv
  std::string job;           // describe_job() of the imported job ("" for CSV)
};

// One job of a log -> run. Errors (unless allow_mismatch): the configuration differs from the plan,
// the MFU exceeds 100% of the plan GPU's dense peak, or the framework's own TFLOP/s figure lies
// outside the band around mplan's (see kReportedBand in import.cpp and docs/runs.md).
Expected<ImportResult> import_log_job(const LogJob& job, const Plan& plan, const ImportOptions& opt);

// CSV -> run. Columns (header row, any order, case-insensitive): step, step_time_s (or tokens_per_s)
// required; tokens_per_s, tflops_per_gpu, mfu, peak_memory_gib, loss optional. See docs/runs.md.
Expected<ImportResult> import_csv(const std::string& text, const std::string& name, const Plan& plan, const ImportOptions& opt);

// Model FLOPs of one step of the plan (Megatron-LM convention, causal attention halved) for
// `global_batch` sequences, and the plan's dense peak per GPU in TFLOP/s.
double plan_flops_per_step(const Plan& plan, int64_t global_batch);
Expected<double> plan_peak_tflops(const Plan& plan);

// Plausibility of a run against its plan: median MFU above 1 (100% of the dense peak), or the
// framework's reported TFLOP/s per GPU outside [lo, hi] x mplan's. Returns the problems found.
struct ReportedBand {
  double lo = 0, hi = 0;  // reported / computed (causal) bounds
  std::string why;        // how the bounds were obtained
};
ReportedBand reported_band(const Plan& plan, const std::string& framework, bool full_recompute);
std::vector<std::string> plausibility_problems(const std::vector<StepMetric>& steps, const Plan& plan, const ReportedBand& band);

// started_at in UTC from a host-local time, the zone the log states (if any) and --tz; notes go to
// `warnings`. "" when `local` is empty.
std::string local_time_to_utc(const std::string& local, const std::optional<StatedZone>& stated,
                              const std::optional<TimeZone>& tz, std::vector<std::string>& warnings);

}  // namespace mplan::runs
