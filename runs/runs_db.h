// Runs database (SQLite): measured training runs with their plan, provenance, per-step metrics,
// per-op timings and the simulator's prediction at the time of the run. Written by `mplan train`
// and `mplan runs import`, read by `mplan runs`, `mplan regress` and the GUI.
//
// Contract used by the executor (keep these names and meanings): RunRecord, StepMetric, OpTiming,
// RunsDb::open, RunsDb::add_run.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace mplan::runs {

struct StepMetric {
  int step = 0;
  std::optional<double> loss;  // absent when the log printed none (stored as NULL; schema 3)
  double step_time_s = 0;
  double tokens_per_s = 0;                // whole job
  double tflops_per_gpu = 0;              // model FLOPs (causal-halved), per GPU
  double mfu = 0;                         // 0..1 against the device's peak used for the run
  std::optional<double> peak_memory_gib;  // max over ranks; absent when no memory report covers the step
  // Added in schema 2:
  bool warmup = false;                            // excluded from the run's summary (see docs/runs.md, warm-up rule)
  std::optional<double> reported_tflops_per_gpu;  // as printed by the framework in its own FLOP convention
  // Added in schema 3:
  bool skipped = false;  // every iteration of the interval skipped (fp16 overflow) or a NaN: not measured
  std::optional<double> reported_tokens_per_s_per_gpu;  // as printed (Megatron-DeepSpeed "tgs")
  bool measured() const { return !warmup && !skipped; }
};

struct OpTiming {
  std::string op;          // op vocabulary name (core/ops.h)
  double measured_s = 0;   // total per step (median over steps), on the slowest rank
  double predicted_s = 0;  // simulator's prediction for the same op, 0 when unknown
  int64_t calls = 0;       // calls per step
};

// Medians over the measured (non-warm-up) steps of a run; computed by add_run from the steps and
// stored with the run, so listing runs needs no step rows.
struct RunSummary {
  int steps_total = 0;
  int steps_measured = 0;      // steps neither warm-up nor skipped
  double step_time_s = 0;      // median
  double tokens_per_s = 0;     // median
  double tflops_per_gpu = 0;   // median
  double mfu = 0;              // median: the run's MFU
  double mfu_spread = 0;       // within-run noise: 1.4826 x MAD of the measured steps' MFU
  double peak_memory_gib = 0;  // max over all steps; 0 = no step has a memory figure
  double predicted_mfu = 0;    // prediction["mfu"], 0 when no prediction is stored
};

struct RunRecord {
  int64_t id = 0;                // assigned by add_run
  nlohmann::json plan;           // the mplan.plan/1 document that was run
  std::string plan_key;          // stable key of model+layout (runs of "the same plan" share it)
  std::string source = "mplan";  // mplan | megatron-log | csv
  std::string host;
  nlohmann::json software = nlohmann::json::object();  // versions: compiler, BLAS, MPI, CUDA, driver ...
  std::string git_commit;
  std::string started_at;  // ISO 8601 UTC
  std::vector<StepMetric> steps;
  std::vector<OpTiming> ops;
  nlohmann::json prediction = nlohmann::json::object();  // simulator output for the plan (may be empty)
  std::vector<std::string> tags;
  // Added in schema 2:
  std::string source_file;            // imported file (empty for mplan runs)
  std::vector<std::string> warnings;  // import notes (plan/log mismatches, batch ramp-up ...)
  RunSummary summary;                 // filled by add_run / get_run / list_runs (input value ignored)
  // Added in schema 3:
  int source_job = 0;  // which job of a multi-job log file (1-based); 0 = the file held one job
  // Added in schema 4: how the run ended. completed | aborted (killed: signal, launcher gone) |
  // diverged (non-finite loss) | failed (e.g. a checkpoint could not be written). Imports and runs
  // stored before schema 4 are "completed"; regressions compare completed runs only.
  std::string status = "completed";
};

// Key of a plan: model name + dimensions + cluster + layout + batch, independent of meta fields.
std::string plan_key(const nlohmann::json& plan);
// Short human label of a plan: "llama3-8b H100-SXM5-80GB x8 tp2 pp1 dp4 mbs1 gbs128 seq8192 bf16".
std::string plan_label(const nlohmann::json& plan);
// Summary of steps (medians over measured steps: neither warm-up nor skipped); predicted_mfu taken
// from `prediction`.
RunSummary summarize(const std::vector<StepMetric>& steps, const nlohmann::json& prediction);

// The schema version this build writes (PRAGMA user_version). Older files are migrated on open.
constexpr int kRunsSchemaVersion = 4;
// The values of RunRecord::status.
bool valid_run_status(const std::string& status);

class RunsDb {
 public:
  // Opens (creating or migrating) the database at `path`. A newer schema, a foreign or corrupt file
  // is an error naming the path and what to do; the file is left untouched.
  // One RunsDb object per thread; any number of processes may open the same file.
  static Expected<std::unique_ptr<RunsDb>> open(const std::string& path);
  // Added: like open, but a missing file is an error instead of a new database (for readers such
  // as `mplan regress`, where a mistyped path must not pass as "no runs").
  static Expected<std::unique_ptr<RunsDb>> open_existing(const std::string& path);
  virtual ~RunsDb() = default;

  // Inserts a run with its steps and ops in one transaction; returns its id.
  virtual Expected<int64_t> add_run(const RunRecord& run) = 0;
  // Added: inserts several runs in one transaction (all or none); returns their ids in order.
  virtual Expected<std::vector<int64_t>> add_runs(const std::vector<RunRecord>& runs) = 0;
  virtual Expected<RunRecord> get_run(int64_t id) = 0;
  // Runs (without steps/ops) newest first; empty key = all plans.
  virtual Expected<std::vector<RunRecord>> list_runs(const std::string& plan_key = "") = 0;
  virtual Status tag_run(int64_t id, const std::string& tag) = 0;
  // Added: removes a tag (no error when the run does not carry it; error when the run is unknown).
  virtual Status untag_run(int64_t id, const std::string& tag) = 0;
  virtual const std::string& path() const = 0;
};

}  // namespace mplan::runs
