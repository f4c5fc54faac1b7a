// The ModelSpec descriptor table (see model_fields.h) and the generic reader and writer of a field's
// value as text, JSON and Megatron-LM argument.
#include "core/model_fields.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "core/json_fields.h"
#include "core/limits.h"

namespace mplan {

namespace {

using M = ModelSpec;

// the part of the model a member belongs to: read (nullptr when absent) and written (made when absent)
template <class C>
const C* part_of(const ModelSpec& m) {
  if constexpr (std::is_same_v<C, MoeSpec>) return m.moe ? &*m.moe : nullptr;
  if constexpr (std::is_same_v<C, MlaSpec>) return m.mla ? &*m.mla : nullptr;
  if constexpr (std::is_same_v<C, MambaSpec>) return m.mamba ? &*m.mamba : nullptr;
  if constexpr (std::is_same_v<C, RopeScaling>) return &m.rope_scaling;
  if constexpr (std::is_same_v<C, ModelSpec>) return &m;
}
template <class C>
C& make_part(ModelSpec& m) {
  if constexpr (std::is_same_v<C, MoeSpec>) return m.moe ? *m.moe : m.moe.emplace();
  if constexpr (std::is_same_v<C, MlaSpec>) return m.mla ? *m.mla : m.mla.emplace();
  if constexpr (std::is_same_v<C, MambaSpec>) return m.mamba ? *m.mamba : m.mamba.emplace();
  if constexpr (std::is_same_v<C, RopeScaling>) return m.rope_scaling;
  if constexpr (std::is_same_v<C, ModelSpec>) return m;
}

template <class T>
struct MemberOf;
template <class C, class V>
struct MemberOf<V C::*> {
  using Class = C;
  using Value = V;
};

template <auto Member>
std::optional<std::string> get_value(const ModelSpec& m) {
  const auto* c = part_of<typename MemberOf<decltype(Member)>::Class>(m);
  if (!c) return std::nullopt;
  return value_text(c->*Member);
}
template <auto Member>
std::string set_value(ModelSpec& m, const std::string& s, double lo, double hi) {
  return value_from_text(s, lo, hi, true, make_part<typename MemberOf<decltype(Member)>::Class>(m).*Member);
}
// the access of one member, its type the member's
template <auto Member>
ModelAccess V() {
  using T = typename MemberOf<decltype(Member)>::Value;
  FieldType type = std::is_same_v<T, bool>       ? FieldType::boolean
                   : std::is_enum_v<T>           ? FieldType::choice
                   : std::is_floating_point_v<T> ? FieldType::number
                                                 : FieldType::integer;
  const char* names = nullptr;
  if constexpr (std::is_enum_v<T>) names = enum_names_text(T{});
  return {type, get_value<Member>, set_value<Member>, names};
}

// when the model JSON writes a field (the default: always)
bool rope(const M& m) { return m.position_embedding == PositionEmbedding::rope; }
bool scaled(const M& m) { return rope(m) && m.rope_scaling.type != RopeScalingType::none; }
bool llama3(const M& m) { return scaled(m) && m.rope_scaling.type == RopeScalingType::llama3; }
bool yarn(const M& m) { return scaled(m) && m.rope_scaling.type == RopeScalingType::yarn; }
bool windowed(const M& m) { return m.window_size > 0; }
bool grouped(const M& m) { return m.moe && m.moe->router_num_groups > 0; }
template <auto Member>
bool differs(const M& m) {
  return m.*Member != M{}.*Member;
}

std::vector<ModelField> make_fields() {
  using E = MoeSpec;
  using A = MlaSpec;
  using R = RopeScaling;
  using B = MambaSpec;
  const MegatronMap D = MegatronMap::direct, P = MegatronMap::mapped, N = MegatronMap::none;
  // Q: exported always, and the model JSON must give it
  const Presence W = Presence::always, S = Presence::if_set, Q = Presence::required;
  const double L = kMaxLayers, H = kMaxHeadDim, X = 0, F = 1e6;  // X: no range (a choice or boolean)
  // clang-format off
  return {
      {"num_layers", "--num-layers", "num_layers", "num_hidden_layers | n_layer", D, 0, L, Q, "transformer layers",
       V<&M::num_layers>()},
      {"hidden_size", "--hidden-size", "hidden_size", "hidden_size | n_embd", D, 0, kMaxHidden, Q, "hidden size",
       V<&M::hidden_size>()},
      {"ffn_hidden_size", "--ffn-hidden-size", "ffn_hidden_size", "intermediate_size | n_inner", D, 0, kMaxFfn, Q,
       "dense MLP width (required)", V<&M::ffn_hidden_size>()},
      {"num_attention_heads", "--num-attention-heads", "num_attention_heads", "num_attention_heads | n_head", D, 0,
       kMaxHeads, Q, "attention heads", V<&M::num_attention_heads>()},
      {"num_query_groups", "--num-query-groups", "", "num_key_value_heads", D, 0, kMaxHeads, W,
       "key/value heads (default: the heads); exported with --group-query-attention when fewer",
       V<&M::num_query_groups>()},
      {"kv_channels", "--kv-channels", "", "head_dim", D, 0, H, W, "head dimension (default hidden_size / heads)",
       V<&M::kv_channels>()},
      {"vocab_size", "--vocab-size", "", "vocab_size", D, 0, kMaxVocab, Q, "vocabulary (unpadded)",
       V<&M::vocab_size>()},
      {"max_position_embeddings", "--max-position-embeddings", "", "max_position_embeddings | n_positions", D, 0,
       kMaxSeq, W, "learned position table (exported as max(seq, it))", V<&M::max_position_embeddings>(),
       differs<&M::max_position_embeddings>},
      {"activation", "--swiglu | --squared-relu", "", "", P, X, X, Q, "MLP activation", V<&M::activation>()},
      {"norm", "--normalization", "", "", P, X, X, Q, "LayerNorm or RMSNorm", V<&M::norm>()},
      {"tied_embeddings", "--untie-embeddings-and-output-weights", "", "tie_word_embeddings", P, X, X, Q,
       "input and output embedding shared", V<&M::tied_embeddings>()},
      {"position_embedding", "--position-embedding-type", "", "", P, X, X, Q, "rotary, learned or no positions (none: ALiBi, the Nemotron hybrids)",
       V<&M::position_embedding>()},
      {"add_bias_linear", "--disable-bias-linear", "", "", P, X, X, W, "biases on every linear layer",
       V<&M::add_bias_linear>()},
      {"add_qkv_bias", "--add-qkv-bias", "", "", P, X, X, W, "biases on the QKV projection (default add_bias_linear)",
       V<&M::add_qkv_bias>()},
      {"qk_layernorm", "--qk-layernorm", "", "", D, X, X, W, "per-head norms of q and k", V<&M::qk_layernorm>()},
      {"norm_epsilon", "--norm-epsilon", "", "rms_norm_eps | layer_norm_eps | layer_norm_epsilon | norm_epsilon", D, 0,
       1, W, "epsilon of every norm", V<&M::norm_epsilon>()},
      {"rotary_base", "--rotary-base", "", "rope_theta | rotary_emb_base", D, 0, 1e12, W,
       "RoPE base (Megatron: an integer)", V<&M::rotary_base>(), rope},
      {"rotary_percent", "--rotary-percent", "", "rotary_pct", D, 0, 1, W, "fraction of each head's dimensions rotated",
       V<&M::rotary_percent>(), rope},
      {"window_size", "--window-size", "", "", P, 0, kMaxSeq, W, "sliding window in tokens (0 = full attention)",
       V<&M::window_size>(), windowed},
      {"window_attn_skip_freq", "--window-attn-skip-freq", "", "", D, 0, L, S, "every N-th layer full attention",
       V<&M::window_attn_skip_freq>(), windowed},
      {"softmax_type", "--softmax-type", "", "", D, X, X, S, "attention sinks", V<&M::softmax_type>(),
       differs<&M::softmax_type>},
      {"mtp_num_layers", "--mtp-num-layers", "mtp_num_layers", "num_nextn_predict_layers", D, 0, L, S,
       "multi-token prediction layers", V<&M::mtp_num_layers>(), differs<&M::mtp_num_layers>},
      {"attention_dropout", "--attention-dropout", "", "", D, 0, 1, W, "dropout of attention probabilities",
       V<&M::attention_dropout>(), differs<&M::attention_dropout>},
      {"hidden_dropout", "--hidden-dropout", "", "", D, 0, 1, W, "dropout of hidden states", V<&M::hidden_dropout>(),
       differs<&M::hidden_dropout>},
      {"rope_scaling.type", "--use-rope-scaling | --rope-type", "", "", P, X, X, Q, "RoPE scaling: none, llama3, yarn",
       V<&R::type>(), scaled},
      {"rope_scaling.factor", "--rope-scaling-factor | --rotary-scaling-factor", "", "", D, 0, F, Q,
       "context extension factor", V<&R::factor>(), scaled},
      {"rope_scaling.original_max_position_embeddings", "--yarn-original-max-position-embeddings", "", "", D, 0,
       kMaxSeq, Q, "the pre-extension context", V<&R::original_max_position_embeddings>(), scaled},
      {"rope_scaling.low_freq_factor", "", "", "", N, 0, F, W, "llama3 (Megatron fixes 1)", V<&R::low_freq_factor>(),
       llama3},
      {"rope_scaling.high_freq_factor", "", "", "", N, 0, F, W, "llama3 (Megatron fixes 4)", V<&R::high_freq_factor>(),
       llama3},
      {"rope_scaling.beta_fast", "--yarn-beta-fast", "", "", D, 0, F, W, "YaRN", V<&R::beta_fast>(), yarn},
      {"rope_scaling.beta_slow", "--yarn-beta-slow", "", "", D, 0, F, W, "YaRN", V<&R::beta_slow>(), yarn},
      {"rope_scaling.mscale", "--mscale", "", "", D, 0, F, W, "YaRN", V<&R::mscale>(), yarn},
      {"rope_scaling.mscale_all_dim", "--mscale-all-dim", "", "", D, 0, F, W, "YaRN", V<&R::mscale_all_dim>(), yarn},
      {"moe.num_experts", "--num-experts", "", "num_local_experts | num_experts | n_routed_experts", D, 1, kMaxExperts,
       Q, "routed experts", V<&E::num_experts>()},
      {"moe.top_k", "--moe-router-topk", "moe_router_topk", "num_experts_per_tok", D, 0, kMaxExperts, Q,
       "experts per token", V<&E::top_k>()},
      {"moe.moe_ffn_hidden_size", "--moe-ffn-hidden-size", "moe_ffn_hidden_size", "moe_intermediate_size", D, 0,
       kMaxFfn, W, "routed expert width (default ffn_hidden_size)", V<&E::moe_ffn_hidden_size>()},
      {"moe.shared_expert_ffn_hidden_size", "--moe-shared-expert-intermediate-size", "",
       "shared_expert_intermediate_size", D, 0, kMaxFfn, S, "shared expert width (0 = none)",
       V<&E::shared_expert_ffn_hidden_size>()},
      {"moe.first_k_dense_layers", "--moe-layer-freq", "", "first_k_dense_replace", P, 0, L, W, "leading dense layers",
       V<&E::first_k_dense_layers>()},
      {"moe.moe_layer_freq", "--moe-layer-freq", "", "moe_layer_freq | decoder_sparse_step", P, 1, L, W,
       "every N-th layer after them MoE", V<&E::moe_layer_freq>()},
      {"moe.router_score_function", "--moe-router-score-function", "", "scoring_func", D, X, X, W, "softmax or sigmoid",
       V<&E::router_score_function>()},
      {"moe.router_enable_expert_bias", "--moe-router-enable-expert-bias", "", "", D, X, X, W,
       "aux-loss-free per-expert bias", V<&E::router_enable_expert_bias>()},
      {"moe.router_num_groups", "--moe-router-num-groups", "", "", D, 0, kMaxExperts, S,
       "expert groups (group-limited)", V<&E::router_num_groups>(), grouped},
      {"moe.router_group_topk", "--moe-router-group-topk", "", "", D, 0, kMaxExperts, S, "groups a token picks",
       V<&E::router_group_topk>(), grouped},
      {"moe.router_topk_scaling_factor", "--moe-router-topk-scaling-factor", "", "routed_scaling_factor", D, 0, F, S,
       "routed-weight scaling", V<&E::router_topk_scaling_factor>()},
      {"moe.moe_latent_size", "--moe-latent-size", "moe_latent_size", "moe_latent_size", D, 0, kMaxHidden, S,
       "latent width of the routed experts (0 = none)", V<&E::moe_latent_size>()},
      {"mla.q_lora_rank", "--q-lora-rank", "", "q_lora_rank", D, 0, H, S, "query compression rank (0 = none)",
       V<&A::q_lora_rank>()},
      {"mla.kv_lora_rank", "--kv-lora-rank", "kv_lora_rank", "kv_lora_rank", D, 0, H, Q, "key/value compression rank",
       V<&A::kv_lora_rank>()},
      {"mla.qk_head_dim", "--qk-head-dim", "qk_head_dim", "qk_nope_head_dim", D, 0, H, Q,
       "non-rope part of the q/k head", V<&A::qk_head_dim>()},
      {"mla.qk_rope_head_dim", "--qk-pos-emb-head-dim", "qk_pos_emb_head_dim", "qk_rope_head_dim", D, 0, H, Q,
       "rope part of the q/k head", V<&A::qk_rope_head_dim>()},
      {"mla.v_head_dim", "--v-head-dim", "v_head_dim", "v_head_dim", D, 0, H, Q, "value head", V<&A::v_head_dim>()},
      {"mamba.num_heads", "--mamba-num-heads", "mamba_num_heads", "mamba_num_heads", D, 1, kMaxHeads, Q,
       "Mamba-2 heads (d_inner = heads x head_dim)", V<&B::num_heads>()},
      {"mamba.head_dim", "--mamba-head-dim", "mamba_head_dim", "mamba_head_dim", D, 1, H, W, "channels per Mamba-2 head",
       V<&B::head_dim>()},
      {"mamba.state_dim", "--mamba-state-dim", "mamba_state_dim", "ssm_state_size", D, 1, H, W, "SSM state per head",
       V<&B::state_dim>()},
      {"mamba.num_groups", "--mamba-num-groups", "mamba_num_groups", "n_groups", D, 1, kMaxHeads, W,
       "groups sharing B and C", V<&B::num_groups>()},
      {"mamba.conv_kernel", "", "", "conv_kernel", N, 1, 64, W, "causal conv1d taps (Megatron-Core fixes 4)",
       V<&B::conv_kernel>()},
      {"mamba.chunk_size", "", "", "chunk_size", N, 1, kMaxSeq, W, "SSD scan chunk length", V<&B::chunk_size>()},
  };
  // clang-format on
}

// " | "-separated flags: whether `flag` is one of them
bool names_flag(const std::string& flags, const std::string& flag) {
  for (size_t at = flags.find(flag); at != std::string::npos; at = flags.find(flag, at + 1)) {
    size_t end = at + flag.size();
    if ((at == 0 || flags[at - 1] == ' ') && (end == flags.size() || flags[end] == ' ')) return true;
  }
  return false;
}

}  // namespace

const std::vector<ModelField>& model_fields() {
  static const std::vector<ModelField> fields = make_fields();
  return fields;
}

const ModelField* model_field(const std::string& json_key) { return row_of(model_fields(), json_key); }

const ModelField* model_field_of_flag(const std::string& megatron_flag) {
  for (const ModelField& f : model_fields())
    if (f.map == MegatronMap::direct && names_flag(f.megatron, megatron_flag)) return &f;
  return nullptr;
}

std::vector<std::string> model_json_keys(const std::string& part) {
  std::vector<std::string> keys;
  for (const ModelField& f : model_fields()) {
    std::string k = f.json;
    size_t dot = k.find('.');
    if (dot == std::string::npos ? part.empty() : k.compare(0, dot, part) == 0) keys.push_back(k.substr(dot + 1));
  }
  return keys;
}

std::string megatron_model_arg(const ModelField& f, const ModelSpec& m) {
  static const ModelSpec defaults = [] {
    ModelSpec d;
    d.moe.emplace(), d.mla.emplace(), d.mamba.emplace();
    return d;
  }();
  auto v = f.access.get(m);
  if (!v || (f.presence == Presence::if_set && v == f.access.get(defaults))) return "";
  if (f.type() == FieldType::boolean) return *v == "true" ? f.megatron : "";
  return std::string(f.megatron) + " " + *v;
}

nlohmann::json model_field_json(const ModelField& f, const ModelSpec& m) {
  auto v = f.access.get(m);
  if (!v) return nullptr;
  switch (f.type()) {
    case FieldType::integer:
      return std::stoll(*v);
    case FieldType::number:
      return std::stod(*v);  // the shortest decimal that reads back as the same double
    case FieldType::boolean:
      return *v == "true";
    default:
      return *v;
  }
}

std::string set_model_field_text(const ModelField& f, ModelSpec& m, const std::string& text) {
  return f.access.set(m, text, f.min, f.max);
}

std::string model_field_expected(const ModelField& f) {
  std::string names = f.access.names ? f.access.names : "";
  std::replace(names.begin(), names.end(), ',', '|');
  switch (f.type()) {
    case FieldType::integer:
      return "an integer in " + shortest_decimal(f.min) + ".." + shortest_decimal(f.max);
    case FieldType::number:
      return "a number in [" + shortest_decimal(f.min) + ", " + shortest_decimal(f.max) + "]";
    case FieldType::boolean:
      return "true or false";
    default:
      return "one of " + names;
  }
}

std::string model_field_key_in(const ModelField& f, const std::string& part) {
  const std::string key = f.json;
  const size_t dot = key.find('.');
  if (dot == std::string::npos ? !part.empty() : key.compare(0, dot, part) != 0) return "";
  return key.substr(dot + 1);  // npos + 1 = 0: the whole key
}

std::string set_model_field_json(const ModelField& f, ModelSpec& m, const nlohmann::json& v) {
  // a name as it is, a whole number (4096.0) as an integer, anything else as its JSON text ("12", "true", "\"12\"")
  const bool whole = f.type() == FieldType::integer && v.is_number_float() && std::abs(v.get<double>()) < 9e18 &&
                     v.get<double>() == std::floor(v.get<double>());
  const std::string text = f.type() == FieldType::choice && v.is_string() ? v.get<std::string>()
                           : whole                                        ? std::to_string(static_cast<int64_t>(v.get<double>()))
                                   : v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return set_model_field_text(f, m, text);
}

void read_model_part(JsonFields& g, const nlohmann::json& obj, const std::string& part, ModelSpec& m) {
  for (const ModelField& f : model_fields()) {
    const std::string name = model_field_key_in(f, part);
    if (name.empty()) continue;
    if (!g.has(name.c_str())) {
      if (f.presence == Presence::required && !obj.contains(name))  // (a null is a problem already)
        g.problem(name, "missing; expected " + model_field_expected(f));
      continue;
    }
    const std::string bad = set_model_field_json(f, m, obj[name]);
    if (!bad.empty()) g.problem(name, bad);
  }
}

}  // namespace mplan
