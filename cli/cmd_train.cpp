// `mplan train, verify`: subcommands over the executor library (owned by that part).
// train: checks the plan against this machine, starts itself under mpirun with the plan's world
// size when not already an MPI job, and runs the training job on every rank.
#include <mpi.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "cli/resolve.h"
#include "cli/table.h"
#include "core/counting.h"
#include "core/json_fields.h"
#include "core/safe_output.h"
#include "core/stats.h"
#include "core/strict_json.h"
#include "core/units.h"
#include "executor/backend/backend_factory.h"
#include "executor/backend/blas_config.h"
#include "executor/comm/mpi_comm.h"
#include "executor/train/abort_guard.h"
#include "executor/train/launch.h"
#include "executor/train/run.h"
#include "executor/train/run_record.h"
#if defined(MPLAN_HAVE_SIMULATOR) && defined(MPLAN_HAVE_PROFILES)
#include "profiles/calibrate.h"
#include "profiles/local_profile.h"
#include "simulator/simulator.h"
#endif

namespace mplan::cli {

namespace {

struct TrainCliOptions {
  std::string plan;
  std::string backend = "cpu";
  std::string format = "table";
  std::string runs_db;
  std::string summary_out;  // internal: rank 0 writes the run summary JSON here (mplan verify)
  int max_ranks_per_core = 8;
  exec::TrainOptions t;
  bool capacity_given = false;  // --moe-capacity-factor was given (it may only restate the plan's)
};

// This process's own command line (to re-run it under mpirun or with a BLAS environment).
std::vector<std::string> own_argv() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  std::string cur;
  for (char c : all) {
    if (c == '\0') {
      args.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!args.empty()) args[0] = std::filesystem::read_symlink("/proc/self/exe").string();
  return args;
}

bool has_cuda_device() { return std::filesystem::exists("/dev/nvidia0") || std::filesystem::exists("/dev/nvidiactl"); }

void check_backend(const std::string& backend) {
  if (backend == "cpu") return;
  if (!has_cuda_device())
    throw InputError{"--backend cuda: this machine has no NVIDIA GPU (no /dev/nvidia0); train with --backend cpu"};
  if (!exec::cuda_backend_built())
    throw InputError{
        "--backend cuda: this mplan was built without CUDA (configure where nvcc exists); "
        "train with --backend cpu"};
}

// Inside the MPI job (or a single process): run the ranks' training loop.
int run_job(const TrainCliOptions& o, const Plan& plan) {
  // before MPI starts its threads: signals and the loss of the launcher end the job, recorded as aborted
  exec::AbortGuard guard(exec::launched_under_mpi() || std::getenv(exec::kLauncherPidEnv) != nullptr);
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) MPI_Init(nullptr, nullptr);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  exec::RunOutput out;
  out.abort = &guard;
  out.format = o.format;
  out.out = &std::cout;
  out.info = o.format == "json" ? &std::cerr : &std::cout;
  std::string db = o.runs_db, summary = o.summary_out;
  nlohmann::json prediction = nlohmann::json::object();
  if (const char* p = std::getenv("MPLAN_PREDICTION_FILE")) {  // set by mplan verify
    std::ifstream in(p);
    if (in) prediction = nlohmann::json::parse(in, nullptr, false);
    if (prediction.is_discarded()) prediction = nlohmann::json::object();
  }
  if (!db.empty() || !summary.empty())
    out.sink = [db, summary, prediction](const exec::RunSummary& s) -> std::string {
      if (!summary.empty()) {
        std::string e = write_text_file_atomic(summary, dump_json(exec::summary_to_json(s), 1) + "\n");
        if (!e.empty()) return e;
      }
      return db.empty() ? "" : exec::write_run_to_db(db, s, prediction);
    };
  exec::TrainOptions topt = o.t;
  topt.backend = o.backend;
#if defined(MPLAN_HAVE_SIMULATOR) && defined(MPLAN_HAVE_PROFILES)
  if (o.backend == "cuda")  // named by the out-of-memory message
    if (auto r = simulate(plan, CostParams{}); r) topt.predicted_peak_bytes = int64_t(r.value().peak_memory_gib * kGiB);
#endif
  int code = exec::train_job(plan, topt, out, MPI_COMM_WORLD);
  std::cout.flush();
  std::cerr.flush();
  MPI_Finalize();
  if (const char* f = std::getenv("MPLAN_EXIT_FILE")) {  // started by our launcher: report, exit quietly
    if (rank == 0) std::ofstream(f) << code << "\n";
    return 0;
  }
  return code;
}

// A runs database path is refused before training, not after it: a directory, a device or FIFO, or a
// file in a directory that does not exist.
void require_db_path(const std::string& path) {
  if (path.empty()) return;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw InputError{"--runs-db " + path + ": not a regular file; give a file name such as runs.db"};
  if (std::string e = check_output_path(path); !e.empty()) throw InputError{"--runs-db " + e};
}

// The plan fixes the MoE capacity factor (parallel.moe_capacity_factor, 0 = dropless): the run trains
// with it, and a --moe-capacity-factor that differs from it is refused rather than silently applied.
float plan_capacity_factor(const Plan& plan, const TrainCliOptions& o) {
  const double f = plan.parallel.moe_capacity_factor;
  if (o.capacity_given && std::abs(o.t.moe_capacity_factor - f) > 1e-6 * std::max(1.0, f)) {
    std::ostringstream given, planned;
    given << o.t.moe_capacity_factor;
    planned << f;
    throw InputError{"--moe-capacity-factor " + given.str() + ": given beside --plan " + o.plan +
                     ", whose moe_capacity_factor is " + planned.str() +
                     " (0 = dropless); to train with another factor, set moe_capacity_factor in the plan file's "
                     "\"parallel\" object instead"};
  }
  return float(f);
}

int run_train(TrainCliOptions o) {  // a copy: the plan settles its MoE capacity factor
  check_backend(o.backend);
  Plan plan = require_plan(o.plan);
  o.t.moe_capacity_factor = plan_capacity_factor(plan, o);
  if (!exec::launched_under_mpi()) require_db_path(o.runs_db);
  const bool in_job = exec::launched_under_mpi();
  if (!in_job) {
    auto problems = exec::preflight(plan, o.t, exec::machine_info(), o.max_ranks_per_core);
    if (!problems.empty()) {
      std::string msg = "cannot train " + o.plan + " on this machine:";
      for (const auto& p : problems) msg += "\n  " + p;
      throw InputError{msg};
    }
  }
  std::vector<std::string> args = own_argv();
  if (!in_job && plan.parallel.world_size > 1) {
    auto cmd = exec::mpirun_command(plan.parallel.world_size, args, exec::machine_info());
    ParallelConfig par = plan.parallel;
    return exec::run_launcher(cmd, [par](int r) { return exec::describe_rank(par, r); });
  }
  // one process (world size 1) or a rank of an MPI job: make sure OpenBLAS uses its fast kernels
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  exec::reexec_with_blas_environment(argv.data());
  return run_job(o, plan);
}

// ---- mplan verify: train, simulate the same plan on the profiled cluster, compare ----
// cpu: the profiled local-cpu cluster (one rank per core, fp32); cuda: the GPU preset of a CUPTI
// profile of this machine's GPU, predicting mplan's own CUDA executor (a user's calibrated per-step
// host cost, optimizer_overhead_s, is zeroed).

struct VerifyOptions {
  std::string plan, db, format = "table", runs_db, data = "synthetic", framework, backend = "cpu";
  std::string measured;  // a recorded `mplan train --summary-out` of this plan instead of training now
  int steps = 6;
  uint64_t seed = 1234;
};

#if defined(MPLAN_HAVE_SIMULATOR) && defined(MPLAN_HAVE_PROFILES)
double pct_error(double predicted, double measured) { return measured != 0 ? 100.0 * (predicted - measured) / measured : 0.0; }

std::string fixed(double v, int d) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(d) << v;
  return os.str();
}

