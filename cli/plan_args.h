// Command-line options that describe a training job (--model --cluster --gpus --gbs --seq ...) and the
// layout flags of `mplan simulate`, turned into a Plan. Shared by simulate, search and the GUI launcher.
#pragma once
#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "core/plan.h"
#include "simulator/cost_params.h"

namespace mplan::cli {

struct JobArgs {
  std::string model, cluster, precision = "bf16", method = "pretrain";
  int gpus = 0;
  int64_t gbs = 0, seq = 0, packed_doc_tokens = 0;
  std::string calibration;  // --calibration FILE
  bool force = false;       // --force: apply a calibration fitted for another GPU architecture
  // the framework and the runtime options every layout of the job shares (search keeps them fixed)
  std::string framework = "megatron";
  bool torch_compile = false;  // torchtitan: torch.compile the model (--torch-compile)
  bool fp8_param_gather = false, grad_reduce_in_bf16 = false, cross_entropy_fusion = false, adam_states_bf16 = false;
  std::string main_params = "fp32";
  std::optional<double> moe_capacity_factor;  // not given: dropless
  bool moe_pad_to_capacity = false;
  int dp_replicate = 1;
};

struct LayoutArgs {
  int mbs = 1, tp = 1, pp = 1, vpp = 1, cp = 1, ep = 1, etp = 1, recompute_layers = 0;
  std::optional<int> zero;  // default: the framework's (Megatron: 1, the distributed optimizer)
  std::optional<bool> sp;   // --sp / --no-sp; default on when tp > 1
  bool dist_opt = false;
  std::string recompute = "none", schedule, cp_comm, attention = "flash";
  bool tp_comm_overlap = false, no_overlap_grad_reduce = false, no_overlap_param_gather = false;
  std::string moe_dispatcher = "alltoall";
  bool moe_force_balance = false, moe_a2a_overlap = false;
  int first_stage_layers = 0, last_stage_layers = 0;
  std::string pipeline_layout;  // "balanced" or "a,b;c,d" (stages separated by ';', chunks by ',')
  std::string recompute_modules, offload_modules, remat_policy;  // comma-separated Megatron / MaxText names
  int cpu_offload_layers = 0;
};

// Adds --model --cluster --gpus --gbs --seq --precision --calibration. `required` marks the first five
// required (false when --plan may replace them).
void add_job_options(CLI::App* sub, JobArgs& a, bool required);
void add_layout_options(CLI::App* sub, LayoutArgs& l);

// Builds and validates the plan; any problem throws InputError (exit 2) naming the field/rule.
Plan plan_from_args(const JobArgs& a, const LayoutArgs& l);
// When pp does not divide the layers: how to keep that pp ("--pipeline-layout balanced", or first/last
// stage sizes such that the middle stages split evenly), as text appended to the refusal; "" else.
std::string pipeline_split_hint(int layers, const ParallelConfig& q);
// Resolves model/cluster/training of the job (no layout) into a plan skeleton; the job's runtime
// options (framework, fp8 parameters, gradient/optimizer dtypes, fused loss, MoE capacity) are set.
Plan job_skeleton(const JobArgs& a);
// Cost parameters: --calibration FILE if given, else the shipped calibration for the cluster's GPU,
// else the documented defaults. A calibration fitted for another GPU architecture is refused (exit 2)
// unless `force`, which applies it with a warning on stderr.
CostParams cost_params_for(const Plan& plan, const std::string& calibration_file, bool force = false);
// The calibration in the file, or the shipped one when `calibration_file` is empty.
Calibration load_calibration(const std::string& calibration_file);
// Refuses (InputError) a calibration fitted for another architecture than `gpu`'s, unless `force`;
// then returns the warning to print ("" when the calibration applies).
std::string check_calibration(const Calibration& cal, const GpuSpec& gpu, bool force);
// Adds --force (apply a calibration of another GPU architecture) to a subcommand.
void add_force_option(CLI::App* sub, bool& force);

}  // namespace mplan::cli
