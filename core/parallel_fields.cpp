// The ParallelConfig descriptor table (see parallel_fields.h), the names of its enums' values, and the
// generic readers and writers of a field's value as text and Megatron-LM argument.
#include "core/parallel_fields.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <utility>

#include "core/limits.h"

namespace mplan {

namespace {
// Each enum's value names in declaration order, '|'-separated: value i is the i-th name.
constexpr const char* names_text(Recompute) { return "none|selective|full"; }
constexpr const char* names_text(Schedule) { return "gpipe|1f1b|interleaved|zb"; }
constexpr const char* names_text(CpCommType) { return "p2p|a2a|allgather"; }
constexpr const char* names_text(AttentionBackend) { return "flash|unfused|triton"; }
constexpr const char* names_text(MoeDispatcher) { return "alltoall|deepep|hybridep"; }
constexpr const char* names_text(MainParams) { return "fp32|remainder|bf16|none"; }
constexpr const char* names_text(CudaGraphImpl) { return "none|local|transformer_engine"; }

template <class E>
const std::vector<std::string>& names_of() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v(1);
    for (const char* c = names_text(E{}); *c; ++c) {
      if (*c == '|')
        v.emplace_back();
      else
        v.back().push_back(*c);
    }
    return v;
  }();
  return names;
}
template <class E>
std::string name_of(E e) {
  const auto& n = names_of<E>();
  return size_t(e) < n.size() ? n[size_t(e)] : "?";
}
template <class E>
std::optional<E> parse_name(const std::string& s) {
  const auto& n = names_of<E>();
  for (size_t i = 0; i < n.size(); ++i)
    if (n[i] == s) return E(i);
  return std::nullopt;
}
}  // namespace

template <class E>
std::vector<std::string> enum_names() {
  return names_of<E>();
}
template std::vector<std::string> enum_names<Recompute>();
template std::vector<std::string> enum_names<Schedule>();
template std::vector<std::string> enum_names<CpCommType>();
template std::vector<std::string> enum_names<AttentionBackend>();
template std::vector<std::string> enum_names<MoeDispatcher>();
template std::vector<std::string> enum_names<MainParams>();
template std::vector<std::string> enum_names<CudaGraphImpl>();

std::string to_string(Recompute r) { return name_of(r); }
std::string to_string(Schedule s) { return name_of(s); }
std::string to_string(CpCommType c) { return name_of(c); }
std::string to_string(AttentionBackend a) { return name_of(a); }
std::string to_string(MoeDispatcher d) { return name_of(d); }
std::string to_string(MainParams m) { return name_of(m); }
std::optional<Recompute> parse_recompute(const std::string& s) { return parse_name<Recompute>(s); }
std::optional<Schedule> parse_schedule(const std::string& s) { return parse_name<Schedule>(s); }
std::optional<CpCommType> parse_cp_comm_type(const std::string& s) { return parse_name<CpCommType>(s); }
std::optional<AttentionBackend> parse_attention_backend(const std::string& s) { return parse_name<AttentionBackend>(s); }
std::optional<MoeDispatcher> parse_moe_dispatcher(const std::string& s) { return parse_name<MoeDispatcher>(s); }
std::optional<MainParams> parse_main_params(const std::string& s) { return parse_name<MainParams>(s); }
std::string to_string(CudaGraphImpl c) { return name_of(c); }
std::optional<CudaGraphImpl> parse_cuda_graph_impl(const std::string& s) { return parse_name<CudaGraphImpl>(s); }

