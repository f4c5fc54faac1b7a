// Fuzz entry points (see fuzz_targets.h). Inputs larger than the readers' caps never reach them in
// the CLI, so they are cut to 1 MiB here; files go through a private temporary directory.
#include "tests/fuzz/fuzz_targets.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "core/counting.h"
#include "core/hf_import.h"
#include "core/json_fields.h"
#include "core/plan.h"
#include "core/presets.h"
#include "core/strict_json.h"
#include "profiles/calibrate.h"
#include "profiles/profile_db.h"
#include "runs/import.h"
#include "runs/log_jobs.h"
#include "runs/log_scan.h"
#include "runs/run_json.h"
#include "runs/runs_db.h"
#include "simulator/cost_params.h"
#include "simulator/published.h"
#include "simulator/simulator.h"
#include "simulator/validate.h"
#include "tests/core/plan_fixture.h"

namespace mplan::fuzz {

namespace {

constexpr size_t kMaxInput = size_t(1) << 20;

std::string text_of(const uint8_t* d, size_t n) { return std::string(reinterpret_cast<const char*>(d), std::min(n, kMaxInput)); }

// A finding: the fuzzer stops here (abort) and keeps the input.
[[noreturn]] void bug(const std::string& what) {
  std::fprintf(stderr, "fuzz finding: %s\n", what.c_str());
  std::abort();
}

void check_finite_report(const StepReport& r) {
  for (double v : {r.step_time_s, r.tokens_per_s_per_gpu, r.mfu, r.peak_memory_gib, r.bubble_fraction})
    if (!std::isfinite(v) || v < 0) bug("simulate returned a non-finite or negative headline number");
  if (r.mfu > 1.0 + 1e-9) bug("simulate returned MFU above 100%");
  (void)dump_json(report_to_json(r));
}

const Plan& small_plan() {
  static const Plan p = preset_plan("llama3-8b", 8, 64, 2048, 8, 1);
  return p;
}

// A private file for parsers that take paths (removed after each input).
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& bytes, const char* suffix) {
    path = (std::getenv("TMPDIR") ? std::string(std::getenv("TMPDIR")) : std::string("/tmp")) + "/mplan_fuzz_" +
           std::to_string(::getpid()) + suffix;
    std::ofstream(path, std::ios::binary) << bytes;
  }
  ~TempFile() {
    std::remove(path.c_str());
    for (const char* side : {"-wal", "-shm", "-journal"}) std::remove((path + side).c_str());
  }
};

// What a JSON input `file` reads into, written back once (the writer must take whatever the reader
// accepted); nothing when the text is not JSON or the reader refuses it.
template <class Read, class Write>
auto read_and_write(const uint8_t* d, size_t n, const char* file, const Read& read, const Write& write) {
  using T = std::decay_t<decltype(read(nlohmann::json()).value())>;
  std::vector<std::string> problems;
  auto j = parse_json_text(text_of(d, n), file, problems);
  if (!j) return std::optional<T>();
  auto v = read(*j);
  if (!v) return std::optional<T>();
  (void)dump_json(write(*v));
  return std::optional<T>(std::move(*v));
}

// What the CLI does with an accepted model: count, FLOPs, print, simulate a small job.
void use_model(const ModelSpec& m) {
  auto c = count_params(m);
  (void)model_flops_per_token(m, 2048, AttentionFlops::causal);
  (void)dump_json(model_to_json(m));
  if (!std::isfinite(c.total) || c.total <= 0) bug("count_params gave a non-finite or non-positive total");
  Plan p = small_plan();
  p.model = m;
  p.parallel = ParallelConfig{};
  p.parallel.world_size = 8;
  if (auto r = simulate(p, default_cost_params(p.cluster))) check_finite_report(*r);
}

}  // namespace

const std::vector<Target>& targets() {
  static const std::vector<Target> t = {{"model_json", &model_json},
                                        {"hf_config", &hf_config},
                                        {"cluster_json", &cluster_json},
                                        {"plan_json", &plan_json},
                                        {"calibration_json", &calibration_json},
                                        {"published_csv", &published_csv},
                                        {"runs_csv", &runs_csv},
                                        {"megatron_log", &megatron_log},
                                        {"profile_db", &profile_db}};
  return t;
}

int model_json(const uint8_t* d, size_t n) {
  std::vector<std::string> problems;
  auto j = parse_json_text(text_of(d, n), "model.json", problems);
  if (!j) return 0;
  auto m = model_from_json(*j);
  if (m) use_model(*m);
  return 0;
}

