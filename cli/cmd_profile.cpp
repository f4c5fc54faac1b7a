// `mplan profile`: measure kernels and collectives into a profile database (CPU: OpenBLAS + MPI;
// CUDA: CUPTI), or import a shipped GPU profile. `mplan calibrate`: fit the cost model to a profile
// and write "mplan.calibration/1" (and, for a CPU profile, the local-cpu cluster).
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "cli/commands.h"
#include "cli/table.h"
#include "core/bounded_input.h"
#include "core/json_fields.h"
#include "core/strict_json.h"
#include "profiles/calibrate.h"
#include "profiles/cpu_profiler.h"
#include "profiles/cuda_profiler.h"
#include "profiles/host_info.h"
#include "profiles/launcher.h"
#include "profiles/runs_fit.h"
#include "profiles/shipped.h"
#if defined(MPLAN_HAVE_BACKEND_OP_KERNELS)
#include "executor/backend/backend_factory.h"
#include "executor/backend/cuda/op_kernels.h"
#endif

namespace mplan::cli {

namespace {

using namespace mplan::profiles;

struct ProfileOptions {
  std::string backend;
  std::string db;
  bool quick = false;
  bool no_collectives = false;
  bool no_kernels = false;
  bool no_progress = false;
  int ranks = 0;
  std::string cluster;
  std::string emit_cluster;
  std::string import;
  std::string export_sql;
  std::string device;
  std::string mpi_worker;  // "DEVICE:SESSION" (internal: ranks started by mplan under mpirun)
};

struct CalibrateCliOptions {
  CalibrateOptions c;
  std::string runs;
  std::string out;
  std::string emit_cluster;
  std::string format = "table";
};

std::string command_line(const std::string& sub) { return "mplan " + sub; }

std::string g3(double v) {
  std::ostringstream o;
  o.precision(3);
  o << v;
  return o.str();
}

void write_json(const std::string& path, const nlohmann::json& j, const std::string& what) {
  std::string e = write_text_file_atomic(path, dump_json(j, 2) + "\n");
  if (!e.empty()) throw InputError{e};
  std::cerr << "wrote " << what << " to " << path << "\n";
}

void print_fit(const CalibrateResult& r) {
  std::cout << "device " << r.device.id << ": " << r.device.name << " (" << r.device.kind << ", " << r.device.source << ")\n"
            << "cluster: " << r.cluster.name << "; rows: " << r.kernel_rows << " kernel, " << r.collective_rows
            << " collective\n\n";
  TextTable t({"op class", "rows", "fitted parameters", "MAPE", "median", "p90", "max"});
  for (const auto& c : r.fit.classes) {
    std::string ps;
    for (const auto& [k, v] : c.params) ps += (ps.empty() ? "" : " ") + k + "=" + g3(v);
    if (c.error.rows == 0) {
      t.add_row({c.name, "0", c.note, "-", "-", "-", "-"});
      continue;
    }
    t.add_row({c.name, std::to_string(c.error.rows), ps, fmt_pct(c.error.mape), fmt_pct(c.error.median_ape),
               fmt_pct(c.error.p90_ape), fmt_pct(c.error.max_ape)});
  }
  std::cout << t.render() << "\n";
  TextTable o({"op", "rows", "MAPE", "p90", "max"});
  for (const auto& [name, e] : r.fit.per_op)
    o.add_row({name, std::to_string(e.rows), fmt_pct(e.mape), fmt_pct(e.p90_ape), fmt_pct(e.max_ape)});
  std::cout << "fit error per op (same parameters):\n" << o.render();
  std::cout << "per-step latency: scale-up " << g3(r.cluster.scale_up_latency_us) << " us, scale-out "
            << g3(r.cluster.scale_out_latency_us) << " us\n";
}

void print_runs(const RunsFitResult& r, const std::string& file) {
  std::cout << "\nend-to-end runs (" << file << "): " << r.rows_used << " of " << r.rows_in_file
            << " rows are clean rows of this GPU\n";
  for (const auto& n : r.notes) std::cout << "  " << n << "\n";
  if (r.rows_used == 0) return;
  std::string ps;
  for (const auto& [k, v] : r.fitted) ps += (ps.empty() ? "" : " ") + k + "=" + g3(v);
  std::cout << "fitted: " << ps << "\n";
  TextTable t({"run family", "rows", "MAPE before", "MAPE after"});
  t.add_row({"all", std::to_string(r.overall.rows), fmt(r.overall.mape_before, 1) + "%", fmt(r.overall.mape_after, 1) + "%"});
  for (const auto& [fam, e] : r.by_family)
    t.add_row({fam, std::to_string(e.rows), fmt(e.mape_before, 1) + "%", fmt(e.mape_after, 1) + "%"});
  std::cout << t.render();
}

int run_calibrate(const CalibrateCliOptions& o) {
  if (o.c.db.empty() == o.c.shipped.empty()) throw InputError{"give exactly one of --db FILE or --shipped NAME"};
  auto r = calibrate(o.c);
  if (!r) throw InputError{r.error().message()};
  CalibrateResult res = std::move(r).value();
  std::optional<RunsFitResult> runs;
  if (!o.runs.empty()) {
    auto rf = fit_runs_csv(o.runs, res.cluster, res.calibration);
    if (!rf) throw InputError{rf.error().message()};
    runs = *rf;
    nlohmann::json fam = nlohmann::json::object();
    for (const auto& [k, e] : rf->by_family)
      fam[k] = {{"rows", e.rows}, {"mape_before_pct", e.mape_before}, {"mape_after_pct", e.mape_after}};
    nlohmann::json fitted = nlohmann::json::object();
    for (const auto& [k, v] : rf->fitted) fitted[k] = v;
    res.calibration.fit["runs"] = {{"file", o.runs},
                                   {"rows_in_file", rf->rows_in_file},
                                   {"rows_used", rf->rows_used},
                                   {"fitted", fitted},
                                   {"mape_before_pct", rf->overall.mape_before},
                                   {"mape_after_pct", rf->overall.mape_after},
                                   {"by_family", fam},
                                   {"notes", rf->notes}};
  }
  if (o.format == "json") {
    std::cout << dump_json(calibration_to_json(res.calibration), 2) << "\n";
  } else {
    print_fit(res);
    if (runs) print_runs(*runs, o.runs);
  }
  if (!o.out.empty()) write_json(o.out, calibration_to_json(res.calibration), "calibration");
  if (!o.emit_cluster.empty()) write_json(o.emit_cluster, cluster_to_json(res.cluster), "cluster " + res.cluster.name);
  return kExitOk;
}

int run_import(const ProfileOptions& o) {
  std::vector<std::string> names;
  if (o.import == "all")
    names = shipped_profile_names();
  else
    names.push_back(o.import);
  auto opened = ProfileDb::open(o.db);
  if (!opened) throw InputError{opened.error().message()};
  ProfileDb& db = opened.value();
  for (const auto& n : names) {
    std::string sql, what;
    if (n.size() > 4 && n.compare(n.size() - 4, 4, ".sql") == 0) {
      std::vector<std::string> problems;
      auto text = read_input_file(n, kMaxTableInputBytes, problems);
      if (!text) throw InputError{"--import " + problems.front()};
      sql = *text, what = n;
    } else {
      auto s = shipped_profile_sql(n);
      if (!s) throw InputError{s.error().message()};
      sql = *s, what = "profiles/data/" + n + ".sql";
    }
    auto ids = import_profile_sql(db, sql, what);
    if (!ids) throw InputError{ids.error().message()};
    std::cout << "imported " << what << " into " << o.db << " as device " << ids->front() << "\n";
  }
  return kExitOk;
}

void emit_cluster_after_profile(const std::string& db, int64_t device, const std::string& path) {
  CalibrateOptions c;
  c.db = db;
  c.device = std::to_string(device);
  auto r = calibrate(c);
  if (!r) throw InputError{"profile kept, but the cluster could not be derived: " + r.error().message()};
  write_json(path, cluster_to_json(r->cluster), "cluster " + r->cluster.name);
}

int run_export(const ProfileOptions& o) {
  auto db = ProfileDb::open(o.db, OpenMode::read_only);
  if (!db) throw InputError{db.error().message()};
  auto dev = select_device(*db, o.device);
  if (!dev) throw InputError{dev.error().message()};
  auto sql = export_profile_sql(*db, dev->id);
  if (!sql) throw InputError{sql.error().message()};
  std::string e = write_text_file_atomic(o.export_sql, *sql);
  if (!e.empty()) throw InputError{e};
  std::cerr << "wrote device " << dev->id << " of " << o.db << " to " << o.export_sql << "\n";
  return kExitOk;
}

int run_profile(const ProfileOptions& o) {
  if (!o.export_sql.empty()) {
    if (!o.backend.empty() || !o.import.empty()) throw InputError{"--export-sql takes neither --backend nor --import"};
    return run_export(o);
  }
  if (!o.import.empty()) {
    if (!o.backend.empty()) throw InputError{"--import loads a shipped profile; it takes no --backend"};
    return run_import(o);
  }
  if (o.backend.empty()) throw InputError{"--backend cpu|cuda is required (or --import NAME to load a shipped profile)"};
  if (o.backend == "cuda") {
    CudaProfileOptions c;
    c.db = o.db, c.quick = o.quick, c.collectives = !o.no_collectives, c.progress = !o.no_progress;
    c.cluster = o.cluster, c.command = command_line("profile --backend cuda");
#if defined(MPLAN_HAVE_BACKEND_OP_KERNELS)
    // the attention and memory-bound rows time the executor's own kernels (its CUDA backend ops)
    std::unique_ptr<OpKernels> own;
    if (exec::cuda_device_count() > 0 && !std::getenv("MPLAN_PROFILE_OWN_KERNELS")) {  // =1: the profiler's bf16 kernels
      std::string why;
      own = exec::make_backend_op_kernels(0, &why);
      if (!own) throw InputError{why};
      c.ops = own.get();
    }
#endif
    auto r = run_cuda_profile(c);
    if (!r) throw InputError{r.error().message()};
    for (const auto& n : r->notes) std::cerr << "note: " << n << "\n";
    std::cout << "device " << r->device_id << ": " << r->kernel_rows << " kernel rows, " << r->collective_rows
              << " collective rows in " << o.db << "\n";
    return r->interrupted ? 130 : kExitOk;
  }
  CpuProfileOptions c;
  c.db = o.db, c.quick = o.quick, c.kernels = !o.no_kernels, c.collectives = !o.no_collectives;
  c.max_ranks = o.ranks, c.progress = !o.no_progress;
  c.command = command_line("profile --backend cpu") + (o.quick ? " --quick" : "");
  ensure_blas_environment();
  if (!o.mpi_worker.empty() || under_mpi()) {
#ifdef MPLAN_PROFILES_HAVE_MPI
    int64_t dev = 0, sess = 0;
    if (!o.mpi_worker.empty() && std::sscanf(o.mpi_worker.c_str(), "%ld:%ld", &dev, &sess) != 2)
      throw InputError{"--mpi-worker expects DEVICE:SESSION"};
    return mpi_profile_main(c, dev, sess);
#else
    throw InputError{"this mplan was built without MPI: it cannot run as an MPI rank"};
#endif
  }
  auto r = run_cpu_profile(c);
  if (!r) throw InputError{r.error().message()};
  for (const auto& n : r->notes) std::cerr << "note: " << n << "\n";
  std::cout << "device " << r->device_id << " in " << o.db << ": " << r->kernel_rows << " kernel rows, " << r->collective_rows
            << " collective rows";
  if (r->kernel_rows > 0)
    std::cout << "; best GEMM " << fmt(r->peak_gflops, 1) << " GFLOP/s per core, memory " << fmt(r->memory_gbps, 1)
              << " GB/s per core";
  std::cout << "\n";
  if (r->interrupted) {
    std::cerr << "mplan: interrupted; every completed batch was kept in " << o.db << "\n";
    return 130;
  }
  if (!o.emit_cluster.empty()) emit_cluster_after_profile(o.db, r->device_id, o.emit_cluster);
  std::cout << "next: mplan calibrate --db " << o.db << " --out calibration.json\n";
  return kExitOk;
}

}  // namespace

void add_profile_commands(CLI::App& app, Runner& run) {
  auto o = std::make_shared<ProfileOptions>();
  auto* p = app.add_subcommand("profile", "Measure kernels and collectives into a profile database (SQLite)");
  p->add_option("--backend", o->backend, "cpu|cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  p->add_option("--db", o->db, "profile database file (created when missing)")->required();
  p->add_flag("--quick", o->quick, "small grid: under a minute");
  p->add_flag("--no-collectives", o->no_collectives, "kernels only");
  p->add_flag("--no-kernels", o->no_kernels, "collectives only (cpu)");
  p->add_flag("--no-progress", o->no_progress, "no progress bar on stderr");
  p->add_option("--ranks", o->ranks, "collectives over 2..N ranks (cpu; default: the usable cores)")->check(int_range(1, 4096));
  p->add_option("--cluster", o->cluster, "cuda: the preset of these GPUs (default: from the GPU name)");
  p->add_option("--emit-cluster", o->emit_cluster, "cpu: write the fitted local-cpu cluster JSON here");
  p->add_option("--import", o->import, "load a shipped GPU profile (NAME, 'all' or FILE.sql) into --db instead of measuring");
  p->add_option("--export-sql", o->export_sql, "write one device of --db with its rows as profile SQL (the --import format)");
  p->add_option("--device", o->device, "--export-sql: device id or name substring (default: the newest with rows)");
  p->add_option("--mpi-worker", o->mpi_worker, "internal: run as a rank of the collective part")->group("");
  p->callback([&run, o] { run = [o] { return run_profile(*o); }; });

  auto c = std::make_shared<CalibrateCliOptions>();
  auto* cal = app.add_subcommand("calibrate", "Fit the cost model to a profile database; write mplan.calibration/1");
  cal->add_option("--db", c->c.db, "profile database file");
  cal->add_option("--shipped", c->c.shipped, "a shipped GPU profile instead of --db (dgx-h100, ...)");
  cal->add_option("--device", c->c.device, "device id or name substring (default: the newest with rows)");
  cal->add_option("--cluster", c->c.cluster, "cluster preset or file the rows ran on (default: the device's)");
  cal->add_option("--runs", c->runs, "measured end-to-end runs (CSV, columns of published_runs_dev.csv)");
  cal->add_option("--out", c->out, "write the calibration JSON here");
  cal->add_option("--emit-cluster", c->emit_cluster, "write the cluster (with fitted latencies) here; for a CPU: local-cpu");
  cal->add_option("--format", c->format, "table|json")->check(format_choice({"table", "json"}));
  cal->callback([&run, c] { run = [c] { return run_calibrate(*c); }; });
}

}  // namespace mplan::cli
