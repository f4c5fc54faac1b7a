// Command-line options that describe a training job (--model --cluster --gpus --gbs --seq ...) and the
// layout flags of `mplan simulate`, turned into a Plan. Shared by simulate, search and the GUI launcher.
#pragma once
#include <CLI/CLI.hpp>
#include <map>
#include <optional>
#include <string>

#include "core/plan.h"
#include "simulator/cost_params.h"

namespace mplan::cli {

// Plan fields given on the command line, by plan key (a training field without one: by option), as
// text (core/parallel_fields.h and core/training_fields.h read them).
using FieldTexts = std::map<std::string, std::string>;

struct JobArgs {
  std::string model, cluster;
  int gpus = 0;
  std::string calibration;  // --calibration FILE
  bool force = false;       // --force: apply a calibration fitted for another GPU architecture
  FieldTexts training;      // the training fields given (core/training_fields.h): --gbs, --seq, --framework ...
  FieldTexts parallel;      // the job's plan fields (CliGroup::job): --dp-replicate, --main-params ...
};

struct LayoutArgs {
  FieldTexts parallel;  // the layout's plan fields (CliGroup::layout): --tp, --sp/--no-sp, --zero ...
  bool dist_opt = false;
};

// Adds --model --cluster --gpus, the training fields' options (--gbs --seq --precision ...), --calibration
// and the job's plan fields. `required` marks the model, cluster, GPUs and the training fields without
// a valid default (--gbs, --seq) required (false when --plan may replace them).
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
