// ModelSpec JSON reading/writing and validation.
#include "core/model_spec.h"

#include <algorithm>

#include "core/json_fields.h"
#include "core/limits.h"
#include "core/model_fields.h"

namespace mplan {

using nlohmann::json;

LayerKind ModelSpec::layer_kind(int layer) const {
  if (hybrid_override_pattern.empty() || layer < 0 || size_t(layer) >= hybrid_override_pattern.size())
    return LayerKind::transformer;
  switch (hybrid_override_pattern[size_t(layer)]) {
    case 'M':
      return LayerKind::mamba;
    case '*':
      return LayerKind::attention;
    case 'E':
      return LayerKind::moe;
    default:
      return LayerKind::mlp;
  }
}

bool ModelSpec::is_moe_layer(int layer) const {
  if (!moe) return false;
  if (is_hybrid()) return layer_kind(layer) == LayerKind::moe;
  if (layer < moe->first_k_dense_layers) return false;
  return layer % moe->moe_layer_freq == 0;
}

int ModelSpec::num_moe_layers() const {
  int n = 0;
  for (int i = 0; i < num_layers; ++i) n += is_moe_layer(i) ? 1 : 0;
  return n;
}

int64_t ModelSpec::q_proj_width() const {
  if (mla) return int64_t(num_attention_heads) * (mla->qk_head_dim + mla->qk_rope_head_dim);
  return int64_t(num_attention_heads) * kv_channels;
}
int64_t ModelSpec::kv_proj_width() const {
  if (mla) return int64_t(num_attention_heads) * (mla->qk_head_dim + mla->qk_rope_head_dim);
  return int64_t(num_query_groups) * kv_channels;
}
int64_t ModelSpec::v_proj_width() const {
  if (mla) return int64_t(num_attention_heads) * mla->v_head_dim;
  return int64_t(num_query_groups) * kv_channels;
}

bool ModelSpec::is_window_layer(int layer) const {
  if (window_size <= 0) return false;
  if (window_attn_skip_freq <= 0) return true;
  return (layer + 1) % window_attn_skip_freq != 0;
}

namespace {
// Score entries of causal attention over `n` tokens when each query sees at most `win` keys.
double causal_entries(double n, double win) { return n <= win ? n * (n + 1) / 2 : win * (win + 1) / 2 + (n - win) * win; }
}  // namespace

double ModelSpec::attention_fraction(int64_t seq, int64_t doc, bool windowed) const {
  if (doc <= 0 || doc >= seq) return windowed ? window_attention_fraction(seq) : 1.0;
  // causal attention within documents of `doc` tokens (and within the window), over the full matrix's
  const double s = double(seq), d = double(doc);
  const double w = windowed && window_size > 0 ? double(window_size) : s;
  return (s / d) * causal_entries(d, w) / causal_entries(s, s);
}

double ModelSpec::window_attention_fraction(int64_t seq) const {
  if (window_size <= 0 || seq <= window_size) return 1.0;
  const double s = double(seq);
  return causal_entries(s, double(window_size)) / causal_entries(s, s);  // query i attends to min(i, w) keys
}

namespace {

// model.rope_scaling: {"type": "llama3"|"yarn", "factor", ...}; the fields of the other type are refused.
void read_rope_scaling(const json& j, ModelSpec& m, std::vector<std::string>& problems) {
  JsonFields g(j, "model.rope_scaling", problems);
  read_model_part(g, j, "rope_scaling", m);
  ModelSpec probe;  // the keys its type writes (core/model_fields.cpp), the only ones it reads
  probe.rope_scaling.type = m.rope_scaling.type;
  std::vector<std::string> keys = model_json_keys("rope_scaling");
  if (probe.rope_scaling.type != RopeScalingType::none)
    keys.erase(std::remove_if(keys.begin(), keys.end(),
                              [&](const std::string& k) { return !model_field("rope_scaling." + k)->written(probe); }),
               keys.end());
  g.reject_unknown(keys);
  if (m.rope_scaling.type == RopeScalingType::none && g.has("type"))
    g.problem("type", "expected llama3 or yarn (leave rope_scaling out for none)");
}

}  // namespace

Expected<ModelSpec> model_from_json(const json& j) {
  std::vector<std::string> problems;
  JsonFields f(j, "model", problems);
  if (!problems.empty()) return Error(problems);
  std::vector<std::string> keys = model_json_keys("");  // core/model_fields.h, and the parts and provenance
  keys.insert(keys.end(),
              {"name", "moe", "mla", "mamba", "hybrid_override_pattern", "rope_scaling", "source", "notes", "sources"});
  f.reject_unknown(keys);
  ModelSpec m;
  m.name = f.opt_string("name").value_or("custom");
  read_model_part(f, j, "", m);  // every field through its row; then the defaults derived from others
  // ffn_hidden_size is required: Megatron's 4 x hidden_size default is wrong for every gated-MLP model
  if (!f.has("num_query_groups")) m.num_query_groups = m.num_attention_heads;
  if (!f.has("kv_channels") && m.num_attention_heads > 0 && m.hidden_size % m.num_attention_heads == 0) {
    m.kv_channels = static_cast<int>(m.hidden_size / m.num_attention_heads);
  } else if (!f.has("kv_channels") && m.num_attention_heads > 0) {
    f.problem("kv_channels", "missing, and hidden_size=" + std::to_string(m.hidden_size) +
                                 " is not divisible by num_attention_heads=" + std::to_string(m.num_attention_heads) +
                                 "; give kv_channels (the per-head dimension)");
  }
  if (!f.has("add_qkv_bias")) m.add_qkv_bias = m.add_bias_linear;
  if (const json* rj = f.object("rope_scaling")) read_rope_scaling(*rj, m, problems);
  if (const json* mj = f.object("moe")) {
    JsonFields g(*mj, "model.moe", problems);
    g.reject_unknown(model_json_keys("moe"));
    m.moe.emplace();
    read_model_part(g, *mj, "moe", m);
    if (!g.has("moe_ffn_hidden_size")) m.moe->moe_ffn_hidden_size = m.ffn_hidden_size;
  }
  if (const json* lj = f.object("mla")) {
    JsonFields g(*lj, "model.mla", problems);
    g.reject_unknown(model_json_keys("mla"));
    m.mla.emplace();
    read_model_part(g, *lj, "mla", m);
  }
  if (const json* bj = f.object("mamba")) {
    JsonFields g(*bj, "model.mamba", problems);
    g.reject_unknown(model_json_keys("mamba"));
    m.mamba.emplace();
    read_model_part(g, *bj, "mamba", m);
  }
  if (auto pattern = f.opt_string("hybrid_override_pattern")) m.hybrid_override_pattern = *pattern;
  if (!problems.empty()) return Error(problems);
  auto v = validate_model(m);
  if (!v.empty()) return Error(v);
  return m;
}

json model_to_json(const ModelSpec& m) {
  json j = {{"name", m.name}};
  if (m.is_hybrid()) j["hybrid_override_pattern"] = m.hybrid_override_pattern;
  for (const ModelField& f : model_fields()) {  // each field where its row says (core/model_fields.h)
    if (f.written && !f.written(m)) continue;
    json v = model_field_json(f, m);
    const std::string key = f.json;
    const size_t dot = key.find('.');  // a field of the moe, mla or rope_scaling object
    if (!v.is_null()) (dot == std::string::npos ? j : j[key.substr(0, dot)])[key.substr(dot + 1)] = v;
  }
  return j;
}

namespace {

// Megatron-Core TransformerConfig.__post_init__ (megatron/core/transformer/transformer_config.py):
// the expert bias needs a sigmoid-like score function; group-limited routing needs both numbers, groups
// dividing the experts and group_topk <= num_groups; each chosen group must hold top_k/group_topk experts.
void validate_router(const MoeSpec& e, std::vector<std::string>& p) {
  if (e.router_enable_expert_bias && e.router_score_function != RouterScore::sigmoid)
    p.push_back("model.moe.router_enable_expert_bias: needs router_score_function sigmoid (Megatron-Core asserts it)");
  if ((e.router_num_groups > 0) != (e.router_group_topk > 0))
    p.push_back("model.moe.router_group_topk: group-limited routing needs both router_num_groups and router_group_topk");
  if (e.router_num_groups > 0 && e.router_group_topk > 0) {
    if (e.num_experts % e.router_num_groups != 0)
      p.push_back("model.moe.router_num_groups: " + std::to_string(e.router_num_groups) +
                  " does not divide num_experts=" + std::to_string(e.num_experts));
    else if (e.router_group_topk > e.router_num_groups)
      p.push_back("model.moe.router_group_topk: " + std::to_string(e.router_group_topk) +
                  " exceeds router_num_groups=" + std::to_string(e.router_num_groups));
    else if (e.top_k % e.router_group_topk != 0 || e.top_k / e.router_group_topk > e.num_experts / e.router_num_groups)
      p.push_back("model.moe.router_group_topk: top_k=" + std::to_string(e.top_k) + " experts do not split over " +
                  std::to_string(e.router_group_topk) + " groups of " + std::to_string(e.num_experts / e.router_num_groups));
  }
  if (e.router_topk_scaling_factor <= 0) p.push_back("model.moe.router_topk_scaling_factor: must be > 0");
}

void validate_attention(const ModelSpec& m, std::vector<std::string>& p) {
  if (m.norm_epsilon <= 0 || m.norm_epsilon >= 1) p.push_back("model.norm_epsilon: must be in (0, 1)");
  if (m.rotary_base <= 1) p.push_back("model.rotary_base: must be > 1");
  if (m.rotary_percent <= 0 || m.rotary_percent > 1) p.push_back("model.rotary_percent: must be in (0, 1]");
  if (m.rope_scaling.type != RopeScalingType::none) {
    if (m.position_embedding != PositionEmbedding::rope) p.push_back("model.rope_scaling: needs position_embedding rope");
    if (m.rope_scaling.factor < 1) p.push_back("model.rope_scaling.factor: must be >= 1");
    if (m.rope_scaling.original_max_position_embeddings < 1)
      p.push_back("model.rope_scaling.original_max_position_embeddings: must be >= 1 (the pre-extension context)");
    const RopeScaling& r = m.rope_scaling;
    if (r.low_freq_factor <= 0 || r.beta_fast <= 0 || r.beta_slow <= 0)
      p.push_back("model.rope_scaling: low_freq_factor, beta_fast and beta_slow must be > 0");
    if (m.rope_scaling.type == RopeScalingType::llama3 && m.rope_scaling.high_freq_factor <= m.rope_scaling.low_freq_factor)
      p.push_back("model.rope_scaling.high_freq_factor: must exceed low_freq_factor");
  }
  if (m.window_size < 0) p.push_back("model.window_size: must be >= 0 (0 = full attention)");
  if (m.window_attn_skip_freq < 0 || (m.window_attn_skip_freq > 0 && m.window_size == 0))
    p.push_back("model.window_attn_skip_freq: needs window_size > 0 and must be >= 0");
  if (m.window_attn_skip_freq == 1)
    p.push_back("model.window_attn_skip_freq: 1 would make every layer full attention; leave window_size out instead");
}

// Megatron's hybrid stack (megatron/core/ssm/mamba_hybrid_layer_allocation.py): one symbol per layer
// of M, *, - and E; Mamba layers need the mixer's sizes, E layers the experts; the mixer's heads split
// into its groups.
void validate_hybrid(const ModelSpec& m, std::vector<std::string>& p) {
  const std::string& pat = m.hybrid_override_pattern;
  if (pat.empty()) {
    if (m.mamba) p.push_back("model.mamba: needs hybrid_override_pattern (which layers are Mamba layers)");
    return;
  }
  const size_t bad = pat.find_first_not_of("M*-E");
  if (bad != std::string::npos) {
    p.push_back("model.hybrid_override_pattern: symbol '" + std::string(1, pat[bad]) + "' at layer " + std::to_string(bad) +
                " is not one of M (Mamba), * (attention), - (MLP), E (MoE)");
    return;
  }
  if (int64_t(pat.size()) != m.num_layers)
    p.push_back("model.hybrid_override_pattern: " + std::to_string(pat.size()) +
                " symbols for num_layers=" + std::to_string(m.num_layers) + "; give one symbol per layer");
  if (pat.find('M') != std::string::npos && !m.mamba)
    p.push_back("model.mamba: the pattern has Mamba layers (M); give mamba.num_heads and the other mixer sizes");
  if (pat.find('E') != std::string::npos && !m.moe)
    p.push_back("model.moe: the pattern has MoE layers (E); give the experts (moe.num_experts, moe.top_k)");
  if (m.moe && pat.find('E') == std::string::npos)
    p.push_back("model.moe: a hybrid model routes only in its E layers; the pattern has none");
  if (m.moe && (m.moe->first_k_dense_layers != 0 || m.moe->moe_layer_freq != 1))
    p.push_back(
        "model.moe.first_k_dense_layers: a hybrid model places its MoE layers by the pattern; leave "
        "first_k_dense_layers and moe_layer_freq at their defaults");
  if (m.mamba) {
    const MambaSpec& b = *m.mamba;
    if (b.num_heads < 1 || b.head_dim < 1 || b.state_dim < 1 || b.num_groups < 1 || b.conv_kernel < 1 || b.chunk_size < 1)
      p.push_back("model.mamba: num_heads, head_dim, state_dim, num_groups, conv_kernel and chunk_size must be >= 1");
    else if (b.num_heads % b.num_groups != 0)
      p.push_back("model.mamba.num_groups: " + std::to_string(b.num_groups) +
                  " does not divide num_heads=" + std::to_string(b.num_heads));
  }
}

}  // namespace

std::vector<std::string> validate_model(const ModelSpec& m) {
  std::vector<std::string> p;
  auto pos = [&](const char* name, int64_t v) {
    if (v <= 0) p.push_back(std::string("model.") + name + ": must be a positive integer, got " + std::to_string(v));
  };
  auto at_most = [&](const char* name, int64_t v, int64_t max) {
    if (v > max)
      p.push_back(std::string("model.") + name + ": " + std::to_string(v) + " exceeds " + std::to_string(max) +
                  ", more than any model mplan can describe");
  };
  pos("num_layers", m.num_layers);
  pos("hidden_size", m.hidden_size);
  pos("ffn_hidden_size", m.ffn_hidden_size);
  pos("num_attention_heads", m.num_attention_heads);
  pos("num_query_groups", m.num_query_groups);
  pos("kv_channels", m.kv_channels);
  pos("vocab_size", m.vocab_size);
  at_most("num_layers", m.num_layers, kMaxLayers);
  at_most("hidden_size", m.hidden_size, kMaxHidden);
  at_most("ffn_hidden_size", m.ffn_hidden_size, kMaxFfn);
  at_most("num_attention_heads", m.num_attention_heads, kMaxHeads);
  at_most("num_query_groups", m.num_query_groups, kMaxHeads);
  at_most("kv_channels", m.kv_channels, kMaxHeadDim);
  at_most("vocab_size", m.vocab_size, kMaxVocab);
  at_most("max_position_embeddings", m.max_position_embeddings, kMaxSeq);
  at_most("mtp_num_layers", m.mtp_num_layers, kMaxLayers);
  if (m.moe) {
    at_most("moe.num_experts", m.moe->num_experts, kMaxExperts);
    at_most("moe.moe_ffn_hidden_size", m.moe->moe_ffn_hidden_size, kMaxFfn);
    at_most("moe.shared_expert_ffn_hidden_size", m.moe->shared_expert_ffn_hidden_size, kMaxFfn);
    at_most("moe.moe_layer_freq", m.moe->moe_layer_freq, kMaxLayers);
  }
  if (m.mla) {
    at_most("mla.q_lora_rank", m.mla->q_lora_rank, kMaxHidden);
    at_most("mla.kv_lora_rank", m.mla->kv_lora_rank, kMaxHidden);
    at_most("mla.qk_head_dim", m.mla->qk_head_dim, kMaxHeadDim);
    at_most("mla.qk_rope_head_dim", m.mla->qk_rope_head_dim, kMaxHeadDim);
    at_most("mla.v_head_dim", m.mla->v_head_dim, kMaxHeadDim);
  }
  if (!p.empty()) return p;
  if (!m.mla && m.num_attention_heads % m.num_query_groups != 0)
    p.push_back("model.num_query_groups: " + std::to_string(m.num_query_groups) + " does not divide num_attention_heads=" +
                std::to_string(m.num_attention_heads) + "; use a divisor of the head count");
  if (m.position_embedding == PositionEmbedding::learned && m.max_position_embeddings <= 0)
    p.push_back("model.max_position_embeddings: required (> 0) with position_embedding=learned");
  if (m.mtp_num_layers < 0) p.push_back("model.mtp_num_layers: must be >= 0");
  if (m.hidden_dropout < 0 || m.hidden_dropout >= 1) p.push_back("model.hidden_dropout: must be in [0, 1)");
  if (m.attention_dropout < 0 || m.attention_dropout >= 1) p.push_back("model.attention_dropout: must be in [0, 1)");
  if (m.moe) {
    const MoeSpec& e = *m.moe;
    if (e.num_experts < 1) p.push_back("model.moe.num_experts: must be >= 1");
    if (e.top_k < 1 || e.top_k > e.num_experts)
      p.push_back("model.moe.top_k: " + std::to_string(e.top_k) +
                  " must be between 1 and num_experts=" + std::to_string(e.num_experts));
    if (e.moe_ffn_hidden_size <= 0) p.push_back("model.moe.moe_ffn_hidden_size: must be > 0");
    if (e.moe_layer_freq < 1) p.push_back("model.moe.moe_layer_freq: must be >= 1");
    if (e.first_k_dense_layers < 0 || e.first_k_dense_layers >= m.num_layers)
      p.push_back("model.moe.first_k_dense_layers: " + std::to_string(e.first_k_dense_layers) + " must be in [0, num_layers)");
    validate_router(e, p);
  }
  validate_attention(m, p);
  validate_hybrid(m, p);
  if (m.mla) {
    if (m.mla->kv_lora_rank <= 0) p.push_back("model.mla.kv_lora_rank: must be > 0");
    if (m.mla->qk_head_dim <= 0) p.push_back("model.mla.qk_head_dim: must be > 0");
    if (m.mla->v_head_dim <= 0) p.push_back("model.mla.v_head_dim: must be > 0");
  }
  return p;
}

}  // namespace mplan
