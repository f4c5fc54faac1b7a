// Preflight checks and self-launch through mpirun (stderr scanned for dead ranks).
#include "executor/train/launch.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <thread>

#include "core/bounded_input.h"
#include "core/counting.h"
#include "core/process.h"
#include "core/rank_grid.h"
#include "core/schedule.h"
#include "core/units.h"
#include "executor/backend/blas_config.h"
#include "executor/train/abort_guard.h"

namespace mplan::exec {

MachineInfo machine_info() {
  MachineInfo mi;
  mi.cores = int(std::max(1u, std::thread::hardware_concurrency()));
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") mi.mem_available_gib = kb * 1024.0 / kGiB;
  return mi;
}

double estimate_rank_memory_bytes(const Plan& plan) {
  const ModelSpec& m = plan.model;
  const ParallelConfig& p = plan.parallel;
  auto stages = params_per_stage(m, p);
  auto counts = layers_per_stage_chunk(m, p);
  const double tp = p.tp, mb = p.micro_batch_size, S = double(plan.training.seq_length);
  const double N = mb * S / p.cp, C = double(m.hidden_size);
  const int64_t micro = p.num_microbatches(plan.training.global_batch_size);
  double worst = 0;
  for (int s = 0; s < p.pp; ++s) {
    double params = stages[size_t(s)].dense / tp + stages[size_t(s)].expert / double(p.ep * p.etp);
    double state = p.zero >= 1 ? 2.0 / std::max(1, p.dp() * p.cp) : 2.0;
    double bytes = 4.0 * params * (2.0 + state);
    // activations per layer and micro-batch: norms, q/k/v, attention out, MLP (top_k copies in MoE)
    double F = double(m.is_moe() ? m.moe->moe_ffn_hidden_size * m.moe->top_k : m.ffn_hidden_size);
    double qkv = double(m.num_attention_heads + 2 * m.num_query_groups) * m.kv_channels / tp;
    double per_layer = 4.0 * N * (10 * C + 2 * qkv + (m.gated_mlp() ? 4 : 3) * F / tp);
    int layers = 0;
    for (int c : counts[size_t(s)]) layers += c;
    int in_flight = max_in_flight(schedule_actions(p.schedule, p.pp, p.vpp, int(micro), s));
    double chunk_layers = double(layers) / p.vpp;
    if (p.recompute == Recompute::full) per_layer = 4.0 * N * C;
    bytes += per_layer * chunk_layers * in_flight;
    if (s == p.pp - 1) bytes += 4.0 * N * double(m.vocab_size) / tp * 2;
    bytes += 96.0 * 1024 * 1024;  // MPI, OpenBLAS buffers, code
    worst = std::max(worst, bytes);
  }
  return worst;
}

std::vector<std::string> preflight(const Plan& plan, const TrainOptions& opt, const MachineInfo& mi, int max_ranks_per_core) {
  std::vector<std::string> e = unsupported_features(plan);
  const int world = plan.parallel.world_size;
  if (world > mi.cores * max_ranks_per_core)
    e.push_back("world_size=" + std::to_string(world) + " needs " + std::to_string(world) + " ranks; this machine has " +
                std::to_string(mi.cores) + " cores and the CPU executor runs at most " + std::to_string(max_ranks_per_core) +
                " ranks per core (" + std::to_string(mi.cores * max_ranks_per_core) +
                "); choose a plan with a smaller world size");
  double per_rank = estimate_rank_memory_bytes(plan), total = per_rank * world;
  if (mi.mem_available_gib > 0 && total / kGiB > 0.9 * mi.mem_available_gib) {
    char buf[256];
    std::snprintf(buf, sizeof(buf),
                  "the plan needs about %.2f GiB (%d ranks x %.2f GiB) but this machine has %.2f GiB available; "
                  "use a smaller model, micro-batch or sequence, or recompute=full",
                  total / kGiB, world, per_rank / kGiB, mi.mem_available_gib);
    e.push_back(buf);
  }
  if (opt.data != "synthetic") {
    std::string bad =
        opt.data == "-" ? opt.data + ": every rank reads the corpus, so it must be a file" : check_input_file(opt.data);
    if (!bad.empty()) e.push_back("--data " + bad + ": cannot read it as a corpus; give a text file or 'synthetic'");
    if (plan.model.vocab_size < 256)
      e.push_back("--data " + opt.data + ": the byte-level tokenizer needs vocab_size >= 256, the model has " +
                  std::to_string(plan.model.vocab_size));
  }
  if (opt.resume && opt.checkpoint_dir.empty()) e.push_back("--resume needs --checkpoint-dir");
  if (opt.resume && !opt.checkpoint_dir.empty() && !std::filesystem::exists(std::filesystem::path(opt.checkpoint_dir) / "latest"))
    e.push_back("--resume: no checkpoint in " + opt.checkpoint_dir + " (missing 'latest'); run without --resume first");
  if (opt.steps < 1) e.push_back("--steps must be >= 1");
  return e;
}

std::vector<std::string> mpirun_command(int world, const std::vector<std::string>& args, const MachineInfo& mi) {
  std::vector<std::string> c = {"mpirun", "-np", std::to_string(world)};
  if (geteuid() == 0) c.push_back("--allow-run-as-root");
  if (world > mi.cores) {
    c.insert(c.end(), {"--oversubscribe", "--bind-to", "none", "--mca", "mpi_yield_when_idle", "1"});
  } else {
    c.insert(c.end(), {"--bind-to", "core"});
  }
  c.insert(c.end(), {"--mca", "btl", "self,vader"});
  for (const std::string& kv : blas_environment()) c.insert(c.end(), {"-x", kv});
  c.insert(c.end(), {"-x", "MPLAN_LAUNCHED=1"});
  for (const char* var : {"MPLAN_FAULT", "MPLAN_PREDICTION_FILE"})
    if (const char* f = std::getenv(var)) c.insert(c.end(), {"-x", std::string(var) + "=" + f});
  c.insert(c.end(), args.begin(), args.end());
  return c;
}

std::string describe_rank(const ParallelConfig& p, int rank) {
  RankGrid g(p);
  if (rank < 0 || rank >= g.world_size()) return "";
  RankCoord c = g.coord(rank);
  std::string s = "tp " + std::to_string(c.tp) + ", cp " + std::to_string(c.cp) + ", dp " + std::to_string(c.dp) + ", pp stage " +
                  std::to_string(c.pp);
  if (p.ep > 1 || p.etp > 1) s += ", ep " + std::to_string(c.ep) + ", etp " + std::to_string(c.etp);
  return s;
}

// OpenMPI refuses mpirun's `-x VAR=value` beside an environment list given as the MCA parameter
// mca_base_env_list ("does not support mixing these two methods"). When the user has set that list,
// the `-x` variables are moved into it (its ';'-separated VAR=value form) for mpirun's environment.
namespace {
std::optional<std::string> move_exports_into_env_list(std::vector<std::string>& cmd) {
  const char* list = std::getenv("OMPI_MCA_mca_base_env_list");
  if (list == nullptr || *list == '\0') return std::nullopt;
  std::string merged = list;
  std::vector<std::string> kept;
  for (size_t i = 0; i < cmd.size(); ++i) {
    if (cmd[i] == "-x" && i + 1 < cmd.size()) {
      merged += ";" + cmd[++i];
      continue;
    }
    kept.push_back(cmd[i]);
  }
  cmd = std::move(kept);
  return merged;
}
}  // namespace

int run_launcher(const std::vector<std::string>& cmd_in, const std::function<std::string(int)>& describe, bool stdout_to_stderr) {
  // rank 0 reports the job's exit code through a file so that every rank can exit 0 and mpirun
  // stays quiet for ordinary outcomes (bad input, divergence)
  char exit_path[] = "/tmp/mplan-exit-XXXXXX";
  int fd = mkstemp(exit_path);
  if (fd >= 0) close(fd);
  std::vector<std::string> cmd = cmd_in;
  // every rank learns who launched it, and ends when that process is gone (abort_guard.h)
  const pid_t launcher = getpid();
  const std::string launcher_env = std::string(kLauncherPidEnv) + "=" + std::to_string(launcher);
  setenv(kLauncherPidEnv, std::to_string(launcher).c_str(), 1);  // for a direct child (world size 1)
  auto launched = std::find(cmd.begin(), cmd.end(), "MPLAN_LAUNCHED=1");
  if (launched != cmd.end()) {
    std::vector<std::string> extra = {"-x", launcher_env};
    if (fd >= 0) extra.insert(extra.end(), {"-x", std::string("MPLAN_EXIT_FILE=") + exit_path});
    cmd.insert(launched + 1, extra.begin(), extra.end());
  }
  // the job goes down with the launcher, even when the launcher is killed with SIGKILL: mpirun gets
  // SIGTERM and stops its ranks (and the ranks' own watchers notice the launcher is gone)
  ProcessOptions po;
  if (auto env_list = move_exports_into_env_list(cmd)) po.env.emplace_back("OMPI_MCA_mca_base_env_list", *env_list);
  po.die_with_parent = true;
  po.stdout_to_stderr = stdout_to_stderr;
  po.exec_hint = "; install openmpi-bin";
  std::string err_text;
  po.on_stderr = [&err_text](std::string_view chunk) {
    fwrite(chunk.data(), 1, chunk.size(), stderr);
    fflush(stderr);
    err_text.append(chunk);
  };
  int code = run_process(cmd, po);
  if (code < 0) code = 1;  // no pipe or no fork
  if (fd >= 0) {
    std::ifstream ef(exit_path);
    int reported = -1;
    if (code == 0 && (ef >> reported)) code = reported;
    std::remove(exit_path);
  }
  std::smatch mm;
  static const std::regex dead(R"(process rank (\d+) with PID \d+ on node (\S+) exited on signal (\d+)(?: \(([^)]*)\))?)");
  if (std::regex_search(err_text, mm, dead)) {
    std::string where = describe ? describe(std::stoi(mm[1].str())) : "";
    std::fprintf(stderr, "mplan: training aborted: rank %s%s%s%s on %s died (signal %s%s%s); the other ranks were stopped\n",
                 mm[1].str().c_str(), where.empty() ? "" : " (", where.c_str(), where.empty() ? "" : ")", mm[2].str().c_str(),
                 mm[3].str().c_str(), mm[4].matched ? ", " : "", mm[4].str().c_str());
    if (code == 0) code = 1;
  }
  return code;
}

}  // namespace mplan::exec
