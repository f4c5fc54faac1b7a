// torchtitan's current configuration (since the February 2026 refactor that removed TOML job files): a
// Python module whose function returns a Trainer.Config, run with `--module <module> --config
// <function>`. The module starts from torchtitan's shipped configuration of the model
// (torchtitan/models/<model>/config_registry.py) and sets what the plan decides: ParallelismConfig,
// the token counts of TrainingConfig, activation checkpointing, async TP and the float8/MXFP8
// converters. Field names from torchtitan/config/configs.py and torchtitan/trainer.py (main, August 2026).
#include <cctype>
#include <sstream>

#include "planner/planner.h"
#include "planner/torchtitan_export.h"

namespace mplan {

namespace {

std::string py_list(const std::vector<std::string>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", \"" : "\"") + v[i] + "\"";
  return s + "]";
}

std::string module_name(const std::string& model) {
  std::string s = "mplan_";
  for (char c : model) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s;
}

void header(std::ostringstream& o, const Plan& plan, const torchtitan::ModelRef* r) {
  const ModelSpec& m = plan.model;
  const ParallelConfig& p = plan.parallel;
  const int per_node = plan.cluster.gpus_per_node > 0 ? plan.cluster.gpus_per_node : 8;
  const int nodes = (p.world_size + per_node - 1) / per_node;
  const std::string mod = module_name(m.name);
  o << "# torchtitan configuration for " << m.name << " on " << p.world_size << " x " << plan.cluster.gpu.name << " ("
    << plan.cluster.name << "), written by mplan export.\n";
  o << "# Save as " << mod << ".py where Python finds it (the torchtitan repository root, or PYTHONPATH) and run\n";
  if (nodes <= 1)
    o << "#   NGPU=" << p.world_size << " MODULE=" << mod << " CONFIG=mplan_plan ./run_train.sh\n";
  else
    o << "#   torchrun --nnodes " << nodes << " --nproc_per_node " << per_node
      << " --rdzv_backend c10d --rdzv_endpoint <host:port> -m torchtitan.train --module " << mod << " --config mplan_plan\n";
  o << "# (world size " << p.world_size << " = dp_replicate x dp_shard x cp x tp x pp = " << torchtitan::replicate_degree(p)
    << " x " << torchtitan::shard_degree(p) << " x " << p.cp << " x " << p.tp << " x " << p.pp << ")\n";
  if (!r)
    o << "# note: torchtitan ships no definition of " << m.name << ": mplan_plan() needs your Trainer.Config for it; "
      << "apply_mplan_plan() sets the plan's layout on any Trainer.Config\n";
  else if (r->rope != m.rope_scaling.type)
    o << "# note: torchtitan's " << r->module << " " << r->flavor << " uses " << to_string(r->rope)
      << " RoPE scaling; the plan's model uses " << to_string(m.rope_scaling.type) << "\n";
}

void parallelism(std::ostringstream& o, const Plan& plan) {
  const ParallelConfig& p = plan.parallel;
  o << "    config.parallelism = ParallelismConfig(\n";
  o << "        data_parallel_replicate_degree=" << torchtitan::replicate_degree(p) << ",\n";
  o << "        data_parallel_shard_degree=" << torchtitan::shard_degree(p) << ",\n";
  if (p.zero == 2) o << "        fsdp_reshard_after_forward=\"never\",  # ZeRO-2: parameters stay gathered after forward\n";
  o << "        tensor_parallel_degree=" << p.tp << ",\n";
  if (p.tp > 1) o << "        enable_sequence_parallel=" << (p.sp ? "True" : "False") << ",\n";
  o << "        pipeline_parallel_degree=" << p.pp << ",\n";
  if (p.pp > 1) {
    const char* sched = p.schedule == Schedule::interleaved ? "Interleaved1F1B"
                        : p.schedule == Schedule::gpipe     ? "GPipe"
                                                            : "1F1B";
    o << "        pipeline_parallel_schedule=\"" << sched << "\",\n";
    o << "        num_pp_microbatches=" << plan.training.global_batch_size / (int64_t(p.dp()) * p.micro_batch_size) << ",\n";
    o << "        module_fqns_per_model_part=[\n";
    for (const auto& s : torchtitan::stage_modules(plan, "lm_head")) o << "            " << py_list(s) << ",\n";
    o << "        ],\n";
  }
  o << "        context_parallel_degree=" << p.cp << ",\n";
  o << "        expert_parallel_degree=" << p.ep << ",\n";
  o << "    )\n";
}

void training(std::ostringstream& o, const Plan& plan) {
  const ParallelConfig& p = plan.parallel;
  const TrainingSpec& t = plan.training;
  o << "    # tokens per data-parallel rank and forward (before CP/TP sharding), and per optimizer step: " << t.global_batch_size
    << " sequences of " << t.seq_length << "\n";
  o << "    config.training.num_tokens_per_microbatch_per_dp_rank = " << p.micro_batch_size << " * " << t.seq_length << "\n";
  o << "    config.training.num_tokens_per_train_step = " << t.global_batch_size << " * " << t.seq_length << "\n";
  o << "    config.training.max_context_length = " << t.seq_length << "\n";
  bool fp32 = t.precision == Precision::fp32 || t.precision == Precision::tf32;
  o << "    config.training.mixed_precision_param = \"" << (fp32 ? "float32" : "bfloat16") << "\"\n";
  if (p.tp_comm_overlap)  // CompileConfig checks that async TP compiles the model
    o << "    config.compile = CompileConfig(enable=True, enable_async_tensor_parallel=True)\n";
  else
    o << "    config.compile.enable = " << (t.torch_compile ? "True" : "False")
      << "\n    config.compile.enable_async_tensor_parallel = False\n";
  const char* ac = p.recompute == Recompute::none        ? "None"
                   : p.recompute == Recompute::selective ? "SelectiveAC.Config()"
                                                         : "FullAC.Config()";
  o << "    config.activation_checkpoint = " << ac << "\n";
}

// model_registry(...) of the plan's precision and MoE dispatcher (converters are applied there)
std::string registry_call(const Plan& plan, const torchtitan::ModelRef& r) {
  const ParallelConfig& p = plan.parallel;
  std::string s = std::string("model_registry(\"") + r.flavor + "\"";
  if (p.ep > 1 && p.moe_dispatcher != MoeDispatcher::alltoall) s += ", moe_comm_backend=\"" + to_string(p.moe_dispatcher) + "\"";
  if (plan.model.mtp_num_layers > 0) s += ", num_mtp_layers=" + std::to_string(plan.model.mtp_num_layers);
  const Precision prec = plan.training.precision;
  if (prec == Precision::fp8 || prec == Precision::mxfp8) {
    s += prec == Precision::fp8 ? ", converters=[Float8LinearConverter.Config(" : ", converters=[MXFP8LinearConverter.Config(";
    s += "model_compile_enabled=compiled)]";
  }
  return s + ")";
}

}  // namespace

