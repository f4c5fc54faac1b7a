// Megatron-LM arguments (as `mplan export --format megatron` writes them) read back into the model
// and the plan they describe: the reverse of export_megatron_args, for `mplan import --megatron-args`
// and the round-trip tests. Megatron's defaults apply to flags that are absent (arguments.py).
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <regex>
#include <utility>

#include "core/megatron_rules.h"
#include "core/model_fields.h"
#include "planner/planner.h"

namespace mplan {

Expected<ModelSpec> parse_megatron_model(const std::string& text) {
  auto tokens = megatron_tokens(text);
  if (!tokens.ok()) return tokens.error();
  const std::vector<std::string>& tok = *tokens;
  ModelSpec m;
  std::smatch hm;
  if (std::regex_search(text, hm, std::regex(R"(# Megatron-LM arguments for (\S+) on)"))) m.name = hm[1];
  m.num_query_groups = 0;
  m.kv_channels = 0;
  m.add_bias_linear = true;  // Megatron's default; --disable-bias-linear turns it off
  m.tied_embeddings = true;
  m.position_embedding = PositionEmbedding::learned;
  std::vector<std::string> problems;
  bool mla = false, qkv_bias = false;
  std::string moe_freq, window, rope_type, hybrid;
  // the flags that set a boolean (to the value given), and those whose text is resolved after the loop
  const std::map<std::string, std::pair<bool*, bool>> switches = {
      {"--untie-embeddings-and-output-weights", {&m.tied_embeddings, false}},
      {"--disable-bias-linear", {&m.add_bias_linear, false}},
      {"--add-qkv-bias", {&qkv_bias, true}},
      {"--multi-latent-attention", {&mla, true}}};
  const std::map<std::string, std::string*> texts = {{"--rope-type", &rope_type},
                                                     {"--window-size", &window},
                                                     {"--moe-layer-freq", &moe_freq},
                                                     {"--hybrid-override-pattern", &hybrid}};
  for (size_t i = 0; i < tok.size(); ++i) {
    const std::string& k = tok[i];
    auto val = [&] { return megatron_arg_value(tok, i, problems); };
    if (auto s = switches.find(k); s != switches.end())
      *s->second.first = s->second.second;
    else if (auto t = texts.find(k); t != texts.end())
      *t->second = val();
    else if (const ModelField* f = model_field_of_flag(k)) {  // one flag with the member's value (core/model_fields.h)
      std::string bad = set_model_field_text(*f, m, f->type() == FieldType::boolean ? "true" : val());
      if (!bad.empty()) problems.push_back(k + ": " + bad);
    } else if (k == "--swiglu")
      m.activation = Activation::swiglu;
    else if (k == "--squared-relu")
      m.activation = Activation::squared_relu;
    else if (k == "--normalization")
      m.norm = val() == "RMSNorm" ? NormKind::rmsnorm : NormKind::layernorm;
    else if (k == "--position-embedding-type") {
      std::string t = val();
      m.position_embedding = t == "learned_absolute" ? PositionEmbedding::learned
                             : t == "none"           ? PositionEmbedding::none
                                                     : PositionEmbedding::rope;
      if (t == "yarn")
        rope_type = "yarn";
      else if (t != "rope" && t != "learned_absolute" && t != "none")
        problems.push_back("--position-embedding-type: '" + t + "' is not one mplan models");
    } else if (k == "--use-rope-scaling") {
      m.rope_scaling.type = RopeScalingType::llama3;
      m.rope_scaling.original_max_position_embeddings = 8192;
      if (m.rope_scaling.factor == 1.0) m.rope_scaling.factor = 8.0;  // Megatron's --rope-scaling-factor default
    } else if (k.rfind("--", 0) == 0 && i + 1 < tok.size() && tok[i + 1].rfind("--", 0) != 0)
      ++i;  // another option's value
  }
  if (m.num_query_groups == 0) m.num_query_groups = m.num_attention_heads;
  if (m.kv_channels == 0 && m.num_attention_heads > 0) m.kv_channels = int(m.hidden_size / m.num_attention_heads);
  m.add_qkv_bias = m.add_bias_linear || qkv_bias;
  if (rope_type == "yarn") m.rope_scaling.type = RopeScalingType::yarn;
  if (m.rope_scaling.type == RopeScalingType::yarn && m.rope_scaling.original_max_position_embeddings == 0)
    m.rope_scaling.original_max_position_embeddings = 4096;  // MLATransformerConfig's default
  // YaRN with MLA: the MLATransformerConfig fields without a flag travel in the export's note
  std::smatch ym;
  if (mla && std::regex_search(text, ym,
                               std::regex(R"(set MLATransformerConfig original_max_position_embeddings=(\d+), )"
                                          R"(beta_fast=([0-9.eE+-]+), beta_slow=([0-9.eE+-]+))"))) {
    m.rope_scaling.original_max_position_embeddings = std::stoll(ym[1]);
    m.rope_scaling.beta_fast = std::strtod(ym[2].str().c_str(), nullptr);
    m.rope_scaling.beta_slow = std::strtod(ym[3].str().c_str(), nullptr);
  }
  if (m.position_embedding != PositionEmbedding::learned) m.max_position_embeddings = 0;  // only learned positions use it
  if (!window.empty()) {
    m.window_size = megatron_window_of(window);
    if (m.window_size == 0) problems.push_back("--window-size: '" + window + "' is not 'left,0' (a causal window)");
  }
  if (!mla) m.mla.reset();  // the MLA flags count only with --multi-latent-attention
  if (mla) {
    const MlaSpec& a = m.mla ? *m.mla : m.mla.emplace();
    m.kv_channels = a.qk_head_dim + a.qk_rope_head_dim;
    m.num_query_groups = m.num_attention_heads;
  }
  if (m.moe && m.moe->num_experts == 0) m.moe.reset();  // the MoE flags count only with --num-experts
  if (m.moe) {
    MoeSpec& e = *m.moe;
    if (e.moe_ffn_hidden_size == 0) e.moe_ffn_hidden_size = m.ffn_hidden_size;
    if (!moe_freq.empty() && !megatron_read_moe_layer_freq(moe_freq, m.num_layers, e))
      problems.push_back("--moe-layer-freq: '" + moe_freq + "' is not a leading dense block followed by a periodic MoE pattern");
  }
  if (!hybrid.empty()) {
    // the hybrid stack's pattern, then one "/" part per MTP depth (mplan's depth: "*E", or "*-" without MoE);
    // megatron_tokens has already taken off the quotes
    const size_t slash = hybrid.find('/');
    m.hybrid_override_pattern = hybrid.substr(0, slash);
    int depths = 0;
    for (size_t at = slash; at != std::string::npos; ++depths) {
      const size_t next = hybrid.find('/', at + 1);
      const std::string part = hybrid.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1);
      if (part != (m.moe ? "*E" : "*-"))
        problems.push_back("--hybrid-override-pattern: MTP depth '" + part + "'; mplan models a depth as " +
                           (m.moe ? "*E" : "*-") + " (attention and the model's MoE or MLP)");
      at = next;
    }
    if (depths != m.mtp_num_layers)
      problems.push_back("--hybrid-override-pattern: " + std::to_string(depths) + " MTP depths after '/' but --mtp-num-layers " +
                         std::to_string(m.mtp_num_layers));
  }
  if (!problems.empty()) return Error(problems);
  auto v = validate_model(m);
  if (!v.empty()) return Error(v);
  return m;
}

Expected<Plan> import_megatron_plan(const std::string& text, const ClusterSpec& cluster, int world_size) {
  auto model = parse_megatron_model(text);
  if (!model.ok()) return model.error();
  auto layout = parse_megatron_args(text);
  if (!layout.ok()) return layout.error();
  Plan p;
  p.model = *model;
  p.cluster = cluster;
  p.parallel = layout->parallel;
  p.training.global_batch_size = layout->global_batch_size;
  p.training.seq_length = layout->seq_length;
  p.training.precision = layout->precision;
  std::smatch wm;
  if (world_size <= 0 && std::regex_search(text, wm, std::regex(R"(WORLD_SIZE=(\d+))"))) world_size = std::stoi(wm[1]);
  if (world_size <= 0) return Error("the arguments do not say the GPU count (no 'WORLD_SIZE=' in the header); give --gpus");
  p.parallel.world_size = world_size;
  auto problems = validate_layout(p.model, p.cluster, p.training, p.parallel);
  if (!problems.empty()) return Error(problems);
  return p;
}

}  // namespace mplan
