// The ParallelConfig descriptor table (see parallel_fields.h), the names of its enums' values, and the
// generic readers and writers of a field's value as text and Megatron-LM argument.
#include "core/parallel_fields.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <utility>

#include "core/json_fields.h"
#include "core/limits.h"

namespace mplan {

namespace {

using P = ParallelConfig;
using T = FieldType;
using S = FieldScope;
using G = CliGroup;
using M = MegatronMap;

// an enum member as text: its name (core/activation_options.h: enum_names)
template <auto Member>
std::string get_choice(const P& p) {
  return value_text(p.*Member);
}
template <auto Member>
std::string set_choice(P& p, const std::string& s) {
  return value_from_text(s, 0, 0, true, p.*Member);
}
template <auto Member>
void copy_member(P& dst, const P& src) {
  dst.*Member = src.*Member;
}

// module sets: "a,b,c" <-> bits, with the messages naming the table the name is missing from
template <auto Table>
const std::vector<std::string>& module_choices() {
  static const std::vector<std::string> n = [] {
    std::vector<std::string> v;
    for (const auto& [name, e] : Table()) v.push_back(name);
    return v;
  }();
  return n;
}
template <auto Member>
std::string get_modules(const P& p) {
  return join_names(to_names(p.*Member));
}
template <auto Member, auto Table, auto Parse, const char* What>
std::string set_modules(P& p, const std::string& s) {
  std::string bad;
  auto set = Parse(split_list(s), &bad);
  if (!set) return "'" + bad + "' is not " + What + "; valid: " + join_names(module_choices<Table>(), "|");
  p.*Member = *set;
  return "";
}
const char kRecomputeModule[] = "a Megatron recompute module";
const char kOffloadModule[] = "an activation offloading module";

// pipeline_layout: "a,b;c,d" (stages by ';', chunks by ',')
std::string get_layout(const P& p) {
  std::string s;
  for (size_t st = 0; st < p.pipeline_layout.size(); ++st) {
    if (st) s += ";";
    for (size_t c = 0; c < p.pipeline_layout[st].size(); ++c) s += (c ? "," : "") + std::to_string(p.pipeline_layout[st][c]);
  }
  return s;
}
std::string set_layout(P& p, const std::string& s) {
  std::vector<std::vector<int>> out(1);
  std::string num;
  for (char ch : s + ";") {  // the last chunk ends as every other does
    int64_t layers = 0;
    if (std::isdigit(static_cast<unsigned char>(ch))) {
      num += ch;
    } else if (ch == ',' || ch == ';') {
      if (!integer_from_text(num, 0, kMaxLayers, layers).empty())
        return "expected layers per chunk like '4,4;4,3' (0.." + std::to_string(kMaxLayers) + "), got '" + s + "'";
      out.back().push_back(int(layers));
      num.clear();
      if (ch == ';') out.emplace_back();
    } else if (ch != ' ') {
      return "unexpected character '" + std::string(1, ch) + "'";
    }
  }
  out.pop_back();  // the stage the appended ';' opened
  p.pipeline_layout = out;
  return "";
}

void derive_sp(P& p) { p.sp = p.tp > 1; }
void derive_schedule(P& p) { p.schedule = p.vpp > 1 ? Schedule::interleaved : Schedule::one_f_one_b; }
bool pad_written(const P& p) { return p.moe_capacity_factor > 0; }

FieldAccess I(int P::*m) { return {T::integer, m}; }
FieldAccess B(bool P::*m) { return {T::boolean, nullptr, m}; }
FieldAccess D(double P::*m) { return {T::number, nullptr, nullptr, m}; }
// a value reached through its text: get, set (with the valid names) and copy
template <auto Member, auto Get, auto Set, auto Choices>
FieldAccess Text(T type) {
  FieldAccess a{type};
  a.get = Get, a.set = Set, a.choices = Choices, a.copy = copy_member<Member>;
  return a;
}
// a module set from the member, its name table and parser, and what its names are
template <auto Member, auto Table, auto Parse, const char* What>
FieldAccess Mods() {
  return Text<Member, get_modules<Member>, set_modules<Member, Table, Parse, What>, module_choices<Table>>(T::modules);
}
// an enum member, its choices the enum's names
template <auto Member>
FieldAccess C() {
  return Text<Member, get_choice<Member>, set_choice<Member>, enum_names<std::remove_reference_t<decltype(P{}.*Member)>>>(
      T::choice);
}

std::vector<ParallelField> make_fields() {
  const double G_ = kMaxGpus, L = kMaxLayers, X = 0;  // X: no range
  const auto rmods = Mods<&P::recompute_modules, &recompute_module_names, &parse_recompute_modules, kRecomputeModule>();
  const auto omods = Mods<&P::offload_modules, &offload_module_names, &parse_offload_modules, kOffloadModule>();
  const auto layout = FieldAccess{T::layout, nullptr, nullptr, nullptr, &P::pipeline_layout, get_layout, set_layout};
  const Presence opt = Presence::if_set;
  // clang-format off
  return {
      {"world_size", "--gpus", "", "world_size", "", S::none, G::none, M::none, 1, G_, "GPUs of the job",
       I(&P::world_size), Presence::required},
      {"tp", "--tp", "--tensor-model-parallel-size", "tensor_model_parallel_size", "parallelism.tensor_parallel_degree",
       S::layout, G::layout, M::direct, 1, G_, "tensor-parallel size", I(&P::tp)},
      {"sp", "--sp/--no-sp", "--sequence-parallel", "sequence_parallel", "", S::layout, G::layout, M::direct, X, X,
       "sequence parallel (default on when tp > 1; Megatron's only with tp > 1)", B(&P::sp), Presence::always, derive_sp},
      {"pp", "--pp", "--pipeline-model-parallel-size", "pipeline_model_parallel_size", "parallelism.pipeline_parallel_degree",
       S::layout, G::layout, M::direct, 1, G_, "pipeline-parallel size", I(&P::pp)},
      {"vpp", "--vpp", "--num-virtual-stages-per-pipeline-rank | --num-layers-per-virtual-pipeline-stage",
       "virtual_pipeline_model_parallel_size", "", S::layout, G::layout, M::mapped, 1, L,
       "virtual pipeline chunks per pipeline rank (1 = no interleaving)", I(&P::vpp)},
      {"cp", "--cp", "--context-parallel-size", "context_parallel_size", "parallelism.context_parallel_degree",
       S::layout, G::layout, M::direct, 1, G_, "context-parallel size", I(&P::cp)},
      {"cp_comm_type", "--cp-comm", "--cp-comm-type", "cp_comm_type", "parallelism.context_parallel_rotate_method",
       S::layout, G::layout, M::direct, X, X, "context-parallel exchange (default: the framework's)",
       C<&P::cp_comm_type>()},
      {"ep", "--ep", "--expert-model-parallel-size", "expert_model_parallel_size", "parallelism.expert_parallel_degree",
       S::layout, G::layout, M::direct, 1, G_, "expert-parallel size", I(&P::ep)},
      {"etp", "--etp", "--expert-tensor-parallel-size", "expert_tensor_parallel_size",
       "parallelism.expert_tensor_parallel_degree", S::layout, G::layout, M::direct, 1, G_, "expert tensor-parallel size",
       I(&P::etp)},
      {"zero", "--zero", "--use-distributed-optimizer | --use-megatron-fsdp --data-parallel-sharding-strategy",
       "use_distributed_optimizer", "", S::layout, G::layout, M::mapped, 0, 3,
       "0 = DDP, 1 = distributed optimizer, 2 = + gradients sharded, 3 = FSDP (default: the framework's)", I(&P::zero)},
      {"micro_batch_size", "--mbs", "--micro-batch-size", "micro_batch_size", "", S::layout, G::layout, M::direct, 1,
       kMaxBatch, "micro-batch size", I(&P::micro_batch_size)},
      {"recompute", "--recompute", "--recompute-granularity", "recompute_granularity", "activation_checkpoint.mode",
       S::layout, G::layout, M::mapped, X, X, "activation recomputation", C<&P::recompute>()},
      {"recompute_num_layers", "--recompute-layers", "--recompute-method block --recompute-num-layers", "recompute_num_layers",
       "", S::layout, G::layout, M::mapped, 0, L, "full recompute: layers per chunk recomputed (0 = all)",
       I(&P::recompute_num_layers)},
      {"recompute_modules", "--recompute-modules", "--recompute-modules", "recompute_modules", "", S::layout, G::layout,
       M::direct, X, X, "selective recompute: Megatron modules (none given = core_attn)", rmods, opt},
      {"offload_modules", "--offload-modules", "--offload-modules", "offload_modules", "", S::layout,
       G::layout, M::direct, X, X, "fine-grained activation offloading of these modules' inputs", omods, opt},
      {"dp_replicate", "--dp-replicate", "--num-distributed-optimizer-instances", "num_distributed_optimizer_instances",
       "parallelism.data_parallel_replicate_degree", S::job, G::job, M::direct, 1, G_,
       "shard the optimizer / FSDP over dp*cp/N ranks and replicate N times (HSDP)", I(&P::dp_replicate), opt},
      {"cpu_offload_layers", "--cpu-offload-layers", "--cpu-offloading-num-layers", "cpu_offloading_num_layers", "", S::none,
       G::layout, M::direct, 0, L, "offload the activations of this many layers (Megatron, pp=1)", I(&P::cpu_offload_layers),
       opt},
      {"main_params", "--main-params", "--use-precision-aware-optimizer --main-params-dtype", "main_params", "", S::job,
       G::job, M::mapped, X, X, "optimizer master weights", C<&P::main_params>(), opt},
      {"adam_states_bf16", "--adam-states-bf16", "--exp-avg-dtype bf16 --exp-avg-sq-dtype bf16", "adam_states_bf16", "",
       S::job, G::job, M::mapped, X, X, "Adam moments in bf16 (default fp32)", B(&P::adam_states_bf16), opt},
      {"remat_policy", "--remat-policy", "", "remat_policy", "", S::none, G::layout, M::none, X, X,
       "MaxText remat policy with recompute selective", C<&P::remat_policy>(), opt},
      {"fp8_param_gather", "--fp8-param-gather", "--fp8-param-gather", "fp8_param_gather", "", S::job, G::job, M::direct, X,
       X, "fp8 weights as the primary copy", B(&P::fp8_param_gather)},
      {"grad_reduce_in_bf16", "--grad-reduce-in-bf16", "--grad-reduce-in-bf16", "grad_reduce_in_bf16", "", S::job, G::job,
       M::direct, X, X, "keep and reduce gradients in bf16 (default fp32 main grads)", B(&P::grad_reduce_in_bf16)},
      {"cross_entropy_fusion", "--cross-entropy-fusion", "--cross-entropy-loss-fusion", "cross_entropy_loss_fusion", "",
       S::job, G::job, M::direct, X, X, "fused cross-entropy writing its gradient into the bf16 logits",
       B(&P::cross_entropy_fusion)},
      {"moe_capacity_factor", "--moe-capacity-factor", "--moe-expert-capacity-factor", "moe_expert_capacity_factor", "",
       S::job, G::job, M::direct, 0, 1e6, "MoE expert capacity factor: tokens beyond it are dropped (0 = dropless)",
       D(&P::moe_capacity_factor), opt},
      {"moe_pad_to_capacity", "--moe-pad-to-capacity", "--moe-pad-expert-input-to-capacity",
       "moe_pad_expert_input_to_capacity", "", S::job, G::job, M::direct, X, X, "pad every expert's input to its capacity",
       B(&P::moe_pad_to_capacity), opt, nullptr, pad_written},
      {"cuda_graph_impl", "--cuda-graph-impl", "--cuda-graph-impl", "cuda_graph_impl", "", S::job, G::job, M::direct, X, X,
       "CUDA graphs of Megatron-LM (costed as the shorter kernel gap of graph replay, kernel_overhead_graph_us)", C<&P::cuda_graph_impl>(),
       opt},
      {"overlap_grad_reduce", "--no-overlap-grad-reduce", "--overlap-grad-reduce", "overlap_grad_reduce", "", S::none,
       G::layout, M::direct, X, X, "overlap the DP gradient reduction with the backward", B(&P::overlap_grad_reduce)},
      {"overlap_param_gather", "--no-overlap-param-gather", "--overlap-param-gather", "overlap_param_gather", "", S::none,
       G::layout, M::direct, X, X, "overlap the parameter all-gather with the forward", B(&P::overlap_param_gather)},
      {"tp_comm_overlap", "--tp-comm-overlap", "--tp-comm-overlap", "tp_comm_overlap",
       "parallelism.enable_async_tensor_parallel", S::layout, G::layout, M::direct, X, X,
       "overlap TP communication with GEMMs (needs sp)", B(&P::tp_comm_overlap)},
      {"moe_dispatcher", "--moe-dispatcher", "--moe-token-dispatcher-type | --moe-flex-dispatcher-backend",
       "moe_token_dispatcher_type", "", S::job, G::layout, M::mapped, X, X, "MoE token dispatcher",
       C<&P::moe_dispatcher>()},
      {"moe_force_balance", "--moe-force-balance", "--moe-router-force-load-balancing", "moe_router_force_load_balancing", "",
       S::job, G::layout, M::direct, X, X, "forced MoE load balancing (benchmarks); default: learned routing",
       B(&P::moe_force_balance)},
      {"moe_a2a_overlap", "--moe-a2a-overlap", "--overlap-moe-expert-parallel-comm",
       "overlap_moe_expert_parallel_comm", "", S::layout, G::layout, M::direct, X, X,
       "overlap EP all-to-alls with another micro-batch's compute", B(&P::moe_a2a_overlap)},
      {"moe_fused_grouped_mlp", "--moe-fused-grouped-mlp", "--use-transformer-engine-op-fuser",
       "cutedsl_fused_grouped_mlp", "", S::job, G::job, M::none, X, X,
       "experts as TE's fused CuTe DSL grouped MLP (one kernel, not a GEMM per expert)", B(&P::moe_fused_grouped_mlp),
       opt},
      {"schedule", "--schedule", "", "", "parallelism.pipeline_parallel_schedule", S::layout, G::layout, M::none, X, X,
       "pipeline schedule (default 1f1b, interleaved when vpp > 1)", C<&P::schedule>(), Presence::always,
       derive_schedule},
      {"attention_backend", "--attention", "--attention-backend", "attention_backend", "", S::job, G::layout, M::mapped, X,
       X, "attention kernels", C<&P::attention_backend>()},
      {"num_layers_in_first_pipeline_stage", "--first-stage-layers", "--decoder-first-pipeline-num-layers",
       "num_layers_in_first_pipeline_stage", "", S::layout, G::layout, M::direct, 0, L,
       "layers on the first pipeline stage (0 = even)", I(&P::num_layers_in_first_pipeline_stage), opt},
      {"num_layers_in_last_pipeline_stage", "--last-stage-layers", "--decoder-last-pipeline-num-layers",
       "num_layers_in_last_pipeline_stage", "", S::layout, G::layout, M::direct, 0, L,
       "layers on the last pipeline stage (0 = even)", I(&P::num_layers_in_last_pipeline_stage), opt},
      {"pipeline_layout", "--pipeline-layout", "--pipeline-model-parallel-layout", "pipeline_model_parallel_layout", "",
       S::layout, G::layout, M::mapped, 0, L,
       "layers per [stage][chunk]: 'balanced' (most even split) or 'a,b;c,d' (stages by ';', chunks by ',')", layout, opt},
  };
  // clang-format on
}

}  // namespace

const std::vector<ParallelField>& parallel_fields() {
  static const std::vector<ParallelField> fields = make_fields();
  return fields;
}

const ParallelField* parallel_field(const std::string& json_key) { return row_of(parallel_fields(), json_key); }

std::string shortest_decimal(double v) {
  char b[40];
  for (int digits : {6, 10, 15, 17}) {
    std::snprintf(b, sizeof b, "%.*g", digits, v);
    if (std::strtod(b, nullptr) == v) break;
  }
  return b;
}

std::string field_text(const ParallelField& f, const ParallelConfig& p) {
  const FieldAccess& a = f.access;
  return a.i ? value_text(p.*a.i) : a.b ? value_text(p.*a.b) : a.d ? value_text(p.*a.d) : a.get(p);
}

std::string set_field_text(const ParallelField& f, ParallelConfig& p, const std::string& text) {
  const FieldAccess& a = f.access;
  if (a.i) return value_from_text(text, f.min, f.max, true, p.*a.i);
  if (a.b) return value_from_text(text, 0, 0, true, p.*a.b);
  if (a.d) return value_from_text(text, f.min, f.max, false, p.*a.d);
  return a.set(p, text);
}

std::string megatron_arg(const ParallelField& f, const ParallelConfig& p) {
  if (f.type() == T::boolean) return p.*f.access.b ? f.megatron : "";
  std::string v = field_text(f, p);
  if (f.type() == T::modules) std::replace(v.begin(), v.end(), ',', ' ');  // nargs='+'
  return std::string(f.megatron) + " " + v;
}

void copy_fields(ParallelConfig& dst, const ParallelConfig& src, FieldScope scope) {
  for (const ParallelField& f : parallel_fields()) {
    if (f.scope != scope) continue;
    const FieldAccess& a = f.access;
    if (a.i) dst.*a.i = src.*a.i;
    if (a.b) dst.*a.b = src.*a.b;
    if (a.d) dst.*a.d = src.*a.d;
    if (a.l) dst.*a.l = src.*a.l;
    if (a.copy) a.copy(dst, src);
  }
}

}  // namespace mplan
