// Job and layout options -> Plan (see plan_args.h).
#include "cli/plan_args.h"

#include <cctype>
#include <iostream>

#include "cli/commands.h"
#include "cli/resolve.h"
#include "core/bounded_input.h"
#include "core/framework_profile.h"

namespace mplan::cli {

namespace {
template <typename E>
std::string module_names(const std::vector<std::pair<std::string, E>>& table) {
  std::vector<std::string> n;
  n.reserve(table.size());
  for (const auto& [name, e] : table) n.push_back(name);
  return join_names(n, "|");
}
}  // namespace

void add_job_options(CLI::App* sub, JobArgs& a, bool required) {
  auto* m = sub->add_option("--model", a.model, "model preset, mplan model JSON or Hugging Face config.json");
  auto* c = sub->add_option("--cluster", a.cluster, "cluster preset or cluster JSON");
  auto* g = sub->add_option("--gpus", a.gpus, "number of GPUs")->check(int_range(1, kMaxGpus));
  auto* b = sub->add_option("--gbs", a.gbs, "global batch size (sequences)")->check(int_range(1, kMaxBatch));
  auto* s = sub->add_option("--seq", a.seq, "sequence length")->check(int_range(1, kMaxSeq));
  if (required)
    for (auto* o : {m, c, g, b, s}) o->required();
  sub->add_option("--precision", a.precision, "bf16|fp16|fp8|mxfp8|nvfp4|fp32")
      ->check(CLI::IsMember({"bf16", "fp16", "fp8", "mxfp8", "nvfp4", "fp32"}));
  sub->add_option("--method", a.method, "pretrain|sft|lora (lora: frozen base weights)")
      ->check(CLI::IsMember({"pretrain", "sft", "lora"}));
  sub->add_option("--packed-doc-tokens", a.packed_doc_tokens,
                  "packed sequences: mean tokens per document (attention stays within each); 0 = unpacked")
      ->check(int_range(0, kMaxSeq));
  sub->add_option("--calibration", a.calibration, "calibration JSON (mplan.calibration/1) from mplan calibrate");
  sub->add_option("--framework", a.framework, "training framework megatron|torchtitan|llm-foundry|maxtext (default megatron)")
      ->check(CLI::IsMember(framework_choices()));
  sub->add_flag("--torch-compile", a.torch_compile,
                "torchtitan: the model is compiled (torch.compile fuses each block's pointwise ops); default eager");
  sub->add_flag("--fp8-param-gather", a.fp8_param_gather, "fp8 weights as the primary copy (Megatron --fp8-param-gather)");
  sub->add_flag("--grad-reduce-in-bf16", a.grad_reduce_in_bf16, "keep and reduce gradients in bf16 (default fp32 main grads)");
  sub->add_flag("--cross-entropy-fusion", a.cross_entropy_fusion,
                "fused cross-entropy writing its gradient into the bf16 logits (Megatron --cross-entropy-fusion-impl te)");
  sub->add_option("--main-params", a.main_params, "optimizer master weights fp32|remainder|bf16|none (default fp32)")
      ->check(CLI::IsMember({"fp32", "remainder", "bf16", "none"}));
  sub->add_flag("--adam-states-bf16", a.adam_states_bf16, "Adam moments in bf16 (default fp32)");
  sub->add_option("--moe-capacity-factor", a.moe_capacity_factor,
                  "MoE expert capacity factor > 0: tokens beyond it are dropped (default: dropless)")
      ->check(real_range(0, 1000, true));
  sub->add_flag("--moe-pad-to-capacity", a.moe_pad_to_capacity,
                "pad every expert's input to its capacity (needs --moe-capacity-factor)");
  sub->add_option("--dp-replicate", a.dp_replicate,
                  "shard the optimizer / FSDP over dp*cp/N ranks and replicate N times (HSDP, distributed-optimizer instances)")
      ->check(int_range(1, kMaxGpus));
  add_force_option(sub, a.force);
}

void add_force_option(CLI::App* sub, bool& force) {
  sub->add_flag("--force", force, "apply a --calibration fitted for another GPU architecture (refused otherwise)");
}

void add_layout_options(CLI::App* sub, LayoutArgs& l) {
  sub->add_option("--mbs", l.mbs, "micro-batch size")->check(int_range(1, kMaxBatch));
  sub->add_option("--tp", l.tp, "tensor-parallel size")->check(int_range(1, kMaxGpus));
  sub->add_option("--pp", l.pp, "pipeline-parallel size")->check(int_range(1, kMaxGpus));
  sub->add_option("--vpp", l.vpp, "virtual pipeline chunks per pipeline rank")->check(int_range(1, kMaxGpus));
  sub->add_option("--cp", l.cp, "context-parallel size")->check(int_range(1, kMaxGpus));
  sub->add_option("--cp-comm", l.cp_comm,
                  "context-parallel exchange p2p|a2a|allgather (default: the framework's, p2p for megatron, allgather for "
                  "torchtitan and maxtext)")
      ->check(CLI::IsMember({"p2p", "a2a", "allgather"}));
  sub->add_option("--ep", l.ep, "expert-parallel size")->check(int_range(1, kMaxGpus));
  sub->add_option("--etp", l.etp, "expert tensor-parallel size")->check(int_range(1, kMaxGpus));
  auto* sp = sub->add_flag_function(
      "--sp", [&l](int64_t) { l.sp = true; }, "sequence parallel (default on when tp > 1)");
  auto* nsp = sub->add_flag_function(
      "--no-sp", [&l](int64_t) { l.sp = false; }, "no sequence parallel");
  sp->excludes(nsp);
  sub->add_option("--zero", l.zero, "0 = DDP, 1 = distributed optimizer, 2, 3 = FSDP")->check(CLI::Range(0, 3));
  sub->add_flag("--dist-opt", l.dist_opt, "distributed optimizer (= --zero 1)");
  sub->add_option("--recompute", l.recompute, "none|selective|full")->check(CLI::IsMember({"none", "selective", "full"}));
  sub->add_option("--recompute-layers", l.recompute_layers, "layers per chunk recomputed with --recompute full")
      ->check(int_range(0, kMaxLayers));
  sub->add_option("--schedule", l.schedule, "gpipe|1f1b|interleaved|zb (default 1f1b, interleaved when vpp > 1)")
      ->check(CLI::IsMember({"gpipe", "1f1b", "interleaved", "zb"}));
  sub->add_option("--attention", l.attention, "flash|unfused|triton attention kernels")
      ->check(CLI::IsMember({"flash", "unfused", "triton"}));
  sub->add_flag("--tp-comm-overlap", l.tp_comm_overlap, "overlap TP communication with GEMMs (needs sp)");
  sub->add_option("--moe-dispatcher", l.moe_dispatcher, "MoE token dispatcher alltoall|deepep|hybridep")
      ->check(CLI::IsMember({"alltoall", "deepep", "hybridep"}));
  sub->add_flag("--moe-force-balance", l.moe_force_balance, "forced MoE load balancing (benchmarks); default: learned routing");
  sub->add_flag("--moe-a2a-overlap", l.moe_a2a_overlap, "overlap EP all-to-alls with another micro-batch's compute");
  sub->add_flag("--no-overlap-grad-reduce", l.no_overlap_grad_reduce, "do not overlap DP gradient reduction");
  sub->add_flag("--no-overlap-param-gather", l.no_overlap_param_gather, "do not overlap the parameter all-gather");
  sub->add_option("--first-stage-layers", l.first_stage_layers, "layers on the first pipeline stage (0 = even)")
      ->check(int_range(0, kMaxLayers));
  sub->add_option("--last-stage-layers", l.last_stage_layers, "layers on the last pipeline stage (0 = even)")
      ->check(int_range(0, kMaxLayers));
  sub->add_option("--pipeline-layout", l.pipeline_layout,
                  "layers per chunk: 'balanced' (most even split) or 'a,b;c,d' (stages by ';', chunks by ',')");
  sub->add_option("--recompute-modules", l.recompute_modules,
                  "with --recompute selective: Megatron modules core_attn,layernorm,mlp,moe,moe_act,mla_up_proj,shared_experts");
  sub->add_option("--offload-modules", l.offload_modules,
                  "fine-grained activation offloading of attn_norm,qkv_linear,core_attn,attn_proj,mlp_norm,expert_fc1,moe_act");
  sub->add_option("--cpu-offload-layers", l.cpu_offload_layers, "offload the activations of this many layers (Megatron, pp=1)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--remat-policy", l.remat_policy,
                  "MaxText remat policy with --recompute selective: full|save_qkv_proj|save_out_proj|save_dot_except_mlp|"
                  "save_dot_except_mlpwi|minimal");
}

Plan job_skeleton(const JobArgs& a) {
  for (auto [name, missing] : {std::pair{"--model", a.model.empty()},
                               {"--cluster", a.cluster.empty()},
                               {"--gpus", a.gpus <= 0},
                               {"--gbs", a.gbs <= 0},
                               {"--seq", a.seq <= 0}})
    if (missing) throw InputError{std::string(name) + " is required (or give --plan FILE)"};
  Plan p;
  p.model = require_model(a.model);
  p.cluster = require_cluster(a.cluster);
  p.training.global_batch_size = a.gbs;
  p.training.seq_length = a.seq;
  p.training.precision = *parse_precision(a.precision);
  p.training.method = a.method == "lora"  ? TrainingMethod::lora
                      : a.method == "sft" ? TrainingMethod::sft
                                          : TrainingMethod::pretrain;
  if (a.packed_doc_tokens > a.seq)
    throw InputError{"--packed-doc-tokens: " + std::to_string(a.packed_doc_tokens) + " is longer than --seq " +
                     std::to_string(a.seq) + "; give the mean document length, at most the sequence length (0 = unpacked)"};
  p.training.packed_doc_tokens = a.packed_doc_tokens;
  auto fw = parse_framework(a.framework);
  if (!fw) throw InputError{"--framework: '" + a.framework + "' is not one of " + join_names(framework_choices(), "|")};
  p.training.framework = *fw;
  if (a.torch_compile && !framework_profile(*fw).supports_torch_compile)
    throw InputError{"--torch-compile: applies only to --framework " +
                     frameworks_with(&FrameworkProfile::supports_torch_compile) + " (got " + a.framework + ")"};
  p.training.torch_compile = a.torch_compile;
  p.parallel.world_size = a.gpus;
  ParallelConfig& q = p.parallel;
  q.fp8_param_gather = a.fp8_param_gather;
  q.grad_reduce_in_bf16 = a.grad_reduce_in_bf16;
  q.cross_entropy_fusion = a.cross_entropy_fusion || framework_memory(*fw).default_cross_entropy_fusion;
  q.adam_states_bf16 = a.adam_states_bf16;
  q.main_params = *parse_main_params(a.main_params);
  if (a.moe_capacity_factor && !(*a.moe_capacity_factor > 0 && *a.moe_capacity_factor < 1e6))
    throw InputError{"--moe-capacity-factor: must be > 0 (omit it for dropless routing), got " +
                     std::to_string(*a.moe_capacity_factor)};
  if (a.moe_pad_to_capacity && !a.moe_capacity_factor) throw InputError{"--moe-pad-to-capacity needs --moe-capacity-factor F"};
  q.moe_capacity_factor = a.moe_capacity_factor.value_or(0);
  q.moe_pad_to_capacity = a.moe_pad_to_capacity;
  q.dp_replicate = a.dp_replicate;
  return p;
}

Plan plan_from_args(const JobArgs& a, const LayoutArgs& l) {
  Plan p = job_skeleton(a);
  ParallelConfig& q = p.parallel;
  q.tp = l.tp;
  q.pp = l.pp;
  q.vpp = l.vpp;
  q.cp = l.cp;
  q.cp_comm_type = l.cp_comm.empty() ? default_cp_comm(p.training.framework) : *parse_cp_comm_type(l.cp_comm);
  q.ep = l.ep;
  q.etp = l.etp;
  q.sp = l.sp.value_or(l.tp > 1);
  q.zero = l.dist_opt ? 1 : l.zero.value_or(framework_memory(p.training.framework).default_zero);
  q.micro_batch_size = l.mbs;
  q.recompute = *parse_recompute(l.recompute);
  q.recompute_num_layers = l.recompute_layers;
  q.schedule = l.schedule.empty() ? (l.vpp > 1 ? Schedule::interleaved : Schedule::one_f_one_b) : *parse_schedule(l.schedule);
  q.tp_comm_overlap = l.tp_comm_overlap;
  q.attention_backend = *parse_attention_backend(l.attention);
  q.overlap_grad_reduce = !l.no_overlap_grad_reduce;
  q.moe_dispatcher = *parse_moe_dispatcher(l.moe_dispatcher);
  q.moe_force_balance = l.moe_force_balance;
  q.moe_a2a_overlap = l.moe_a2a_overlap;
  q.overlap_param_gather = !l.no_overlap_param_gather;
  if (!l.recompute_modules.empty()) {
    std::string bad;
    auto mods = parse_recompute_modules(split_list(l.recompute_modules), &bad);
    if (!mods)
      throw InputError{"--recompute-modules: '" + bad +
                       "' is not a Megatron recompute module; valid: " + module_names(recompute_module_names())};
    q.recompute_modules = *mods;
  }
  if (!l.offload_modules.empty()) {
    std::string bad;
    auto mods = parse_offload_modules(split_list(l.offload_modules), &bad);
    if (!mods)
      throw InputError{"--offload-modules: '" + bad +
                       "' is not an activation offloading module; valid: " + module_names(offload_module_names())};
    q.offload_modules = *mods;
  }
  q.cpu_offload_layers = l.cpu_offload_layers;
  if (!l.remat_policy.empty()) {
    auto rp = parse_remat_policy(l.remat_policy);
    if (!rp || *rp == RematPolicy::none)
      throw InputError{"--remat-policy: '" + l.remat_policy + "' is not one of " + join_names(remat_policy_choices(), "|")};
    q.remat_policy = *rp;
  }
  q.num_layers_in_first_pipeline_stage = l.first_stage_layers;
  q.num_layers_in_last_pipeline_stage = l.last_stage_layers;
  if (l.pipeline_layout == "balanced") {
    q.pipeline_layout = balanced_pipeline_layout(p.model, q.pp, q.vpp);
  } else if (!l.pipeline_layout.empty()) {
    std::vector<int> row;
    std::string num;
    auto flush = [&](bool end_stage) {
      if (num.empty()) throw InputError{"--pipeline-layout: expected numbers like '4,4;4,3', got '" + l.pipeline_layout + "'"};
      if (num.size() > 9 || std::stoll(num) > p.model.num_layers)
        throw InputError{"--pipeline-layout: " + num + " layers in one chunk exceeds the model's " +
                         std::to_string(p.model.num_layers) + " layers"};
      row.push_back(int(std::stoll(num)));
      num.clear();
      if (end_stage) {
        q.pipeline_layout.push_back(row);
        row.clear();
      }
    };
    for (char ch : l.pipeline_layout) {
      if (std::isdigit(static_cast<unsigned char>(ch)))
        num += ch;
      else if (ch == ',')
        flush(false);
      else if (ch == ';')
        flush(true);
      else if (ch != ' ')
        throw InputError{"--pipeline-layout: unexpected character '" + std::string(1, ch) + "'"};
    }
    flush(true);
  }
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