// The profile to predict with: --db, else this machine's cached profile, else the committed
// local-cpu profile when this machine matches it, else a quick profile of this machine (cached).
std::string verify_profile_db(const VerifyOptions& o) {
  if (!o.db.empty()) return o.db;
  auto found = profiles::find_local_cpu_profile();
  if (!found) throw InputError{found.error().message()};
  if (*found) {
    std::cerr << "mplan verify: predicting with " << (*found)->how << " (pass --db FILE for another profile)\n";
    return (*found)->db;
  }
  std::string db = profiles::local_profile_path();  // not const: returned by move
  std::cerr << "mplan verify: no profile of this machine yet (the committed local-cpu profile is of another CPU); "
               "profiling it now (--quick, about a minute), kept in "
            << db << " for the next verify\n";
  std::vector<std::string> args = {own_argv()[0], "profile", "--backend", "cpu", "--quick", "--db", db};
  std::string cmd;
  for (const auto& a : args) cmd += "'" + a + "' ";
  int code = exec::run_launcher(args, nullptr, true);
  if (code != 0)
    throw InputError{"profiling this machine failed (exit " + std::to_string(code) + "); run " + cmd + "yourself and pass --db"};
  return db;
}

// The GPU profile to predict with: --db, else a quick CUPTI profile of the GPU at hand, kept in the
// cache for the next verify.
std::string verify_gpu_profile_db(const VerifyOptions& o) {
  if (!o.db.empty()) return o.db;
  std::string db = profiles::local_profile_path();
  db.replace(db.rfind("local-cpu-"), 10, "local-cuda-");
  struct stat st {};
  if (::stat(db.c_str(), &st) == 0) {
    std::cerr << "mplan verify: predicting with this machine's GPU profile " << db << " (pass --db FILE for another)\n";
    return db;
  }
  std::cerr << "mplan verify: no GPU profile of this machine yet; profiling the GPU now (--quick), kept in " << db << "\n";
  std::vector<std::string> args = {own_argv()[0], "profile", "--backend", "cuda", "--quick", "--db", db};
  int code = exec::run_launcher(args, nullptr, true);
  if (code != 0)
    throw InputError{"profiling this GPU failed (exit " + std::to_string(code) +
                     "); run mplan profile --backend cuda --db FILE " + "yourself and pass --db"};
  return db;
}

