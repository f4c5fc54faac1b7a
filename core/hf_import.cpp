// Hugging Face config.json -> ModelSpec for llama, mistral, mixtral, qwen2/3(+moe), deepseek_v3 (and
// kimi_k2), gpt2, gpt_neox and gpt_oss. Unknown fields are ignored (HF configs carry many unrelated
// keys); required ones are named when missing.
#include "core/hf_import.h"

#include <algorithm>

#include "core/json_fields.h"
#include "core/limits.h"
#include "core/suggest.h"

namespace mplan {

using nlohmann::json;

const std::vector<std::string>& hf_supported_model_types() {
  static const std::vector<std::string> types = {"llama",     "mistral",     "mixtral", "qwen2", "qwen3",    "qwen2_moe",
                                                 "qwen3_moe", "deepseek_v3", "kimi_k2", "gpt2",  "gpt_neox", "gpt_oss"};
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

// head_dim when given, else hidden_size / num_attention_heads, which must then divide exactly.
int head_dim_of(JsonFields& f, const ModelSpec& m, const char* key) {
  if (f.has(key)) return static_cast<int>(f.integer(key, 1, kMaxHeadDim));
  if (m.num_attention_heads <= 0 || m.hidden_size <= 0) return 1;
  if (m.hidden_size % m.num_attention_heads != 0) {
    f.problem(key, "missing, and hidden_size=" + std::to_string(m.hidden_size) + " is not divisible by num_attention_heads=" +
                       std::to_string(m.num_attention_heads) + "; give " + key + " (the per-head dimension)");
    return 1;
  }
  return static_cast<int>(m.hidden_size / m.num_attention_heads);
}

// RoPE settings: rope_theta + rope_scaling (transformers 4) or rope_parameters (transformers 5, which
// holds rope_theta too). Scaling types mplan does not model (linear, dynamic, longrope, ...) are refused
// with the field named, never dropped: the model would train with other positions.
void read_rope(JsonFields& f, const json& j, ModelSpec& m, std::vector<std::string>& problems) {
  if (auto t = f.opt_number("rope_theta", false, 1e12)) m.rotary_base = *t;
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

// Norm epsilon under its several spellings.
void read_norm_eps(JsonFields& f, ModelSpec& m) {
  for (const char* k : {"rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon", "norm_epsilon"})
    if (f.has(k)) {
      m.norm_epsilon = f.number(k, false, 1.0);
      return;
    }
}

// Llama-family dense/MoE fields shared by llama, mistral, mixtral, qwen2/3(+moe).
void read_llama_like(JsonFields& f, ModelSpec& m) {
  m.num_layers = static_cast<int>(f.integer("num_hidden_layers"));
  m.hidden_size = f.integer("hidden_size");
  m.ffn_hidden_size = f.integer("intermediate_size");
  m.num_attention_heads = static_cast<int>(f.integer("num_attention_heads"));
  m.num_query_groups = static_cast<int>(f.integer_or("num_key_value_heads", m.num_attention_heads));
  m.kv_channels = head_dim_of(f, m, "head_dim");
  m.vocab_size = f.integer("vocab_size");
  m.tied_embeddings = f.boolean_or("tie_word_embeddings", false);
  m.activation = read_activation(f, "hidden_act", true);
  m.norm = NormKind::rmsnorm;
  m.position_embedding = PositionEmbedding::rope;
  m.max_position_embeddings = f.integer_or("max_position_embeddings", 0, 0);
  m.add_qkv_bias = f.boolean_or("attention_bias", false);
  m.add_bias_linear = f.boolean_or("mlp_bias", false) && m.add_qkv_bias;
}

// Qwen MoE: num_experts, moe_intermediate_size, decoder_sparse_step, mlp_only_layers, shared expert.
void read_qwen_moe(JsonFields& f, ModelSpec& m) {
  MoeSpec e;
  e.num_experts = static_cast<int>(f.integer("num_experts"));
  e.top_k = static_cast<int>(f.integer("num_experts_per_tok"));
  e.moe_ffn_hidden_size = f.integer("moe_intermediate_size");
  e.shared_expert_ffn_hidden_size = f.integer_or("shared_expert_intermediate_size", 0, 0);
  int step = static_cast<int>(f.integer_or("decoder_sparse_step", 1));
  e.moe_layer_freq = step;
  m.moe = e;
}

// DeepSeek-V3 / Kimi-K2 router: scoring_func (softmax|sigmoid), topk_method noaux_tc = the aux-loss-free
// expert bias (e_score_correction_bias), n_group / topk_group, routed_scaling_factor.
void read_deepseek_router(JsonFields& f, MoeSpec& e) {
  std::string score = f.choice_or("scoring_func", {"softmax", "sigmoid"}, "softmax");
  e.router_score_function = score == "sigmoid" ? RouterScore::sigmoid : RouterScore::softmax;
  std::string method = f.choice_or("topk_method", {"greedy", "group_limited_greedy", "noaux_tc"}, "greedy");
  e.router_enable_expert_bias = method == "noaux_tc";
  if (method != "greedy") {
    e.router_num_groups = static_cast<int>(f.integer_or("n_group", 0, 0, kMaxExperts));
    e.router_group_topk = static_cast<int>(f.integer_or("topk_group", 0, 0, kMaxExperts));
    if (e.router_num_groups <= 1) e.router_num_groups = e.router_group_topk = 0;  // one group: no limit
  }
  e.router_topk_scaling_factor = f.opt_number("routed_scaling_factor", false, 1e6).value_or(1.0);
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

  if (type == "llama" || type == "mistral" || type == "qwen2" || type == "qwen3") {
    read_llama_like(f, m);
    if (type == "qwen2") m.add_qkv_bias = true;
    if (type == "qwen3") m.qk_layernorm = true;
  } else if (type == "mixtral") {
    read_llama_like(f, m);
    MoeSpec e;
    e.num_experts = static_cast<int>(f.integer("num_local_experts"));
    e.top_k = static_cast<int>(f.integer("num_experts_per_tok"));
    e.moe_ffn_hidden_size = m.ffn_hidden_size;
    m.moe = e;
  } else if (type == "qwen2_moe" || type == "qwen3_moe") {
    read_llama_like(f, m);
    if (type == "qwen2_moe") m.add_qkv_bias = true;
    if (type == "qwen3_moe") m.qk_layernorm = true;
    read_qwen_moe(f, m);
    if (j.contains("mlp_only_layers") && j["mlp_only_layers"].is_array() && !j["mlp_only_layers"].empty()) {
      // mplan describes dense layers as a leading block; accept only that shape.
      const json& mo = j["mlp_only_layers"];
      bool leading = true;
      for (size_t i = 0; i < mo.size(); ++i) leading = leading && mo[i].is_number_integer() && mo[i].get<int>() == int(i);
      if (leading) {
        m.moe->first_k_dense_layers = static_cast<int>(mo.size());
      } else {
        problems.push_back("config.json.mlp_only_layers: only a leading block of dense layers [0, 1, ..., k-1] is supported");
      }
    }
  } else if (type == "deepseek_v3" || type == "kimi_k2") {
    m.num_layers = static_cast<int>(f.integer("num_hidden_layers"));
    m.hidden_size = f.integer("hidden_size");
    m.ffn_hidden_size = f.integer("intermediate_size");
    m.num_attention_heads = static_cast<int>(f.integer("num_attention_heads"));
    m.num_query_groups = static_cast<int>(f.integer_or("num_key_value_heads", m.num_attention_heads));
    m.vocab_size = f.integer("vocab_size");
    m.tied_embeddings = f.boolean_or("tie_word_embeddings", false);
    m.activation = read_activation(f, "hidden_act", true);
    m.norm = NormKind::rmsnorm;
    m.position_embedding = PositionEmbedding::rope;
    m.max_position_embeddings = f.integer_or("max_position_embeddings", 0, 0);
    m.qk_layernorm = true;  // q_a_layernorm and kv_a_layernorm: the latent norms (Megatron's --qk-layernorm with MLA)
    MlaSpec a;
    a.q_lora_rank = static_cast<int>(f.integer_or("q_lora_rank", 0, 0));
    a.kv_lora_rank = static_cast<int>(f.integer("kv_lora_rank"));
    a.qk_head_dim = static_cast<int>(f.integer("qk_nope_head_dim"));
    a.qk_rope_head_dim = static_cast<int>(f.integer("qk_rope_head_dim"));
    a.v_head_dim = static_cast<int>(f.integer("v_head_dim"));
    m.mla = a;
    m.kv_channels = a.qk_head_dim + a.qk_rope_head_dim;
    m.num_query_groups = m.num_attention_heads;
    MoeSpec e;
    e.num_experts = static_cast<int>(f.integer("n_routed_experts"));
    e.top_k = static_cast<int>(f.integer("num_experts_per_tok"));
    e.moe_ffn_hidden_size = f.integer("moe_intermediate_size");
    e.shared_expert_ffn_hidden_size = f.integer_or("n_shared_experts", 0, 0) * e.moe_ffn_hidden_size;
    e.first_k_dense_layers = static_cast<int>(f.integer_or("first_k_dense_replace", 0, 0));
    e.moe_layer_freq = static_cast<int>(f.integer_or("moe_layer_freq", 1));
    m.moe = e;
    m.mtp_num_layers = static_cast<int>(f.integer_or("num_nextn_predict_layers", 0, 0));
    read_deepseek_router(f, *m.moe);
  } else if (type == "gpt2") {
    m.num_layers = static_cast<int>(f.integer("n_layer"));
    m.hidden_size = f.integer("n_embd");
    m.num_attention_heads = static_cast<int>(f.integer("n_head"));
    m.num_query_groups = m.num_attention_heads;
    m.ffn_hidden_size = f.integer_or("n_inner", 4 * m.hidden_size);
    m.kv_channels = head_dim_of(f, m, "head_dim");
    m.vocab_size = f.integer("vocab_size");
    m.max_position_embeddings = f.integer("n_positions");
    m.tied_embeddings = f.boolean_or("tie_word_embeddings", true);
    m.activation = read_activation(f, "activation_function", false);
    m.norm = NormKind::layernorm;
    m.position_embedding = PositionEmbedding::learned;
    m.add_bias_linear = m.add_qkv_bias = true;
  } else if (type == "gpt_neox") {
    m.num_layers = static_cast<int>(f.integer("num_hidden_layers"));
    m.hidden_size = f.integer("hidden_size");
    m.ffn_hidden_size = f.integer("intermediate_size");
    m.num_attention_heads = static_cast<int>(f.integer("num_attention_heads"));
    m.num_query_groups = m.num_attention_heads;
    m.kv_channels = head_dim_of(f, m, "head_dim");
    m.vocab_size = f.integer("vocab_size");
    m.max_position_embeddings = f.integer_or("max_position_embeddings", 0, 0);
    m.tied_embeddings = f.boolean_or("tie_word_embeddings", false);
    m.activation = read_activation(f, "hidden_act", false);
    m.norm = NormKind::layernorm;
    m.position_embedding = PositionEmbedding::rope;
    m.add_bias_linear = m.add_qkv_bias = f.boolean_or("attention_bias", true);
    m.rotary_percent = f.opt_number("rotary_pct", false, 1.0).value_or(1.0);
    if (auto b = f.opt_number("rotary_emb_base", false, 1e12)) m.rotary_base = *b;
  } else if (type == "gpt_oss") {
    read_llama_like(f, m);
    m.add_qkv_bias = m.add_bias_linear = f.boolean_or("attention_bias", true);
    MoeSpec e;
    e.num_experts = static_cast<int>(f.has("num_local_experts") ? f.integer("num_local_experts") : f.integer("num_experts"));
    e.top_k = static_cast<int>(f.integer("num_experts_per_tok"));
    e.moe_ffn_hidden_size = m.ffn_hidden_size;
    m.moe = e;
    m.softmax_type = SoftmaxType::learnable;  // gpt-oss: one learned sink logit per head (modeling_gpt_oss.py `sinks`)
  }
  if (m.position_embedding == PositionEmbedding::rope && type != "gpt_neox") read_rope(f, j, m, problems);
  read_norm_eps(f, m);
  read_window(f, j, m, problems);
  // generic expert-count spellings for configs that mix conventions
  if (m.moe && m.moe->num_experts == 0) {
    for (const char* k : {"num_local_experts", "num_experts", "n_routed_experts"})
      if (f.has(k)) m.moe->num_experts = static_cast<int>(f.integer(k));
  }
  if (!problems.empty()) return Error(problems);
  auto v = validate_model(m);
  if (!v.empty()) return Error(v);
  return m;
}

}  // namespace mplan
