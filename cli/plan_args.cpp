// Job and layout options -> Plan (see plan_args.h).
#include "cli/plan_args.h"

#include <cctype>
#include <iostream>

#include "cli/commands.h"
#include "cli/resolve.h"
#include "core/bounded_input.h"
#include "core/framework_profile.h"
#include "core/parallel_fields.h"
#include "core/training_fields.h"

namespace mplan::cli {

namespace {
// The option of a descriptor-table row, storing its value as text under `key`: a boolean as a flag
// ("--x" sets, "--no-x" clears, "--x/--no-x" gives both), an integer or a number checked against its
// range, a choice against its names, a module list with its names in the help.
CLI::Option* add_text_option(CLI::App* sub, const std::string& cli, FieldType type, const std::string& doc, double min,
                             double max, const std::vector<std::string>& choices, FieldTexts& given, const std::string& key) {
  auto store = [&given, key](const std::string& v) { given[key] = v; };
  if (type == FieldType::boolean) {
    const size_t slash = cli.find('/');
    const bool clears = cli.rfind("--no-", 0) == 0;
    auto* on = sub->add_flag_function(
        cli.substr(0, slash), [store, clears](int64_t) { store(clears ? "false" : "true"); }, clears ? "do not " + doc : doc);
    if (slash != std::string::npos)
      on->excludes(sub->add_flag_function(
          cli.substr(slash + 1), [store](int64_t) { store("false"); }, "no " + doc));
    return on;
  }
  if (type == FieldType::integer)
    return sub
        ->add_option_function<int64_t>(
            cli, [store](int64_t v) { store(std::to_string(v)); }, doc)
        ->check(int_range(int64_t(min), int64_t(max)));
  if (type == FieldType::number)
    return sub->add_option_function<std::string>(cli, store, doc)->type_name("FLOAT")->check(real_range(min, max, true));
  auto* o = sub->add_option_function<std::string>(cli, store, doc);
  if (type == FieldType::choice) o->check(CLI::IsMember(choices));
  if (type == FieldType::modules) o->description(doc + ": " + join_names(choices));
  return o;
}

// The options of the plan fields of `group`, each storing its text under the plan key.
void add_field_options(CLI::App* sub, CliGroup group, FieldTexts& given) {
  for (const ParallelField& f : parallel_fields())
    if (f.group == group)
      add_text_option(sub, f.cli, f.type(), f.doc, f.min, f.max,
                      f.access.choices ? f.access.choices() : std::vector<std::string>{}, given, f.json);
}

// The options of the training fields, each storing its text under the plan key (or the option).
void add_training_options(CLI::App* sub, FieldTexts& given, bool required) {
  for (const TrainingField& f : training_fields()) {
    CLI::Option* o = add_text_option(sub, f.cli, f.type, f.doc, double(f.min), double(f.max),
                                     f.choices ? f.choices() : std::vector<std::string>{}, given, *f.json ? f.json : f.cli);
    if (required && f.cli_required()) o->required();
  }
}

// Sets the given fields in table order (a derived default first: sp from tp, schedule from vpp); a bad
// value is refused naming its option.
void apply_fields(ParallelConfig& q, const FieldTexts& given) {
  for (const ParallelField& f : parallel_fields()) {
    auto it = given.find(f.json);
    if (it == given.end()) {
      if (f.derive) f.derive(q);
      continue;
    }
    std::string bad = set_field_text(f, q, it->second);
    if (!bad.empty()) throw InputError{std::string(f.cli).substr(0, std::string(f.cli).find('/')) + ": " + bad};
  }
}
}  // namespace

void add_job_options(CLI::App* sub, JobArgs& a, bool required) {
  auto* m = sub->add_option("--model", a.model, "model preset, mplan model JSON or Hugging Face config.json");
  auto* c = sub->add_option("--cluster", a.cluster, "cluster preset or cluster JSON");
  auto* g = sub->add_option("--gpus", a.gpus, "number of GPUs")->check(int_range(1, kMaxGpus));
  if (required)
    for (auto* o : {m, c, g}) o->required();
  add_training_options(sub, a.training, required);
  sub->add_option("--calibration", a.calibration, "calibration JSON (mplan.calibration/1) from mplan calibrate");
  add_field_options(sub, CliGroup::job, a.parallel);
  add_force_option(sub, a.force);
}

void add_force_option(CLI::App* sub, bool& force) {
  sub->add_flag("--force", force, "apply a --calibration fitted for another GPU architecture (refused otherwise)");
}

void add_layout_options(CLI::App* sub, LayoutArgs& l) {
  add_field_options(sub, CliGroup::layout, l.parallel);
  sub->add_flag("--dist-opt", l.dist_opt, "distributed optimizer (= --zero 1)");
}

Plan job_skeleton(const JobArgs& a) {
  for (auto [name, missing] : {std::pair{"--model", a.model.empty()}, {"--cluster", a.cluster.empty()}, {"--gpus", a.gpus <= 0}})
    if (missing) throw InputError{std::string(name) + " is required (or give --plan FILE)"};
  Plan p;
  for (const TrainingField& f : training_fields()) {
    auto it = a.training.find(*f.json ? f.json : f.cli);
    if (it == a.training.end() && f.cli_required()) throw InputError{std::string(f.cli) + " is required (or give --plan FILE)"};
    std::string bad = it == a.training.end() ? "" : set_training_field_text(f, p.training, it->second);
    if (!bad.empty()) throw InputError{std::string(f.cli) + ": " + bad};
  }
  p.model = require_model(a.model);
  p.cluster = require_cluster(a.cluster);
  const TrainingSpec& t = p.training;
  if (t.packed_doc_tokens > t.seq_length)
    throw InputError{"--packed-doc-tokens: " + std::to_string(t.packed_doc_tokens) + " is longer than --seq " +
                     std::to_string(t.seq_length) +
                     "; give the mean document length, at most the sequence length (0 = unpacked)"};
  if (t.torch_compile && !framework_profile(t.framework).supports_torch_compile)
    throw InputError{"--torch-compile: applies only to --framework " +
                     frameworks_with(&FrameworkProfile::supports_torch_compile) + " (got " + to_string(t.framework) + ")"};
  p.parallel.world_size = a.gpus;
  p.parallel.cross_entropy_fusion = framework_memory(t.framework).default_cross_entropy_fusion;
  apply_fields(p.parallel, a.parallel);
  if (a.parallel.count("moe_pad_to_capacity") && !a.parallel.count("moe_capacity_factor"))
    throw InputError{"--moe-pad-to-capacity needs --moe-capacity-factor F"};
  return p;
}

Plan plan_from_args(const JobArgs& a, const LayoutArgs& l) {
  Plan p = job_skeleton(a);
  ParallelConfig& q = p.parallel;
  FieldTexts given = l.parallel;
  if (l.dist_opt) given["zero"] = "1";
  const bool balanced = given.count("pipeline_layout") && given["pipeline_layout"] == "balanced";
  if (balanced) given.erase("pipeline_layout");
  q.zero = framework_memory(p.training.framework).default_zero;
  q.cp_comm_type = default_cp_comm(p.training.framework);
  apply_fields(q, given);
  if (balanced) q.pipeline_layout = balanced_pipeline_layout(p.model, q.pp, q.vpp);
  auto problems = validate_layout(p.model, p.cluster, p.training, p.parallel);
  if (!problems.empty()) {
    std::string msg = "invalid layout:";
    for (auto& e : problems) {
      msg += "\n  - " + e;
      if (e.rfind("layers do not split into pp stages", 0) == 0) msg += pipeline_split_hint(p.model.num_layers, q);
    }
    throw InputError{msg};
  }
  return p;
}

std::string pipeline_split_hint(int layers, const ParallelConfig& q) {
  const int pp = q.pp;
  if (pp < 2 || q.num_layers_in_first_pipeline_stage || q.num_layers_in_last_pipeline_stage || !q.pipeline_layout.empty())
    return "";
  std::string hint = "\n    keep --pp " + std::to_string(pp) + " with --pipeline-layout balanced (Megatron's split " +
                     "that counts the embedding and the loss as layers)";
  // uneven first/last stages (Llama-3.1-405B: 126 layers on pp 16 = 7 + 14 x 8 + 7)
  const int middle = pp - 2;
  for (int each = (layers + pp - 1) / pp; q.vpp == 1 && each >= 1 && middle > 0; --each) {
    int rest = layers - middle * each;
    if (rest < 2) continue;
    if (rest > 2 * each) break;
    int first = rest / 2, last = rest - first;
    hint += ", or with --first-stage-layers " + std::to_string(first) + " --last-stage-layers " + std::to_string(last) + " (" +
            std::to_string(first) + " + " + std::to_string(middle) + " x " + std::to_string(each) + " + " + std::to_string(last) +
            " = " + std::to_string(layers) + ")";
    break;
  }
  return hint;
}

CostParams cost_params_for(const Plan& plan, const std::string& calibration_file, bool force) {
  if (calibration_file.empty()) return default_cost_params(plan.cluster);
  Calibration cal = load_calibration(calibration_file);
  std::string warning = check_calibration(cal, plan.cluster.gpu, force);
  if (!warning.empty()) std::cerr << warning << "\n";
  return cal.params_for(plan.cluster.gpu);
}

std::string check_calibration(const Calibration& cal, const GpuSpec& gpu, bool force) {
  std::string why = calibration_mismatch(cal, gpu);
  if (why.empty()) return "";
  if (!force) throw InputError{"--calibration: " + why};
  return "mplan: warning: --force: " + why.substr(0, why.find(';')) + "; applying it anyway";
}

Calibration load_calibration(const std::string& calibration_file) {
  if (calibration_file.empty()) return shipped_calibration();
  std::string bad = check_input_file(calibration_file);
  if (!bad.empty()) throw InputError{"--calibration " + bad};
  auto c = read_calibration_file(calibration_file, shipped_calibration().params);
  if (!c) throw InputError{c.error().message()};
  return c.value();
}

}  // namespace mplan::cli