struct VerifySetup {
  Plan plan, sim_plan;
  profiles::CalibrateResult cal;
  StepReport rep;
  double peak_flops = 0;  // per rank, of the precision the executor computes in
};

VerifySetup verify_setup(const VerifyOptions& o) {
  const bool gpu = o.backend == "cuda";
  if (!o.measured.empty() && o.db.empty())
    throw InputError{"--measured predicts a recorded run from a profile: pass the profile of the machine it ran on with --db"};
  if (gpu && o.measured.empty()) check_backend("cuda");  // no GPU: a clear message before any profiling
  VerifySetup v;
  v.plan = require_plan(o.plan);
  require_db_path(o.runs_db);
  profiles::CalibrateOptions co;
  co.db = gpu ? verify_gpu_profile_db(o) : verify_profile_db(o);
  co.store = false;
  auto cal = profiles::calibrate(co);
  if (!cal) throw InputError{"--db " + co.db + ": " + cal.error().message()};
  v.cal = cal.value();
  if (!gpu && v.cal.device.kind != "cpu")
    throw InputError{"--db " + co.db + ": the newest device is '" + v.cal.device.name +
                     "', not a CPU; verify predicts the CPU executor from a CPU profile of this machine"};
  if (gpu && v.cal.device.kind == "cpu")
    throw InputError{"--db " + co.db + ": the newest device is the CPU '" + v.cal.device.name +
                     "'; --backend cuda predicts from a GPU profile (mplan profile --backend cuda)"};
  v.sim_plan = v.plan;
  v.sim_plan.cluster = v.cal.cluster;
  if (!gpu) v.sim_plan.training.precision = Precision::fp32;
  if (!o.framework.empty()) v.sim_plan.training.framework = *parse_framework(o.framework);
  const std::string what = gpu ? "GPUs of the " + v.sim_plan.cluster.name + " cluster" : "cores of the local-cpu cluster";
  if (v.plan.parallel.world_size > v.sim_plan.cluster.max_gpus())
    throw InputError{"verify predicts one rank per " + std::string(gpu ? "GPU" : "core") +
                     ": world_size=" + std::to_string(v.plan.parallel.world_size) + " exceeds the " +
                     std::to_string(v.sim_plan.cluster.max_gpus()) + " " + what + "; choose a plan with fewer ranks"};
  CostParams params = v.cal.calibration.params;
  if (gpu) {
    params.optimizer_overhead_s = 0;  // a user's calibrated per-step host cost, not mplan's executor
    // the executor's tensors are fp32 around its bf16 GEMMs (issue 29's item 2), converted per GEMM call
    params.activation_bytes = 4;
    if (v.plan.training.precision != Precision::fp32 && v.plan.training.precision != Precision::tf32)
      params.gemm_operand_cast_bytes = 6;
  }
  auto rep = simulate(v.sim_plan, params);
  if (!rep) throw InputError{"cannot simulate the plan on the " + v.sim_plan.cluster.name + " cluster: " + rep.error().message()};
  v.rep = rep.value();
  const Precision compute = gpu ? v.plan.training.precision : Precision::fp32;
  v.peak_flops = v.sim_plan.cluster.gpu.peak(compute).value_or(v.sim_plan.cluster.gpu.peak(Precision::fp32).value_or(0)) * 1e12;
  return v;
}

