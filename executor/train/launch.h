// Starting a training job on this machine: the checks that refuse a plan before any rank starts
// (world size, memory, unsupported model features, data), and the self-launch through mpirun with
// the plan's world size (oversubscribed when there are more ranks than cores, ranks pinned to cores
// otherwise, root allowed, one BLAS thread per rank, the fast OpenBLAS kernels selected).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "executor/train/trainer.h"

namespace mplan::exec {

struct MachineInfo {
  int cores = 1;
  double mem_available_gib = 0;
};
MachineInfo machine_info();

// Rough per-rank memory of the plan on the CPU executor (weights, gradients, AdamW moments,
// activations of the micro-batches in flight, logits, process overhead), bytes, worst rank.
double estimate_rank_memory_bytes(const Plan& plan);

// Everything that stops the plan from running here, as messages (empty = go).
std::vector<std::string> preflight(const Plan& plan, const TrainOptions& opt, const MachineInfo& mi, int max_ranks_per_core = 8);

// The mpirun command line that runs `args` (argv[0] = this executable) as `world` ranks.
std::vector<std::string> mpirun_command(int world, const std::vector<std::string>& args, const MachineInfo& mi);

// Runs the command, passing its output through; when a rank dies, prints which one (and where it
// sits in the layout, via `describe_rank`). Returns the exit code (128 + signal when killed).
int run_launcher(const std::vector<std::string>& cmd, const std::function<std::string(int)>& describe_rank = nullptr,
                 bool stdout_to_stderr = false);
// "tp 0, cp 0, dp 1, pp 1" for a rank of the plan's grid.
std::string describe_rank(const ParallelConfig& p, int rank);

}  // namespace mplan::exec
