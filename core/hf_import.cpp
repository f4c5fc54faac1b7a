// Hugging Face config.json -> ModelSpec for llama, mistral, mixtral, qwen2/3(+moe), nemotron_h, deepseek_v3 (and
// kimi_k2), gpt2, gpt_neox and gpt_oss. Unknown fields are ignored (HF configs carry many unrelated
// keys); required ones are named when missing.
#include "core/hf_import.h"

#include <algorithm>

#include "core/json_fields.h"
#include "core/limits.h"
#include "core/model_fields.h"
#include "core/suggest.h"

namespace mplan {

using nlohmann::json;

const std::vector<std::string>& hf_supported_model_types() {
  static const std::vector<std::string> types = {"llama",     "mistral",   "mixtral",     "qwen2",   "qwen3",
                                                 "qwen2_moe", "qwen3_moe", "deepseek_v3", "kimi_k2", "gpt2",
                                                 "gpt_neox",  "gpt_oss",   "nemotron_h"};
  return types;
}

bool looks_like_hf_config(const json& j) { return j.is_object() && (j.contains("model_type") || j.contains("architectures")); }

namespace {

// The MLP activation: `key` (hidden_act, activation_function for gpt2) must be given and be one that
// mplan models; a gated MLP (llama family) takes SiLU only. Unknown or missing values are refused
// instead of becoming SwiGLU (which changes FLOPs, memory and what `mplan train` computes).
Activation read_activation(JsonFields& f, const char* key, bool gated) {
  static const std::vector<std::string> gated_acts = {"silu", "swish"};
  static const std::vector<std::string> plain_acts = {"gelu",        "gelu_new",      "gelu_fast", "gelu_pytorch_tanh",
                                                      "gelu_python", "gelu_accurate", "relu2",     "squared_relu"};
  const auto& ok = gated ? gated_acts : plain_acts;
  std::string act = f.choice(key, ok);
  if (gated) return Activation::swiglu;
  if (act == "relu2" || act == "squared_relu") return Activation::squared_relu;
  return Activation::gelu;
}

// hidden_size / num_attention_heads when head_dim is not given, which must then divide exactly.
void derive_head_dim(JsonFields& f, ModelSpec& m) {
  if (f.has("head_dim") || f.has("attention_head_dim") || m.num_attention_heads <= 0 || m.hidden_size <= 0) return;
  if (m.hidden_size % m.num_attention_heads == 0) {
    m.kv_channels = static_cast<int>(m.hidden_size / m.num_attention_heads);
    return;
  }
  f.problem("head_dim", "missing, and hidden_size=" + std::to_string(m.hidden_size) + " is not divisible by " +
                            "num_attention_heads=" + std::to_string(m.num_attention_heads) +
                            "; give head_dim (the per-head dimension)");
}

// RoPE settings: rope_scaling (transformers 4) or rope_parameters (transformers 5, which holds rope_theta
// too; the top-level rope_theta is the table's). Scaling types mplan does not model (linear, dynamic, longrope, ...) are refused
// with the field named, never dropped: the model would train with other positions.
void read_rope(JsonFields& f, const json& j, ModelSpec& m, std::vector<std::string>& problems) {
  const char* key = f.has("rope_parameters") ? "rope_parameters" : "rope_scaling";
  if (!f.has(key)) return;
  const json* rs = f.object(key);
  if (!rs) return;
  JsonFields g(*rs, std::string("config.json.") + key, problems, true);
  if (auto t = g.opt_number("rope_theta", false, 1e12)) m.rotary_base = *t;
  const char* type_key = g.has("rope_type") ? "rope_type" : "type";
  std::string type = g.has(type_key) ? g.string(type_key) : "default";
  RopeScaling& r = m.rope_scaling;
  if (type == "default") return;
  if (type != "llama3" && type != "yarn") {
    g.problem(type_key, "'" + type + "' is not a RoPE scaling mplan models (supported: default, llama3, yarn)");
    return;
  }
  r.type = type == "llama3" ? RopeScalingType::llama3 : RopeScalingType::yarn;
  r.factor = g.number("factor", false, 1e6);
  // llama3 names it in the object; yarn configs fall back to max_position_embeddings / factor
  if (g.has("original_max_position_embeddings")) {
    r.original_max_position_embeddings = g.integer("original_max_position_embeddings", 1, kMaxSeq);
  } else if (type == "yarn" && r.factor >= 1 && j.contains("max_position_embeddings") &&
             j["max_position_embeddings"].is_number_integer()) {
    r.original_max_position_embeddings = int64_t(double(j["max_position_embeddings"].get<int64_t>()) / r.factor);
  } else {
    g.problem("original_max_position_embeddings", "missing; the context length the model was pre-trained with");
  }
  if (r.type == RopeScalingType::llama3) {
    r.low_freq_factor = g.number("low_freq_factor", false, 1e6);
    r.high_freq_factor = g.number("high_freq_factor", false, 1e6);
  } else {
    r.beta_fast = g.opt_number("beta_fast", false, 1e6).value_or(32.0);
    r.beta_slow = g.opt_number("beta_slow", false, 1e6).value_or(1.0);
    r.mscale = g.opt_number("mscale", true, 1e6).value_or(1.0);
    r.mscale_all_dim = g.opt_number("mscale_all_dim", true, 1e6).value_or(0.0);
  }
}

// Sliding-window attention: sliding_window with layer_types (gpt-oss; transformers' per-layer list) or
// on every layer (Mistral v0.1). Qwen's use_sliding_window/max_window_layers and layer kinds other
// than sliding_attention/full_attention are refused by name.
void read_window(JsonFields& f, const json& j, ModelSpec& m, std::vector<std::string>& problems) {
  bool enabled = f.boolean_or("use_sliding_window", true);
  if (!enabled || !f.has("sliding_window")) return;
  if (f.has("use_sliding_window") && f.has("max_window_layers")) {
    f.problem("use_sliding_window", "Qwen's sliding window above max_window_layers is not modelled; set it to false");
    return;
  }
  m.window_size = f.integer("sliding_window", 1, kMaxSeq);
  if (!j.contains("layer_types") || j["layer_types"].is_null()) return;  // every layer windowed
  const json& lt = j["layer_types"];
  std::vector<int> windowed;
  for (size_t i = 0; lt.is_array() && i < lt.size(); ++i) {
    std::string k = lt[i].is_string() ? lt[i].get<std::string>() : "";
    if (k != "sliding_attention" && k != "full_attention") {
      problems.push_back("config.json.layer_types[" + std::to_string(i) + "]: '" + k +
                         "' is not an attention variant mplan models (sliding_attention, full_attention)");
      return;
    }
    windowed.push_back(k == "sliding_attention" ? 1 : 0);
  }
  if (!lt.is_array() || int(windowed.size()) != m.num_layers) {
    problems.push_back("config.json.layer_types: expected a list of num_hidden_layers=" + std::to_string(m.num_layers) +
                       " entries");
    return;
  }
  // Megatron's window_attn_skip_freq N: layer i (0-based) is full attention when (i+1) % N == 0
  for (int freq = 0; freq <= m.num_layers; ++freq) {
    if (freq == 1) continue;
    bool ok = true;
    for (int i = 0; i < m.num_layers && ok; ++i) ok = windowed[size_t(i)] == (freq == 0 || (i + 1) % freq != 0 ? 1 : 0);
    if (ok) {
      m.window_attn_skip_freq = freq;
      if (freq > m.num_layers) m.window_size = 0;
      return;
    }
  }
  if (std::count(windowed.begin(), windowed.end(), 1) == 0) {
    m.window_size = 0;  // every layer full attention
    return;
  }
  problems.push_back("config.json.layer_types: only a periodic pattern (one full-attention layer every N) is supported");
}

// The first of a row's config.json spellings ("a | b") that the config gives; "" when none.
std::string hf_key_given(const ModelField& row, const JsonFields& f) {
  const std::string keys = row.hf;
  for (size_t at = 0; at < keys.size();) {
    const size_t end = keys.find(" | ", at);
    std::string k = keys.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (f.has(k.c_str())) return k;
    at = end == std::string::npos ? keys.size() : end + 3;
  }
  return "";
}

// Every field of `part` ("" = the model's own, "moe", "mla") that config.json gives under its row's key
// (core/model_fields.cpp, the hf column), with the row's type and range. A required row that is missing
// is named, unless it is one of `derived` (a rule gives it).
void read_hf_fields(JsonFields& f, const json& j, const std::string& part, ModelSpec& m,
                    const std::vector<std::string>& derived = {}) {
  for (const ModelField& row : model_fields()) {
    const std::string name = model_field_key_in(row, part);
    if (name.empty() || !*row.hf) continue;
    const std::string key = hf_key_given(row, f);
    if (!key.empty()) {
      const std::string bad = set_model_field_json(row, m, j[key]);
      if (!bad.empty()) f.problem(key, bad);
    } else if (row.presence == Presence::required && std::find(derived.begin(), derived.end(), name) == derived.end()) {
      const std::string spellings = row.hf;
      const size_t bar = spellings.find(" | ");
      f.problem(spellings.substr(0, bar),
                "missing; expected " + model_field_expected(row) +
                    (bar == std::string::npos ? "" : " (also read as " + spellings.substr(bar + 3) + ")"));
    }
  }
}

// Llama-family rules shared by llama, mistral, mixtral, qwen2/3(+moe) and gpt_oss: a gated MLP, RMSNorm, RoPE.
void read_llama_like(JsonFields& f, ModelSpec& m) {
  m.activation = read_activation(f, "hidden_act", true);
  m.norm = NormKind::rmsnorm;
  m.position_embedding = PositionEmbedding::rope;
  m.add_qkv_bias = f.boolean_or("attention_bias", false);
  m.add_bias_linear = f.boolean_or("mlp_bias", false) && m.add_qkv_bias;
}

// The routed experts (their count, top-k, widths and router from the table's rows); `own_width`: the
// experts have a width of their own (moe_intermediate_size), else that of the dense MLP.
void read_moe(JsonFields& f, const json& j, ModelSpec& m, bool own_width) {
  m.moe.emplace();
  read_hf_fields(f, j, "moe", m);
  if (!own_width) m.moe->moe_ffn_hidden_size = m.ffn_hidden_size;
  if (own_width && !f.has("moe_intermediate_size"))
    f.problem("moe_intermediate_size", "missing; the width of one routed expert (an integer > 0)");
}

// Qwen MoE: mplan describes dense layers (mlp_only_layers) as a leading block; only that shape is accepted.
void read_qwen_moe(JsonFields& f, const json& j, ModelSpec& m, std::vector<std::string>& problems) {
  read_moe(f, j, m, true);
  if (!j.contains("mlp_only_layers") || !j["mlp_only_layers"].is_array() || j["mlp_only_layers"].empty()) return;
  const json& mo = j["mlp_only_layers"];
  bool leading = true;
  for (size_t i = 0; i < mo.size(); ++i) leading = leading && mo[i].is_number_integer() && mo[i].get<int>() == int(i);
  if (leading) {
    m.moe->first_k_dense_layers = static_cast<int>(mo.size());
  } else {
    problems.push_back("config.json.mlp_only_layers: only a leading block of dense layers [0, 1, ..., k-1] is supported");
  }
}

// DeepSeek-V3 / Kimi-K2: MLA (the latent norms are Megatron's --qk-layernorm), n_shared_experts experts of
// the routed width, and the router: topk_method noaux_tc = the aux-loss-free expert bias
// (e_score_correction_bias), n_group / topk_group for the group-limited methods.
void read_deepseek(JsonFields& f, const json& j, ModelSpec& m) {
  m.activation = read_activation(f, "hidden_act", true);
  m.norm = NormKind::rmsnorm;
  m.position_embedding = PositionEmbedding::rope;
  m.qk_layernorm = true;
  m.mla.emplace();
  read_hf_fields(f, j, "mla", m);
  m.kv_channels = m.mla->qk_head_dim + m.mla->qk_rope_head_dim;
  m.num_query_groups = m.num_attention_heads;
  read_moe(f, j, m, true);
  MoeSpec& e = *m.moe;
  e.shared_expert_ffn_hidden_size = f.integer_or("n_shared_experts", 0, 0) * e.moe_ffn_hidden_size;
  std::string method = f.choice_or("topk_method", {"greedy", "group_limited_greedy", "noaux_tc"}, "greedy");
  e.router_enable_expert_bias = method == "noaux_tc";
  if (method != "greedy") {
    e.router_num_groups = static_cast<int>(f.integer_or("n_group", 0, 0, kMaxExperts));
    e.router_group_topk = static_cast<int>(f.integer_or("topk_group", 0, 0, kMaxExperts));
    if (e.router_num_groups <= 1) e.router_num_groups = e.router_group_topk = 0;  // one group: no limit
  }
}

// Nemotron-H and Nemotron 3 (NemotronHForCausalLM): a hybrid of Mamba-2, attention, MLP and MoE layers by
// hybrid_override_pattern, squared-ReLU MLPs, RMSNorm; MoE with a sigmoid router and expert bias, the
// shared expert's width its own key, a latent width where given; MTP depths by mtp_hybrid_override_pattern.
// The HF keys and the fixed values are Megatron-Bridge's (NVIDIA-NeMo/Megatron-Bridge@067f987,
// src/megatron/bridge/models/nemotronh/nemotron_h_bridge.py: CONFIG_MAPPING, provider_bridge).
void read_nemotron_h(JsonFields& f, const json& j, ModelSpec& m, std::vector<std::string>& problems) {
  m.activation = Activation::squared_relu;
  m.norm = NormKind::rmsnorm;
  m.position_embedding = PositionEmbedding::none;  // provider.position_embedding_type = "none"
  if (!f.has("head_dim") && f.has("attention_head_dim"))
    m.kv_channels = static_cast<int>(f.integer("attention_head_dim", 1, kMaxHeadDim));
  m.hybrid_override_pattern = f.string("hybrid_override_pattern");
  m.mamba.emplace();
  read_hf_fields(f, j, "mamba", m);
  if (m.hybrid_override_pattern.find('E') != std::string::npos) {
    read_moe(f, j, m, true);
    MoeSpec& e = *m.moe;
    e.shared_expert_ffn_hidden_size = f.integer_or("moe_shared_expert_intermediate_size", 0, 0, kMaxFfn);
    e.router_score_function = RouterScore::sigmoid;
    e.router_enable_expert_bias = true;
    e.router_num_groups = e.router_group_topk = 0;  // n_group / topk_group 1: no group limit
  }
  if (m.mtp_num_layers > 0) {
    const std::string mtp = f.has("mtp_hybrid_override_pattern") ? f.string("mtp_hybrid_override_pattern") : "";
    if (mtp != (m.moe ? "*E" : "*-"))
      problems.push_back("config.json.mtp_hybrid_override_pattern: '" + mtp + "'; mplan models an MTP depth as " +
                         (m.moe ? "\"*E\"" : "\"*-\"") + " (attention and the model's " + (m.moe ? "MoE" : "MLP") + ")");
  }
}

// The rules of each model type, after the fields with a key of their own (read_hf_fields).
void read_type_rules(JsonFields& f, const json& j, const std::string& type, ModelSpec& m, std::vector<std::string>& problems) {
  if (type == "deepseek_v3" || type == "kimi_k2") return read_deepseek(f, j, m);
  if (type == "nemotron_h") return read_nemotron_h(f, j, m, problems);
  if (type == "gpt2") {
    if (!f.has("n_inner")) m.ffn_hidden_size = 4 * m.hidden_size;
    if (!f.has("n_positions")) f.problem("n_positions", "missing; the learned position table's length");
    m.num_query_groups = m.num_attention_heads;
    m.activation = read_activation(f, "activation_function", false);
    m.norm = NormKind::layernorm;
    m.position_embedding = PositionEmbedding::learned;
    m.add_bias_linear = m.add_qkv_bias = true;
    return;
  }
  if (type == "gpt_neox") {
    m.num_query_groups = m.num_attention_heads;
    m.activation = read_activation(f, "hidden_act", false);
    m.norm = NormKind::layernorm;
    m.position_embedding = PositionEmbedding::rope;
    m.add_bias_linear = m.add_qkv_bias = f.boolean_or("attention_bias", true);
    return;
  }
  read_llama_like(f, m);
  if (type == "qwen2" || type == "qwen2_moe") m.add_qkv_bias = true;
  if (type == "qwen3" || type == "qwen3_moe") m.qk_layernorm = true;
  if (type == "mixtral") read_moe(f, j, m, false);
  if (type == "qwen2_moe" || type == "qwen3_moe") read_qwen_moe(f, j, m, problems);
  if (type == "gpt_oss") {
    m.add_qkv_bias = m.add_bias_linear = f.boolean_or("attention_bias", true);
    read_moe(f, j, m, false);
    m.softmax_type = SoftmaxType::learnable;  // gpt-oss: one learned sink logit per head (modeling_gpt_oss.py `sinks`)
  }
}

}  // namespace

Expected<ModelSpec> hf_model_from_config(const json& j, const std::string& name) {
  std::vector<std::string> problems;
  JsonFields f(j, "config.json", problems, /*null_is_missing=*/true);  // HF: null = the library's default
  if (!problems.empty()) return Error(problems);
  if (!f.has("model_type")) {
    return Error("config.json: field 'model_type' is missing; supported model types: " + join(hf_supported_model_types()));
  }
  std::string type = f.string("model_type");
  ModelSpec m;
  m.name = name;
  const auto& types = hf_supported_model_types();
  if (std::find(types.begin(), types.end(), type) == types.end()) {
    return Error("config.json: model_type '" + type + "' is not supported" + did_you_mean(type, types) +
                 "; supported: " + join(types));
  }
  // the keys of the table's rows; tie_word_embeddings has transformers' default (false, GPT-2's true), GPT-2's
  // n_inner 4 x n_embd
  read_hf_fields(f, j, "", m, {"tied_embeddings", type == "gpt2" ? "ffn_hidden_size" : ""});
  if (!f.has("num_key_value_heads")) m.num_query_groups = m.num_attention_heads;
  if (!f.has("tie_word_embeddings")) m.tied_embeddings = type == "gpt2";
  read_type_rules(f, j, type, m, problems);
  if (!m.mla) derive_head_dim(f, m);  // (MLA's head dimensions are its own)
  if (m.position_embedding == PositionEmbedding::rope && type != "gpt_neox") read_rope(f, j, m, problems);
  read_window(f, j, m, problems);
  if (!problems.empty()) return Error(problems);
  auto v = validate_model(m);
  if (!v.empty()) return Error(v);
  return m;
}

}  // namespace mplan