// Issue 29's per-op targets: ops taking >= 1 % of the measured step that are measured but not
// predicted, predicted but not measured, or off by more than 25 %.
nlohmann::json op_check(const std::vector<std::pair<std::string, std::pair<double, double>>>& rows, double step_s) {
  nlohmann::json measured_only = nlohmann::json::array(), predicted_only = nlohmann::json::array(), off = nlohmann::json::array();
  for (const auto& [name, mp] : rows) {
    const auto [meas, pred] = mp;
    if (std::max(meas, pred) < 0.01 * step_s) continue;
    if (pred <= 0)
      measured_only.push_back(name);
    else if (meas <= 0)
      predicted_only.push_back(name);
    else if (std::fabs(pct_error(pred, meas)) > 25)
      off.push_back(name);
  }
  return {{"min_share_of_step", 0.01},
          {"measured_only", measured_only},
          {"predicted_only", predicted_only},
          {"off_by_more_than_25pct", off}};
}

int report_verify(const VerifyOptions& o, const VerifySetup& v, const nlohmann::json& sj);

// A recorded training summary (`mplan train --summary-out`): its steps and ops, refused unless it
// trained this plan's model on as many ranks.
nlohmann::json read_measured(const VerifyOptions& o, const Plan& plan) {
  std::ifstream in(o.measured);
  if (!in) throw InputError{"--measured " + o.measured + ": cannot read the file"};
  nlohmann::json sj = nlohmann::json::parse(in, nullptr, false);
  if (!sj.is_object() || !sj.contains("steps") || !sj["steps"].is_array() || sj["steps"].empty() || !sj.contains("ops") ||
      !sj["ops"].is_array())
    throw InputError{"--measured " + o.measured +
                     ": not a training summary (mplan train --summary-out writes one: an object with 'steps' and 'ops')"};
  for (const auto& st : sj["steps"])
    if (!st.is_object() || !st.contains("step_time_s") || !st["step_time_s"].is_number() || !st.contains("peak_memory_gib") ||
        !st["peak_memory_gib"].is_number())
      throw InputError{"--measured " + o.measured + ": every step needs numbers 'step_time_s' and 'peak_memory_gib'"};
  for (const auto& op : sj["ops"])
    if (!op.is_object() || !op.contains("name") || !op["name"].is_string() || !op.contains("time_s") ||
        !op["time_s"].is_number() || !op.contains("calls") || !op["calls"].is_number_integer())
      throw InputError{"--measured " + o.measured + ": every op needs 'name', 'time_s' and 'calls'"};
  const std::string model = sj.value("/plan/model/name"_json_pointer, std::string());
  const int world = sj.value("world_size", 0);
  if (model != plan.model.name || world != plan.parallel.world_size)
    throw InputError{"--measured " + o.measured + ": it trained '" + model + "' on " + std::to_string(world) +
                     " rank(s), not the plan's '" + plan.model.name + "' on " + std::to_string(plan.parallel.world_size)};
  return sj;
}

