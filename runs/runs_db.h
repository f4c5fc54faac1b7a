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
#include <string>
#include <vector>

#include "core/status.h"

namespace mplan::runs {

struct StepMetric {
  int step = 0;
  double loss = 0;
  double step_time_s = 0;
  double tokens_per_s = 0;    // whole job
  double tflops_per_gpu = 0;  // model FLOPs (causal-halved), per GPU
  double mfu = 0;             // 0..1 against the device's peak used for the run
  double peak_memory_gib = 0; // max over ranks
};

struct OpTiming {
  std::string op;          // op vocabulary name (core/ops.h)
  double measured_s = 0;   // total per step (median over steps), on the slowest rank
  double predicted_s = 0;  // simulator's prediction for the same op, 0 when unknown
  int64_t calls = 0;       // calls per step
};

struct RunRecord {
  int64_t id = 0;                  // assigned by add_run
  nlohmann::json plan;             // the mplan.plan/1 document that was run
  std::string plan_key;            // stable key of model+layout (runs of "the same plan" share it)
  std::string source = "mplan";    // mplan | megatron-log | csv
  std::string host;
  nlohmann::json software = nlohmann::json::object();  // versions: compiler, BLAS, MPI, CUDA, driver ...
  std::string git_commit;
  std::string started_at;          // ISO 8601 UTC
  std::vector<StepMetric> steps;
  std::vector<OpTiming> ops;
  nlohmann::json prediction = nlohmann::json::object();  // simulator output for the plan (may be empty)
  std::vector<std::string> tags;
};

// Key of a plan: model name + dimensions + cluster + layout + batch, independent of meta fields.
std::string plan_key(const nlohmann::json& plan);

class RunsDb {
 public:
  // Opens (creating or migrating) the database at `path`. A newer schema, a foreign or corrupt file
  // is an error naming the path and what to do; the file is left untouched.
  static Expected<std::unique_ptr<RunsDb>> open(const std::string& path);
  virtual ~RunsDb() = default;

  // Inserts a run with its steps and ops in one transaction; returns its id.
  virtual Expected<int64_t> add_run(const RunRecord& run) = 0;
  virtual Expected<RunRecord> get_run(int64_t id) = 0;
  // Runs (without steps/ops) newest first; empty key = all plans.
  virtual Expected<std::vector<RunRecord>> list_runs(const std::string& plan_key = "") = 0;
  virtual Status tag_run(int64_t id, const std::string& tag) = 0;
};

}  // namespace mplan::runs
