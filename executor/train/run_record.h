// The runs-database record of a finished training run (plan, provenance, per-step metrics, per-op
// timings by vocabulary name) and its write through runs/runs_db.h when the build has mplan_runs.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "executor/train/run.h"

namespace mplan::exec {

std::string host_name();
// The source tree's git commit ("<sha>" or "<sha>-dirty"), or "unknown".
std::string git_commit();
// Compiler, BLAS, MPI versions of this build.
nlohmann::json software_info(const RunSummary& s);

// Writes the run into the SQLite runs database at `path` (created when missing). `prediction` is the
// simulator's report for the plan, or empty. Returns "" or an error message.
std::string write_run_to_db(const std::string& path, const RunSummary& s, const nlohmann::json& prediction);

}  // namespace mplan::exec
