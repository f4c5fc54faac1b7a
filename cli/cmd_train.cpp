// `mplan train, verify`: subcommands over the executor library (owned by that part).
// train: checks the plan against this machine, starts itself under mpirun with the plan's world
// size when not already an MPI job, and runs the training job on every rank.
#include <mpi.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "cli/resolve.h"
#include "executor/backend/blas_config.h"
#include "executor/comm/mpi_comm.h"
#include "executor/train/launch.h"
#include "executor/train/run.h"
#include "executor/train/run_record.h"

namespace mplan::cli {

namespace {

struct TrainCliOptions {
  std::string plan;
  std::string backend = "cpu";
  std::string format = "table";
  std::string runs_db;
  int max_ranks_per_core = 8;
  exec::TrainOptions t;
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

bool has_cuda_device() {
  return std::filesystem::exists("/dev/nvidia0") || std::filesystem::exists("/dev/nvidiactl");
}

void check_backend(const std::string& backend) {
  if (backend == "cpu") return;
  if (!has_cuda_device())
    throw InputError{"--backend cuda: this machine has no NVIDIA GPU (no /dev/nvidia0); train with --backend cpu"};
  throw InputError{"--backend cuda: the CUDA backend of the executor is not built into this mplan yet; "
                   "train with --backend cpu"};
}

// Inside the MPI job (or a single process): run the ranks' training loop.
int run_job(const TrainCliOptions& o, const Plan& plan) {
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) MPI_Init(nullptr, nullptr);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  exec::RunOutput out;
  out.format = o.format;
  out.out = &std::cout;
  out.info = o.format == "json" ? &std::cerr : &std::cout;
  if (!o.runs_db.empty()) {
    std::string db = o.runs_db;
    out.sink = [db](const exec::RunSummary& s) { return exec::write_run_to_db(db, s, nlohmann::json::object()); };
  }
  int code = exec::train_job(plan, o.t, out, MPI_COMM_WORLD);
  std::cout.flush();
  std::cerr.flush();
  MPI_Finalize();
  if (const char* f = std::getenv("MPLAN_EXIT_FILE")) {  // started by our launcher: report, exit quietly
    if (rank == 0) std::ofstream(f) << code << "\n";
    return 0;
  }
  return code;
}

int run_train(const TrainCliOptions& o) {
  check_backend(o.backend);
  Plan plan = require_plan(o.plan);
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
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  exec::reexec_with_blas_environment(argv.data());
  return run_job(o, plan);
}

}  // namespace

void add_train_commands(CLI::App& app, Runner& run) {
  auto o = std::make_shared<TrainCliOptions>();
  auto* sub = app.add_subcommand("train", "Train a real transformer with a plan's layout (CPU backend, MPI ranks)");
  sub->add_option("--plan", o->plan, "plan file (mplan.plan/1 JSON)")->required();
  sub->add_option("--backend", o->backend, "cpu|cuda (default cpu)")->check(CLI::IsMember({"cpu", "cuda"}));
  sub->add_option("--steps", o->t.steps, "optimizer steps (a resumed run continues up to this step)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--seed", o->t.seed, "seed of the initialisation and the data order");
  sub->add_option("--data", o->t.data, "synthetic, or a text file read with the byte-level tokenizer");
  sub->add_option("--runs-db", o->runs_db, "store the run in this runs database (SQLite)");
  sub->add_option("--checkpoint-dir", o->t.checkpoint_dir, "write sharded checkpoints here");
  sub->add_option("--checkpoint-every", o->t.checkpoint_every, "also checkpoint every N steps (default: at the end)");
  sub->add_flag("--resume", o->t.resume, "continue from the latest checkpoint in --checkpoint-dir");
  sub->add_option("--format", o->format, "table|json (json: one object per step and line)")
      ->check(format_choice({"table", "json"}));
  sub->add_option("--lr", o->t.lr, "peak learning rate (default 1e-3)")->check(CLI::PositiveNumber);
  sub->add_option("--warmup", o->t.warmup_steps, "warm-up steps (default steps/10)");
  sub->add_option("--lr-decay-steps", o->t.lr_decay_steps, "cosine decay length (default: --steps)");
  sub->add_option("--weight-decay", o->t.weight_decay, "AdamW weight decay (default 0.1)");
  sub->add_option("--clip-grad", o->t.clip_grad, "gradient-norm clipping (default 1.0, 0 = off)");
  sub->add_option("--moe-aux-loss-coeff", o->t.moe_aux_coeff, "MoE load-balancing loss weight (default 1e-2)");
  sub->add_option("--moe-capacity-factor", o->t.moe_capacity_factor, "expert capacity factor (default 0 = dropless)");
  sub->add_option("--peak-gflops", o->t.peak_gflops, "GEMM peak per core for MFU (default: measured at start)");
  sub->add_option("--max-ranks-per-core", o->max_ranks_per_core, "refuse plans needing more ranks per core (default 8)")
      ->check(CLI::PositiveNumber);
  sub->callback([&run, o] { run = [o] { return run_train(*o); }; });
}

}  // namespace mplan::cli
