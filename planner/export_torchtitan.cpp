// torchtitan exports: the layout checks of each torchtitan version, the models torchtitan defines, and
// the TOML job files of the releases that read one: v0.1 (torchtitan/config_manager.py:
// pipeline_parallel_split_points, converters "float8"/"mx") and v0.2.x (torchtitan/config/job_config.py:
// module_fqns_per_model_part, converters "quantize.linear.float8"/"quantize.linear.mx"). torchtitan
// after February 2026 reads a Python configuration instead: planner/export_torchtitan_config.cpp.
#include <sstream>

#include "planner/planner.h"
#include "planner/torchtitan_export.h"

namespace mplan {

namespace torchtitan {

namespace {

// torchtitan/models/<module>/config_registry.py (main, August 2026; the flavors are v0.2.x's too)
const ModelRef kModels[] = {
    {"llama3-8b", "llama3", "llama3_8b", "8B", "./assets/hf/Llama-3.1-8B", RopeScalingType::llama3},
    {"llama3-70b", "llama3", "llama3_70b", "70B", "./assets/hf/Llama-3.1-70B", RopeScalingType::llama3},
    {"llama3.1-405b", "llama3", "llama3_405b", "405B", "./assets/hf/Llama-3.1-405B", RopeScalingType::llama3},
    {"deepseek-v3", "deepseek_v3", "deepseek_v3_671b", "671B", "./assets/hf/DeepSeek-V3.1-Base", RopeScalingType::yarn},
    {"qwen3-30b-a3b", "qwen3", "qwen3_30b_a3b", "30B-A3B", "./assets/hf/Qwen3-30B-A3B", RopeScalingType::none},
    // no shipped configuration: the 30B-A3B one with the 235B-A22B flavor
    {"qwen3-235b-a22b", "qwen3", "qwen3_30b_a3b", "235B-A22B", "./assets/hf/Qwen3-235B-A22B", RopeScalingType::none},
    {"gpt-oss-120b", "gpt_oss", "gpt_oss_120b", "120b", "./assets/hf/gpt-oss-120b", RopeScalingType::yarn},
};

std::string num(int64_t v) { return std::to_string(v); }

}  // namespace

const ModelRef* model_ref(const std::string& mplan_name) {
  for (const ModelRef& r : kModels)
    if (mplan_name == r.mplan_name) return &r;
  return nullptr;
}

int replicate_degree(const ParallelConfig& p) { return p.zero >= 2 ? 1 : p.dp(); }
int shard_degree(const ParallelConfig& p) { return p.zero >= 2 ? p.dp() : 1; }

std::vector<std::string> layout_problems(const Plan& plan, TorchtitanVersion v) {
  const ModelSpec& m = plan.model;
  const ParallelConfig& p = plan.parallel;
  const TrainingSpec& t = plan.training;
  std::vector<std::string> e;
  if (p.zero == 1)
    e.push_back(
        "torchtitan has no ZeRO-1 (distributed optimizer without sharded gradients): use zero 2 (FSDP that keeps "
        "parameters after forward) or zero 3 (FSDP)");
  if (p.zero == 0 && (p.tp > 1 || p.pp > 1 || p.cp > 1 || p.ep > 1))
    e.push_back("torchtitan's DDP (data_parallel_replicate_degree alone) does not combine with TP/PP/CP/EP: use zero 2 or 3");
  if (p.tp > 1 && !p.sp && v != TorchtitanVersion::current)
    e.push_back("torchtitan before its Python configuration always shards the sequence with tensor parallelism: use sp on");
  if (p.cp > 1 && p.cp_comm_type == CpCommType::a2a)
    e.push_back("torchtitan's context parallelism rotates K/V shards, it has no head-scattering a2a: use cp_comm " +
                std::string(v == TorchtitanVersion::current ? "allgather" : "p2p or allgather"));
  if (p.cp > 1 && p.cp_comm_type == CpCommType::p2p && v == TorchtitanVersion::current)
    e.push_back(
        "torchtitan's current context parallelism has no rotate-method option (PyTorch's all-gather of K/V): use "
        "cp_comm allgather, or --torchtitan-version 0.2 for context_parallel_rotate_method");
  if (p.ep > 1) {
    const int64_t dense = int64_t(shard_degree(p)) * p.cp * p.tp;
    if (v == TorchtitanVersion::v0_1) {
      if (p.etp > 1) e.push_back("expert tensor parallelism (etp > 1) is not a torchtitan 0.1 option: use etp 1");
      if (!(p.cp <= p.ep && p.ep <= shard_degree(p) * p.cp))
        e.push_back("torchtitan 0.1 needs cp <= ep <= dp_shard*cp for expert parallelism (ep=" + num(p.ep) + ")");
    } else if (v == TorchtitanVersion::v0_2) {
      if (p.etp != 1 && p.etp != p.tp)
        e.push_back(
            "torchtitan 0.2 supports etp = 1 or etp = tp (parallel_dims.py 'Currently we only support ETP=TP or "
            "ETP=1'); got etp=" +
            num(p.etp));
      else if (dense % (int64_t(p.ep) * p.etp) != 0)
        e.push_back("torchtitan 0.2 needs ep*etp to divide dp_shard*cp*tp (" + num(dense) + "); got ep=" + num(p.ep));
    } else {
      if (p.etp != 1)
        e.push_back(
            "torchtitan's current expert parallelism has no expert tensor parallelism (experts borrow ranks from FSDP "
            "and TP): use etp 1");
      else if (dense % p.ep != 0)
        e.push_back("torchtitan needs ep to divide dp_shard*cp*tp (" + num(dense) +
                    ", configs.py: EP borrows ranks from "
                    "FSDP and TP); got ep=" +
                    num(p.ep));
    }
  }
  if (p.moe_dispatcher != MoeDispatcher::alltoall && m.moe) {
    if (v == TorchtitanVersion::v0_1 || (v == TorchtitanVersion::v0_2 && p.moe_dispatcher == MoeDispatcher::hybridep))
      e.push_back("torchtitan " + std::string(v == TorchtitanVersion::v0_1 ? "0.1" : "0.2") + " has no " +
                  to_string(p.moe_dispatcher) + " dispatcher: use moe_dispatcher alltoall");
    const ModelRef* r = model_ref(m.name);
    if (v == TorchtitanVersion::current && (!r || std::string(r->module) == "llama3"))
      e.push_back("the " + to_string(p.moe_dispatcher) + " dispatcher is a model_registry option of torchtitan's MoE models; '" +
                  m.name + "' is not one: use moe_dispatcher alltoall");
  }
  if (m.mtp_num_layers > 0) {
    const ModelRef* r = model_ref(m.name);
    if (v != TorchtitanVersion::current || !r || std::string(r->module) != "deepseek_v3")
      e.push_back("mtp_num_layers=" + num(m.mtp_num_layers) +
                  ": multi-token prediction is a torchtitan option of DeepSeek-V3 "
                  "in its current configuration only; set mtp_num_layers 0 (or export the current configuration)");
  }
  if (p.schedule == Schedule::zero_bubble)
    e.push_back("ZB-H1 with one stage per rank is not a torchtitan schedule: use 1f1b or interleaved");
  if (p.recompute == Recompute::full && p.recompute_num_layers > 0)
    e.push_back("torchtitan recomputes all layers or every n-th layer, not the first k of each stage: use recompute_layers 0");
  if (t.precision == Precision::fp16 || t.precision == Precision::nvfp4)
    e.push_back("torchtitan trains in bf16 or fp32 (optionally with float8/mxfp8 converters), not " +
                std::string(to_string(t.precision)));
  if (p.attention_backend == AttentionBackend::unfused) e.push_back("torchtitan uses fused (SDPA/flex) attention only");
  if (p.pp > 1 && v == TorchtitanVersion::v0_1) {
    auto n = layers_per_stage_chunk(m, p);
    for (int c = 0; c < p.vpp; ++c)
      for (int s = 0; s < p.pp; ++s)
        if (n[s][c] == 0 && !(c == 0 && s == 0) && !(c == p.vpp - 1 && s == p.pp - 1))
          e.push_back("a pipeline stage without layers cannot be expressed with torchtitan 0.1 split points");
  }
  if (p.pp > 1 && v != TorchtitanVersion::v0_1)
    for (const auto& s : stage_modules(plan, "output"))
      if (s.empty()) e.push_back("a pipeline stage without any module (layers, embedding or head) cannot run in torchtitan");
  return e;
}

std::vector<std::vector<std::string>> stage_modules(const Plan& plan, const std::string& head) {
  const ParallelConfig& p = plan.parallel;
  auto n = layers_per_stage_chunk(plan.model, p);
  std::vector<std::vector<std::string>> stages;
  int layer = 0;
  for (int c = 0; c < p.vpp; ++c)
    for (int s = 0; s < p.pp; ++s) {
      std::vector<std::string> mods;
      if (c == 0 && s == 0) mods.push_back("tok_embeddings");
      for (int i = 0; i < n[s][c]; ++i) mods.push_back("layers." + std::to_string(layer++));
      if (c == p.vpp - 1 && s == p.pp - 1) mods.insert(mods.end(), {"norm", head});
      stages.push_back(mods);
    }
  return stages;
}

}  // namespace torchtitan

std::optional<TorchtitanVersion> parse_torchtitan_version(const std::string& s) {
  if (s.empty() || s == "current" || s == "main") return TorchtitanVersion::current;
  if (s == "0.2" || s == "0.2.0" || s == "0.2.1" || s == "0.2.2" || s == "0.2.x") return TorchtitanVersion::v0_2;
  if (s == "0.1" || s == "0.1.0" || s == "0.1.x") return TorchtitanVersion::v0_1;
  return std::nullopt;
}

namespace {

// [job] and [model]: torchtitan's definition of the model where it ships one
void toml_model(std::ostringstream& o, const Plan& plan, TorchtitanVersion v) {
  const ModelSpec& m = plan.model;
  const ParallelConfig& p = plan.parallel;
  const torchtitan::ModelRef* r = torchtitan::model_ref(m.name);
  o << "# torchtitan " << (v == TorchtitanVersion::v0_2 ? "0.2.x" : "0.1") << " job config for " << m.name << " on "
    << p.world_size << " x " << plan.cluster.gpu.name << " (written by mplan export)\n";
  o << "# run with NGPU x nodes = " << p.world_size << " ranks: torchrun ... -m torchtitan.train --job.config_file <this file>\n";
  if (!r)
    o << "# note: torchtitan ships no definition of " << m.name << ": set [model] name/flavor to your own model\n";
  else if (r->rope != m.rope_scaling.type)
    o << "# note: torchtitan's " << r->module << " " << r->flavor << " uses " << to_string(r->rope)
      << " RoPE scaling; the plan's model uses " << to_string(m.rope_scaling.type) << "\n";
  o << "[job]\ndescription = \"" << m.name << " tp" << p.tp << " pp" << p.pp << " cp" << p.cp << " dp" << p.dp() << "\"\n\n";
  o << "[model]\nname = \"" << (r ? r->module : m.name.c_str()) << "\"\nflavor = \"" << (r ? r->flavor : m.name.c_str())
    << "\"\n";
  if (r && v == TorchtitanVersion::v0_2) o << "hf_assets_path = \"" << r->hf_assets << "\"\n";
  const Precision prec = plan.training.precision;
  const bool v2 = v == TorchtitanVersion::v0_2;
  if (prec == Precision::fp8) o << "converters = [\"" << (v2 ? "quantize.linear.float8" : "float8") << "\"]\n";
  if (prec == Precision::mxfp8) o << "converters = [\"" << (v2 ? "quantize.linear.mx" : "mx") << "\"]\n";
}

void toml_pipeline(std::ostringstream& o, const Plan& plan, TorchtitanVersion v) {
  const ParallelConfig& p = plan.parallel;
  const char* sched = p.schedule == Schedule::interleaved ? "Interleaved1F1B" : p.schedule == Schedule::gpipe ? "GPipe" : "1F1B";
  o << "pipeline_parallel_schedule = \"" << sched << "\"\n";
  o << "pipeline_parallel_microbatch_size = " << p.micro_batch_size << "\n";
  auto stages = torchtitan::stage_modules(plan, "output");
  if (v == TorchtitanVersion::v0_1) {
    // the first layer of every stage but the first, in model order
    o << "pipeline_parallel_split_points = [";
    int layer = 0;
    for (size_t i = 0; i < stages.size(); ++i) {
      if (i > 0) o << (i > 1 ? ", " : "") << "\"layers." << layer << "\"";
      for (const auto& mod : stages[i]) layer += mod.rfind("layers.", 0) == 0 ? 1 : 0;
    }
    o << "]\n";
    return;
  }
  o << "module_fqns_per_model_part = [";
  for (size_t i = 0; i < stages.size(); ++i) {
    o << (i ? ", " : "") << "[";
    for (size_t j = 0; j < stages[i].size(); ++j) o << (j ? ", " : "") << "\"" << stages[i][j] << "\"";
    o << "]";
  }
  o << "]\n";
}

std::string toml(const Plan& plan, TorchtitanVersion v) {
  const ParallelConfig& p = plan.parallel;
  const TrainingSpec& t = plan.training;
  std::ostringstream o;
  toml_model(o, plan, v);
  o << "\n[training]\n";
  // per data-parallel rank and step: the whole local batch when pipelining (it is split into
  // micro-batches), else one micro-batch (torchtitan accumulates gradients up to global_batch_size)
  o << "local_batch_size = " << (p.pp > 1 ? t.global_batch_size / p.dp() : p.micro_batch_size) << "\n";
  o << "global_batch_size = " << t.global_batch_size << "\n";
  o << "seq_len = " << t.seq_length << "\n";
  o << "mixed_precision_param = \"" << (t.precision == Precision::fp32 || t.precision == Precision::tf32 ? "float32" : "bfloat16")
    << "\"\n";
  // torch.compile: asked for in the plan, or needed by async tensor parallelism
  const char* why = p.tp_comm_overlap ? "  # async tensor parallelism needs torch.compile\n" : "\n";
  const bool compiled = t.torch_compile || p.tp_comm_overlap;
  if (compiled && v == TorchtitanVersion::v0_1) o << "compile = true" << why;
  o << "\n[parallelism]\n";
  o << "data_parallel_replicate_degree = " << torchtitan::replicate_degree(p) << "\n";
  o << "data_parallel_shard_degree = " << torchtitan::shard_degree(p) << "\n";
  if (p.zero == 2) o << "fsdp_reshard_after_forward = \"never\"\n";
  o << "tensor_parallel_degree = " << p.tp << "\n";
  if (p.tp_comm_overlap) o << "enable_async_tensor_parallel = true\n";
  o << "pipeline_parallel_degree = " << p.pp << "\n";
  if (p.pp > 1) toml_pipeline(o, plan, v);
  o << "context_parallel_degree = " << p.cp << "\n";
  if (p.cp > 1)
    o << "context_parallel_rotate_method = \"" << (p.cp_comm_type == CpCommType::allgather ? "allgather" : "alltoall") << "\"\n";
  if (p.ep > 1) o << "expert_parallel_degree = " << p.ep << "\n";
  if (p.ep > 1 && v == TorchtitanVersion::v0_2) o << "expert_tensor_parallel_degree = " << p.etp << "\n";
  if (p.ep > 1 && v == TorchtitanVersion::v0_2 && p.moe_dispatcher == MoeDispatcher::deepep)
    o << "expert_parallel_comm_backend = \"deepep\"\n";
  if (compiled && v == TorchtitanVersion::v0_2) o << "\n[compile]\nenable = true" << why;
  o << "\n[activation_checkpoint]\n";
  o << "mode = \""
    << (p.recompute == Recompute::none        ? "none"
        : p.recompute == Recompute::selective ? "selective"
                                              : "full")
    << "\"\n";
  if (p.recompute == Recompute::selective) o << "selective_ac_option = \"op\"\n";
  return o.str();
}

}  // namespace

Expected<std::string> export_torchtitan_toml(const Plan& plan, TorchtitanVersion v) {
  if (v == TorchtitanVersion::current)
    return Error("torchtitan's current configuration is a Python module, not a TOML job file (export_torchtitan_config)");
  auto e = torchtitan::layout_problems(plan, v);
  if (!e.empty()) return Error(e);
  return toml(plan, v);
}

}  // namespace mplan