int run_verify(const VerifyOptions& o) {
  VerifySetup v = verify_setup(o);
  const Plan& plan = v.plan;
  if (!o.measured.empty()) return report_verify(o, v, read_measured(o, plan));
  exec::TrainOptions t;
  t.steps = o.steps;
  t.data = o.data;
  t.backend = o.backend;
  auto problems = exec::preflight(plan, t, exec::machine_info());
  if (!problems.empty()) {
    std::string msg = "cannot train " + o.plan + " on this machine:";
    for (const auto& p : problems) msg += "\n  " + p;
    throw InputError{msg};
  }
  // train in a child job (mpirun for world > 1) that writes its summary for us
  std::string dir = std::filesystem::temp_directory_path() / ("mplan-verify-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string summary = dir + "/summary.json", pred = dir + "/prediction.json";
  std::ofstream(pred) << dump_json(report_to_json(v.rep));
  setenv("MPLAN_PREDICTION_FILE", pred.c_str(), 1);
  std::vector<std::string> args = {own_argv()[0],   "train",
                                   "--plan",        o.plan,
                                   "--steps",       std::to_string(o.steps),
                                   "--seed",        std::to_string(o.seed),
                                   "--data",        o.data,
                                   "--format",      "json",
                                   "--backend",     o.backend,
                                   "--peak-gflops", fixed(v.peak_flops / 1e9, 3),
                                   "--summary-out", summary};
  if (!o.runs_db.empty()) args.insert(args.end(), {"--runs-db", o.runs_db});
  std::cerr << "mplan verify: training " << o.plan << " for " << o.steps << " steps on " << plan.parallel.world_size
            << " rank(s)\n";
  const int world = plan.parallel.world_size;
  ParallelConfig par = plan.parallel;
  int code = exec::run_launcher(
      world > 1 ? exec::mpirun_command(world, args, exec::machine_info()) : args,
      [par](int r) { return exec::describe_rank(par, r); }, true);
  nlohmann::json sj;
  {
    std::ifstream in(summary);
    if (code == 0 && in) sj = nlohmann::json::parse(in, nullptr, false);
  }
  std::filesystem::remove_all(dir);
  if (code != 0) return code;
  if (!sj.is_object()) throw std::runtime_error("the training job wrote no summary");
  return report_verify(o, v, sj);
}

int report_verify(const VerifyOptions& o, const VerifySetup& v, const nlohmann::json& sj) {
  const Plan& plan = v.plan;
  const Plan& sim_plan = v.sim_plan;
  const auto& cal = v.cal;
  const int world = plan.parallel.world_size;
  // measured: median step time over the steps after the first, peak memory, MFU on the cluster's peak
  std::vector<double> times;
  double mem = 0;
  const auto& steps = sj["steps"];
  for (size_t i = 0; i < steps.size(); ++i) {
    if (i > 0 || steps.size() == 1) times.push_back(steps[i]["step_time_s"].get<double>());
    mem = std::max(mem, steps[i]["peak_memory_gib"].get<double>());
  }
  const double t_meas = stats::median(times);
  const double flops =
      model_flops_per_step(plan.model, plan.training.global_batch_size, plan.training.seq_length, AttentionFlops::causal);
  const double peak = v.peak_flops;
  const double mfu_meas = flops / (t_meas * world * peak);
  const StepReport& r = v.rep;
  std::map<std::string, std::pair<double, double>> ops;  // name -> (measured, predicted)
  std::map<std::string, int64_t> calls;
  for (const auto& op : sj["ops"]) {
    ops[op["name"]].first = op["time_s"];
    calls[op["name"]] = op["calls"];
  }
  for (const OpTime& op : r.ops) ops[op.name].second = op.time_s;
  std::vector<std::pair<std::string, std::pair<double, double>>> rows(ops.begin(), ops.end());
  std::sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.second.first > b.second.first; });
  nlohmann::json oj = nlohmann::json::array();
  for (auto& [name, mp] : rows)
    oj.push_back({{"name", name},
                  {"measured_s", mp.first},
                  {"predicted_s", mp.second},
                  {"calls", calls[name]},
                  {"error_pct",
                   mp.first > 0 && mp.second > 0 ? nlohmann::json(pct_error(mp.second, mp.first)) : nlohmann::json(nullptr)}});
  nlohmann::json j = {
      {"plan", o.plan},
      {"cluster", sim_plan.cluster.name},
      {"device", cal.device.name},
      {"steps", int(sj["steps"].size())},
      {"predicted", {{"step_time_s", r.step_time_s}, {"peak_memory_gib", r.peak_memory_gib}, {"mfu", r.mfu}}},
      {"measured", {{"step_time_s", t_meas}, {"peak_memory_gib", mem}, {"mfu", mfu_meas}}},
      {"error_pct", {{"step_time", pct_error(r.step_time_s, t_meas)}, {"peak_memory", pct_error(r.peak_memory_gib, mem)}}},
      {"ops", oj},
      {"op_check", op_check(rows, t_meas)}};
  if (o.format == "json") {
    std::cout << dump_json(j, 2) << "\n";
    return kExitOk;
  }
  const size_t n_steps = sj["steps"].size();
  std::cout << "verify " << o.plan << " on " << sim_plan.cluster.name << " (" << cal.device.name << "), " << n_steps
            << " steps (median of steps 2.." << n_steps << ")" << (o.measured.empty() ? "" : ", recorded in " + o.measured)
            << "\n\n";
  TextTable top({"", "predicted", "measured", "error"});
  top.add_row({"step time (s)", fixed(r.step_time_s, 4), fixed(t_meas, 4), fixed(pct_error(r.step_time_s, t_meas), 1) + "%"});
  top.add_row(
      {"peak memory (GiB)", fixed(r.peak_memory_gib, 3), fixed(mem, 3), fixed(pct_error(r.peak_memory_gib, mem), 1) + "%"});
  top.add_row({"MFU", fixed(100 * r.mfu, 1) + "%", fixed(100 * mfu_meas, 1) + "%", ""});
  std::cout << top.render() << "\nper op (per step, slowest rank; sorted by measured time)\n";
  TextTable t2({"op", "calls", "measured ms", "predicted ms", "error"});
  for (auto& [name, mp] : rows)
    t2.add_row({name, std::to_string(calls[name]), mp.first > 0 ? fixed(1e3 * mp.first, 2) : "-",
                mp.second > 0 ? fixed(1e3 * mp.second, 2) : "-",
                mp.first > 0 && mp.second > 0 ? fixed(pct_error(mp.second, mp.first), 1) + "%" : "-"});
  std::cout << t2.render();
  const nlohmann::json chk = j["op_check"];
  for (const char* k : {"measured_only", "predicted_only", "off_by_more_than_25pct"}) {
    if (chk[k].empty()) continue;
    std::cout << "ops >= 1% of the step, " << k << ":";
    for (const auto& n : chk[k]) std::cout << " " << n.get<std::string>();
    std::cout << "\n";
  }
  if (o.backend == "cuda")
    std::cout << "\nmeasured MFU uses the GPU preset's peak (" << fixed(peak / 1e12, 1)
              << " TFLOP/s) like the prediction; memory counts every device allocation of the largest rank\n";
  else
    std::cout << "\nmeasured MFU uses the profiled core peak (" << fixed(peak / 1e9, 1)
              << " GFLOP/s) like the prediction; memory is the process peak RSS of the largest rank\n";
  return kExitOk;
}
#else
int run_verify(const VerifyOptions&) {
  throw InputError{"mplan verify needs the simulator and profiles libraries, which this build lacks"};
}
#endif