Expected<std::string> export_torchtitan_config(const Plan& plan) {
  auto e = torchtitan::layout_problems(plan, TorchtitanVersion::current);
  if (!e.empty()) return Error(e);
  const torchtitan::ModelRef* r = torchtitan::model_ref(plan.model.name);
  const Precision prec = plan.training.precision;
  std::ostringstream o;
  header(o, plan, r);
  o << "\n";
  if (prec == Precision::fp8) o << "from torchtitan.components.quantization import Float8LinearConverter\n";
  if (prec == Precision::mxfp8) o << "from torchtitan.components.quantization import MXFP8LinearConverter\n";
  o << "from torchtitan.config import " << (plan.parallel.tp_comm_overlap ? "CompileConfig, " : "") << "ParallelismConfig\n";
  o << "from torchtitan.distributed.activation_checkpoint import FullAC, SelectiveAC\n";
  if (r) {
    o << "from torchtitan.models." << r->module << " import model_registry\n";
    o << "from torchtitan.models." << r->module << ".config_registry import " << r->config_fn << "\n";
  }
  o << "from torchtitan.trainer import Trainer\n\n\n";
  o << "def apply_mplan_plan(config: Trainer.Config) -> Trainer.Config:\n";
  o << "    \"\"\"The layout mplan planned: tp" << plan.parallel.tp << " pp" << plan.parallel.pp << " cp" << plan.parallel.cp
    << " dp" << plan.parallel.dp() << " ep" << plan.parallel.ep << ".\"\"\"\n";
  parallelism(o, plan);
  training(o, plan);
  o << "    return config\n\n\n";
  o << "def mplan_plan() -> Trainer.Config:\n";
  if (!r) {
    o << "    raise NotImplementedError(\n        \"torchtitan ships no definition of " << plan.model.name
      << ": return apply_mplan_plan(<your Trainer.Config for it>)\"\n    )\n";
    return o.str();
  }
  o << "    config = apply_mplan_plan(" << r->config_fn << "())\n";
  if (prec == Precision::fp8 || prec == Precision::mxfp8)
    o << "    compiled = config.compile.enable and \"model\" in config.compile.components\n";
  o << "    config.model_spec = " << registry_call(plan, *r) << "\n";
  o << "    config.hf_assets_path = \"" << r->hf_assets << "\"\n";
  o << "    return config\n";
  return o.str();
}

}  // namespace mplan