int hf_config(const uint8_t* d, size_t n) {
  std::vector<std::string> problems;
  auto j = parse_json_text(text_of(d, n), "config.json", problems);
  if (!j || !looks_like_hf_config(*j)) return 0;
  auto m = hf_model_from_config(*j, "fuzz");
  if (m) use_model(*m);
  return 0;
}

int cluster_json(const uint8_t* d, size_t n) {
  auto c = read_and_write(d, n, "cluster.json", cluster_from_json, cluster_to_json);
  if (!c) return 0;
  Plan p = small_plan();
  p.cluster = *c;
  if (p.cluster.gpu.peak(p.training.precision)) {
    if (auto r = simulate(p, default_cost_params(p.cluster))) check_finite_report(*r);
  }
  return 0;
}

int plan_json(const uint8_t* d, size_t n) {
  auto p = read_and_write(d, n, "plan.json", plan_from_json, plan_to_json);
  if (!p) return 0;
  SimOptions so;
  so.trace = true;
  if (auto r = simulate(*p, default_cost_params(p->cluster), so)) {
    check_finite_report(*r);
    (void)dump_json(trace_to_json(*r, *p));
  }
  return 0;
}

int calibration_json(const uint8_t* d, size_t n) {
  auto c = read_and_write(
      d, n, "calibration.json", [](const nlohmann::json& j) { return calibration_from_json(j, shipped_calibration().params); },
      calibration_to_json);
  if (!c) return 0;
  (void)calibration_mismatch(*c, small_plan().cluster.gpu);
  if (auto r = simulate(small_plan(), c->params_for(small_plan().cluster.gpu))) check_finite_report(*r);
  return 0;
}

int published_csv(const uint8_t* d, size_t n) {
  TempFile f(text_of(d, n), ".csv");
  auto rows = read_csv_file(f.path);
  if (!rows || rows->size() > 50) return 0;  // scoring simulates every row: keep an input fast
  ParamsFor params = [](const Plan& p) { return default_cost_params(p.cluster); };
  auto rep = validate_throughput(*rows, params);
  for (const auto& x : rep.rows)
    if (!x.skipped && (!std::isfinite(x.predicted) || !std::isfinite(x.error_pct))) bug("validate: non-finite row");
  (void)validate_memory(*rows, params);
  return 0;
}

int runs_csv(const uint8_t* d, size_t n) {
  runs::ImportOptions io;
  auto res = runs::import_csv(text_of(d, n), "runs.csv", small_plan(), io);
  if (!res) return 0;
  auto db = runs::RunsDb::open(":memory:");
  if (!db) bug("cannot open an in-memory runs database: " + db.error().message());
  if (auto id = db.value()->add_run(res->run)) (void)db.value()->get_run(*id);
  return 0;
}

int megatron_log(const uint8_t* d, size_t n) {
  // what `runs import --megatron-log FILE` does: scan, group into jobs, import every job, store
  std::istringstream in(text_of(d, n));
  std::vector<runs::ScannedLog> files;
  files.push_back(runs::scan_log(in, "train.log"));
  auto set = runs::combine_logs(files);
  if (!set) return 0;
  runs::ImportOptions io;
  io.allow_mismatch = true;
  auto db = runs::RunsDb::open(":memory:");
  if (!db) bug("cannot open an in-memory runs database: " + db.error().message());
  for (const auto& job : set->jobs) {
    (void)runs::describe_job(job);
    auto res = runs::import_log_job(job, small_plan(), io);
    if (!res) continue;
    auto id = db.value()->add_run(res->run);
    if (!id) continue;
    auto back = db.value()->get_run(*id);
    if (!back) bug("a run just stored cannot be read back: " + back.error().message());
    (void)dump_json(runs::run_to_json(*back, true, true));
  }
  return 0;
}

int profile_db(const uint8_t* d, size_t n) {
  TempFile f(text_of(d, n), ".db");
  auto db = profiles::ProfileDb::open(f.path, profiles::OpenMode::read_only);
  if (!db) return 0;
  profiles::CalibrateOptions o;
  o.db = f.path;
  o.store = false;
  if (auto r = profiles::calibrate(o)) (void)dump_json(calibration_to_json(r->calibration));
  return 0;
}

}  // namespace mplan::fuzz