void add_verify_command(CLI::App& app, Runner& run) {
  auto o = std::make_shared<VerifyOptions>();
  auto* sub = app.add_subcommand("verify",
                                 "Train a plan here and compare step time, memory, MFU and every op with "
                                 "the simulator's prediction on the profiled local-cpu cluster");
  sub->add_option("--plan", o->plan, "plan file (mplan.plan/1 JSON)")->required();
  sub->add_option("--steps", o->steps, "training steps (the first is a warm-up, default 6)")->check(CLI::Range(2, 100000));
  sub->add_option("--db", o->db,
                  "profile database of this machine (default: the cached profile of this machine, the committed "
                  "local-cpu profile when this machine matches it, else a quick profile made now)");
  sub->add_option("--format", o->format, "table|json")->check(format_choice({"table", "json"}));
  sub->add_option("--seed", o->seed, "seed of the initialisation and the data order");
  sub->add_option("--data", o->data, "synthetic, or a text file");
  sub->add_option("--runs-db", o->runs_db, "also store the run (with the prediction) in this runs database");
  sub->add_option("--framework", o->framework, "predict as this framework would run the plan (default: the plan's framework)")
      ->check(CLI::IsMember(framework_choices()));
  sub->add_option("--backend", o->backend,
                  "cpu (default) or cuda: train on this machine's GPU and predict from a CUPTI profile of it (--db, else "
                  "a quick profile made now)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  sub->add_option("--measured", o->measured,
                  "compare with a recorded run (the JSON of mplan train --summary-out) instead of training now; needs the "
                  "--db of the machine it ran on");
  sub->callback([&run, o] { run = [o] { return run_verify(*o); }; });
}

}  // namespace