namespace {

using P = ParallelConfig;
using T = FieldType;
using S = FieldScope;
using G = CliGroup;
using M = MegatronMap;

// choice accessors from the member and its parser
template <auto Member>
std::string get_choice(const P& p) {
  return to_string(p.*Member);
}
template <auto Member, auto Parse, auto Choices>
std::string set_choice(P& p, const std::string& s) {
  auto v = Parse(s);
  if (!v) return "'" + s + "' is not one of " + join_names(Choices(), "|");
  p.*Member = *v;
  return "";
}
template <auto Member>
void copy_member(P& dst, const P& src) {
  dst.*Member = src.*Member;
}
template <class E>
std::vector<std::string> choices_of() {
  return enum_names<E>();
}
std::vector<std::string> remat_choices() {
  std::vector<std::string> rp = remat_policy_choices();
  rp.insert(rp.begin(), "none");
  return rp;
}

// module sets: "a,b,c" <-> bits, with the messages naming the table the name is missing from
template <auto Table>
std::vector<std::string> module_choices() {
  std::vector<std::string> n;
  for (const auto& [name, e] : Table()) n.push_back(name);
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
  auto flush = [&] {
    if (num.empty() || num.size() > 9 || std::stoll(num) > kMaxLayers) return false;
    out.back().push_back(int(std::stoll(num)));
    num.clear();
    return true;
  };
  for (char ch : s) {
    if (std::isdigit(static_cast<unsigned char>(ch))) {
      num += ch;
    } else if (ch == ',' || ch == ';') {
      if (!flush()) return "expected layers per chunk like '4,4;4,3' (0.." + std::to_string(kMaxLayers) + "), got '" + s + "'";
      if (ch == ';') out.emplace_back();
    } else if (ch != ' ') {
      return "unexpected character '" + std::string(1, ch) + "'";
    }
  }
  if (!flush()) return "expected layers per chunk like '4,4;4,3' (0.." + std::to_string(kMaxLayers) + "), got '" + s + "'";
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
// a choice from the member and its parser (the choices: the enum's names)
template <auto Member, auto Parse, auto Choices = choices_of<std::remove_reference_t<decltype(std::declval<P>().*Member)>>>
FieldAccess C() {
  return Text<Member, get_choice<Member>, set_choice<Member, Parse, Choices>, Choices>(T::choice);
}

std::vector<ParallelField> make_fields() {
  const double G_ = kMaxGpus, L = kMaxLayers, X = 0;  // X: no range
  const auto remat = C<&P::remat_policy, parse_remat_policy, remat_choices>();
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
       C<&P::cp_comm_type, parse_cp_comm_type>()},
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
       S::layout, G::layout, M::mapped, X, X, "activation recomputation", C<&P::recompute, parse_recompute>()},
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
       G::job, M::mapped, X, X, "optimizer master weights", C<&P::main_params, parse_main_params>(), opt},
      {"adam_states_bf16", "--adam-states-bf16", "--exp-avg-dtype bf16 --exp-avg-sq-dtype bf16", "adam_states_bf16", "",
       S::job, G::job, M::mapped, X, X, "Adam moments in bf16 (default fp32)", B(&P::adam_states_bf16), opt},
      {"remat_policy", "--remat-policy", "", "remat_policy", "", S::none, G::layout, M::none, X, X,
       "MaxText remat policy with recompute selective", remat, opt},
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
       "CUDA graphs of Megatron-LM (recorded and exported; not costed yet)", C<&P::cuda_graph_impl, parse_cuda_graph_impl>(),
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
       C<&P::moe_dispatcher, parse_moe_dispatcher>()},
      {"moe_force_balance", "--moe-force-balance", "--moe-router-force-load-balancing", "moe_router_force_load_balancing", "",
       S::job, G::layout, M::direct, X, X, "forced MoE load balancing (benchmarks); default: learned routing",
       B(&P::moe_force_balance)},
      {"moe_a2a_overlap", "--moe-a2a-overlap", "--overlap-moe-expert-parallel-comm",
       "overlap_moe_expert_parallel_comm", "", S::layout, G::layout, M::direct, X, X,
       "overlap EP all-to-alls with another micro-batch's compute", B(&P::moe_a2a_overlap)},
      {"schedule", "--schedule", "", "", "parallelism.pipeline_parallel_schedule", S::layout, G::layout, M::none, X, X,
       "pipeline schedule (default 1f1b, interleaved when vpp > 1)", C<&P::schedule, parse_schedule>(), Presence::always,
       derive_schedule},
      {"attention_backend", "--attention", "--attention-backend", "attention_backend", "", S::job, G::layout, M::mapped, X,
       X, "attention kernels", C<&P::attention_backend, parse_attention_backend>()},
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

const ParallelField* parallel_field(const std::string& json_key) {
  for (const ParallelField& f : parallel_fields())
    if (json_key == f.json) return &f;
  return nullptr;
}

std::string shortest_decimal(double v) {
  char b[40];
  for (int digits : {6, 10, 15, 17}) {
    std::snprintf(b, sizeof b, "%.*g", digits, v);
    if (std::strtod(b, nullptr) == v) break;
  }
  return b;
}

std::string field_text(const ParallelField& f, const ParallelConfig& p) {
  switch (f.type()) {
    case T::integer:
      return std::to_string(p.*f.access.i);
    case T::boolean:
      return p.*f.access.b ? "true" : "false";
    case T::number:
      return shortest_decimal(p.*f.access.d);
    default:
      return f.access.get(p);
  }
}

std::string set_field_text(const ParallelField& f, ParallelConfig& p, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  switch (f.type()) {
    case T::integer: {
      long long v = std::strtoll(text.c_str(), &end, 10);
      if (text.empty() || *end != '\0' || errno == ERANGE || v < f.min || v > f.max)
        return "expected an integer in " + std::to_string(int64_t(f.min)) + ".." + std::to_string(int64_t(f.max)) + ", got '" +
               text + "'";
      p.*f.access.i = int(v);
      return "";
    }
    case T::boolean:
      if (text != "true" && text != "false") return "expected true or false, got '" + text + "'";
      p.*f.access.b = text == "true";
      return "";
    case T::number: {
      double v = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0' || !std::isfinite(v) || v <= f.min || v > f.max)
        return "expected a number in (" + std::to_string(f.min) + ", " + std::to_string(f.max) + "], got '" + text + "'";
      p.*f.access.d = v;
      return "";
    }
    default:
      return f.access.set(p, text);
  }
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

std::string parallel_fields_markdown() {
  std::string s =
      "| plan key | mplan option | Megatron-LM | printed argument / run fact | torchtitan | type | range | search | what |\n"
      "|---|---|---|---|---|---|---|---|---|\n";
  const char* types[] = {"integer", "boolean", "number", "choice", "modules", "layout"};
  const char* scopes[] = {"job", "layout", ""};
  auto cell = [](const char* v) {  // a code span; '|' escaped so that it stays in its column
    std::string s = *v ? "`" + std::string(v) + "`" : "";
    for (size_t at = s.find('|'); at != std::string::npos; at = s.find('|', at + 2)) s.insert(at, "\\");
    return s;
  };
  for (const ParallelField& f : parallel_fields()) {
    std::string range = f.type() == T::integer ? std::to_string(int64_t(f.min)) + ".." + std::to_string(int64_t(f.max))
                        : f.access.choices     ? join_names(f.access.choices(), " \\| ")
                                               : "";
    s += "| `" + std::string(f.json) + "` | " + cell(f.cli) + " | " + cell(f.megatron) + " | " + cell(f.log) + " | " +
         cell(f.torchtitan) + " | " + types[int(f.type())] + " | " + range + " | " + scopes[int(f.scope)] + " | " + f.doc +
         " |\n";
  }
  return s;
}

}  // namespace mplan
