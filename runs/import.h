// Turning measured logs into runs: Megatron-LM logs and CSV files become RunRecords whose per-step
// metrics are derived from the measured step time and the plan (one FLOP convention for every
// source), with warm-up steps flagged by one stated rule.
#pragma once
#include <string>
#include <vector>

#include "core/plan.h"
#include "core/status.h"
#include "runs/megatron_log.h"
#include "runs/runs_db.h"

namespace mplan::runs {

struct ImportOptions {
  // Warm-up: a measurement is warm-up when the iterations it averages over include any of the first
  // `warmup_iters` iterations after the job (re)started. 0 keeps everything.
  int warmup_iters = 10;
  // Import even when the log's arguments contradict the plan (the mismatches become run warnings).
  bool allow_mismatch = false;
};

// The warm-up rule in words, for command output and docs.
std::string warmup_rule_text(int warmup_iters);

struct ImportResult {
  RunRecord run;               // plan, plan_key, source, steps (with warm-up flags), started_at, warnings
  int warmup_excluded = 0;     // steps flagged warm-up
  std::string format;          // detected log format
};

// Megatron-LM log -> run. Checks the log's arguments block (when present) against the plan.
Expected<ImportResult> import_megatron_log(const MegatronLog& log, const Plan& plan, const ImportOptions& opt);

// CSV -> run. Columns (header row, any order, case-insensitive): step, step_time_s (or tokens_per_s)
// required; tokens_per_s, tflops_per_gpu, mfu, peak_memory_gib, loss optional. See docs/runs.md.
Expected<ImportResult> import_csv(const std::string& text, const std::string& name, const Plan& plan,
                                  const ImportOptions& opt);

// Model FLOPs of one step of the plan (Megatron-LM convention, causal attention halved) for
// `global_batch` sequences, and the plan's dense peak per GPU in TFLOP/s.
double plan_flops_per_step(const Plan& plan, int64_t global_batch);
Expected<double> plan_peak_tflops(const Plan& plan);

}  // namespace mplan::runs