void add_train_commands(CLI::App& app, Runner& run) {
  auto o = std::make_shared<TrainCliOptions>();
  auto* sub = app.add_subcommand("train", "Train a real transformer with a plan's layout (CPU backend, MPI ranks)");
  sub->add_option("--plan", o->plan, "plan file (mplan.plan/1 JSON)")->required();
  sub->add_option("--backend", o->backend, "cpu|cuda (default cpu)")->check(CLI::IsMember({"cpu", "cuda"}));
  sub->add_option("--steps", o->t.steps, "optimizer steps (a resumed run continues up to this step)")
      ->check(int_range(1, 100000000));
  sub->add_option("--seed", o->t.seed, "seed of the initialisation and the data order");
  sub->add_option("--data", o->t.data, "synthetic, or a text file read with the byte-level tokenizer");
  sub->add_option("--runs-db", o->runs_db, "store the run in this runs database (SQLite)");
  sub->add_option("--checkpoint-dir", o->t.checkpoint_dir, "write sharded checkpoints here");
  sub->add_option("--checkpoint-every", o->t.checkpoint_every, "also checkpoint every N steps (default: at the end)")
      ->check(int_range(0, 100000000));
  sub->add_flag("--resume", o->t.resume, "continue from the latest checkpoint in --checkpoint-dir");
  sub->add_option("--format", o->format, "table|json (json: one object per step and line)")
      ->check(format_choice({"table", "json"}));
  sub->add_option("--lr", o->t.lr, "peak learning rate (default 1e-3)")->check(real_range(0, 10, true));
  sub->add_option("--warmup", o->t.warmup_steps, "warm-up steps (default steps/10)")->check(int_range(0, 100000000));
  sub->add_option("--lr-decay-steps", o->t.lr_decay_steps,
                  "cosine decay length (default: --steps; a resumed run keeps its checkpoint's)")
      ->check(int_range(0, 100000000));
  sub->add_option("--weight-decay", o->t.weight_decay, "AdamW weight decay (default 0.1)")->check(real_range(0, 10));
  sub->add_option("--clip-grad", o->t.clip_grad, "gradient-norm clipping (default 1.0, 0 = off)")->check(real_range(0, 1e6));
  sub->add_option("--moe-aux-loss-coeff", o->t.moe_aux_coeff, "MoE load-balancing loss weight (default 1e-2)")
      ->check(real_range(0, 100));
  auto* cap = sub->add_option("--moe-capacity-factor", o->t.moe_capacity_factor,
                              "expert capacity factor: only the plan's (parallel.moe_capacity_factor, 0 = dropless)")
                  ->check(real_range(0, 1000));
  sub->add_option("--peak-gflops", o->t.peak_gflops, "GEMM peak per core for MFU (default: measured at start)")
      ->check(real_range(0, kMaxPeakTflops * 1e3));
  sub->add_option("--max-ranks-per-core", o->max_ranks_per_core, "refuse plans needing more ranks per core (default 8)")
      ->check(int_range(1, 1024));
  sub->add_option("--summary-out", o->summary_out, "internal: write the run summary JSON here")->group("");
  sub->callback([&run, o, cap] {
    o->capacity_given = cap->count() > 0;
    run = [o] { return run_train(*o); };
  });
  add_verify_command(app, run);
}

}  // namespace mplan::cli
