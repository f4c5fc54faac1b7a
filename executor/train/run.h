// The body of `mplan train` on every rank of an MPI job: creates the Trainer, runs the steps,
// prints one line per step on rank 0 (table or JSON), checkpoints, stops on a non-finite loss,
// and hands the finished run to a sink (the runs database writer) on rank 0.
#pragma once
#include <mpi.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "executor/train/abort_guard.h"
#include "executor/train/trainer.h"

namespace mplan::exec {

// Exit codes of a training job (besides 0 and 2 = bad input).
constexpr int kExitDiverged = 3;  // non-finite loss or gradient: stopped, last good checkpoint kept

struct RunSummary {
  Plan plan;
  TrainOptions options;
  std::vector<StepMetrics> steps;
  std::vector<OpStat> ops;  // per step: median over the measured steps (the first is a warm-up when > 1)
  double peak_gflops = 0;
  std::string backend, data, started_at;
  int world_size = 1;
  // How the run ended: completed | aborted (signal, launcher gone) | diverged | failed (checkpoint).
  std::string status = "completed";
  std::string end_reason;  // e.g. "SIGTERM", "step 12: loss is nan"
};

struct RunOutput {
  std::string format = "table";  // table | json
  std::ostream* out = nullptr;   // per-step lines (rank 0)
  std::ostream* info = nullptr;  // banners and messages (rank 0)
  // called on rank 0 when the run ends, successfully or not (status in the summary), e.g. to store it in
  // the runs database; returns an error message or ""
  std::function<std::string(const RunSummary&)> sink;
  // when set, a signal or the loss of the launcher ends the job with the run recorded as "aborted"
  AbortGuard* abort = nullptr;
};

// The summary as JSON (what `mplan train --summary-out` writes and `mplan verify` reads): plan,
// per-step metrics, median per-op times, backend.
nlohmann::json summary_to_json(const RunSummary& s);

// Runs the job on `base` (MPI must be initialised). Returns the process exit code.
int train_job(const Plan& plan, const TrainOptions& opt, const RunOutput& out, MPI_Comm base = MPI_COMM_WORLD);

// Median per-op times over steps (skipping the first when there are several).
std::vector<OpStat> median_ops(const std::vector<StepMetrics>& steps);

}  // namespace mplan::exec
