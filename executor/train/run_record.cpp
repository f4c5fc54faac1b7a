// Run provenance (host, git commit, software versions) and the runs database write.
#include "executor/train/run_record.h"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>

#include "core/process.h"
#include "executor/backend/blas_config.h"
#if MPLAN_HAVE_RUNS_DB
#include "runs/runs_db.h"
#endif

namespace mplan::exec {

std::string host_name() {
  char h[256] = {0};
  gethostname(h, sizeof(h) - 1);
  return h;
}

std::string git_commit() {
#ifdef MPLAN_SOURCE_DIR_FOR_GIT
  const std::string dir = MPLAN_SOURCE_DIR_FOR_GIT;
  auto sha = process_output({"git", "-C", dir, "rev-parse", "HEAD"});
  if (!sha) return "unknown";
  while (!sha->empty() && std::isspace(static_cast<unsigned char>(sha->back()))) sha->pop_back();
  if (sha->size() < 7) return "unknown";
  auto changes = process_output({"git", "-C", dir, "status", "--porcelain", "--untracked-files=no"});
  return changes && !changes->empty() ? *sha + "-dirty" : *sha;
#else
  return "unknown";
#endif
}

nlohmann::json software_info(const RunSummary& s) {
  char mpi[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int len = 0;
  MPI_Get_library_version(mpi, &len);
  std::string mpi_s(mpi, size_t(len));
  mpi_s.erase(std::find(mpi_s.begin(), mpi_s.end(), '\0'), mpi_s.end());
  if (auto nl = mpi_s.find('\n'); nl != std::string::npos) mpi_s.resize(nl);
  return {{"compiler", std::string("gcc ") + __VERSION__},
          {"backend", s.backend},
          {"blas_core", blas_corename()},
          {"blas_config", blas_config()},
          {"mpi", mpi_s},
          {"gemm_peak_gflops_per_core", s.peak_gflops},
          {"data", s.data},
          {"world_size", s.world_size},
          {"seed", s.options.seed},
          {"steps", s.options.steps}};
}

std::string write_run_to_db(const std::string& path, const RunSummary& s, const nlohmann::json& prediction) {
#if MPLAN_HAVE_RUNS_DB
  auto db = runs::RunsDb::open(path);
  if (!db) return "--runs-db " + path + ": " + db.error().message();
  runs::RunRecord r;
  r.plan = plan_to_json(s.plan);
  r.plan_key = runs::plan_key(r.plan);
  r.source = "mplan";
  r.host = host_name();
  r.software = software_info(s);
  r.git_commit = git_commit();
  r.started_at = s.started_at;
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const StepMetrics& m = s.steps[i];
    runs::StepMetric sm;
    sm.step = m.step;
    sm.loss = m.loss;
    sm.step_time_s = m.step_time_s;
    sm.tokens_per_s = m.tokens_per_s;
    sm.tflops_per_gpu = m.tflops_per_rank;
    sm.mfu = m.mfu;
    sm.peak_memory_gib = m.peak_memory_gib;
    sm.warmup = i == 0 && s.steps.size() > 1;  // first step: page faults, BLAS buffers
    r.steps.push_back(sm);
  }
  for (const OpStat& o : s.ops) {
    runs::OpTiming t;
    t.op = o.op;
    t.measured_s = o.seconds;
    t.calls = o.calls;
    for (const auto& p : prediction.value("ops", nlohmann::json::array()))
      if (p.value("name", "") == o.op) t.predicted_s = p.value("time_s", 0.0);
    r.ops.push_back(t);
  }
  r.prediction = prediction.is_object() ? prediction : nlohmann::json::object();
  r.tags = {"executor", "cpu"};
  r.status = s.status;
  if (!s.end_reason.empty()) r.warnings.push_back("run " + s.status + ": " + s.end_reason);
  auto id = db.value()->add_run(r);
  if (!id) return "--runs-db " + path + ": " + id.error().message();
  return "";
#else
  (void)s;
  (void)prediction;
  return "--runs-db " + path + ": this mplan was built without the runs database library (mplan_runs)";
#endif
}

}  // namespace mplan::exec
