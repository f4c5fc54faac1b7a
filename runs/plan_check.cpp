// Log configuration vs plan: reading Megatron-LM / Megatron-DeepSpeed argument blocks and
// Megatron-Bridge YAML dumps into canonical fields, and comparing them with the plan.
#include "runs/plan_check.h"

#include <algorithm>

#include "core/megatron_rules.h"
#include "core/model_fields.h"
#include "core/parallel_fields.h"
#include "runs/log_text.h"

namespace mplan::runs {

namespace {

using Map = std::map<std::string, std::string>;

std::optional<std::string> get(const Map& m, const std::string& k) {
  auto it = m.find(k);
  if (it == m.end()) return std::nullopt;
  return it->second;
}

bool is_none(const std::optional<std::string>& v) { return !v || *v == "None" || v->empty(); }

std::string norm_int(const std::string& s) {
  auto v = to_int(s);
  return v ? std::to_string(*v) : s;
}

std::string norm_bool(const std::string& s) { return s == "True" || s == "true" || s == "1" ? "True" : "False"; }

// "[0, 1, 1]" -> {0,1,1}; empty when not a list of integers.
std::vector<int> int_list(const std::string& s) {
  std::vector<int> out;
  std::string t = trim(s);
  if (t.size() < 2 || t.front() != '[' || t.back() != ']') return out;
  size_t i = 1;
  while (i < t.size() - 1) {
    size_t c = t.find(',', i);
    if (c == std::string::npos) c = t.size() - 1;
    auto v = to_int(t.substr(i, c - i));
    if (!v) return {};
    out.push_back(static_cast<int>(*v));
    i = c + 1;
  }
  return out;
}

std::string join_ints(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

// Precision from Megatron's flags (also Megatron-Bridge's model/mixed_precision fields).
std::string precision_of(const std::optional<std::string>& bf16, const std::optional<std::string>& fp16,
                         const std::optional<std::string>& fp8, const std::optional<std::string>& recipe,
                         const std::optional<std::string>& fp4) {
  auto on = [](const std::optional<std::string>& v) { return !is_none(v) && *v != "False"; };
  return std::string(to_string(megatron_precision(bf16 && norm_bool(*bf16) == "True", fp16 && norm_bool(*fp16) == "True", on(fp8),
                                                  recipe.value_or(""), on(fp4))));
}

// Megatron-Bridge mixed-precision recipe names ("bf16_with_fp8_delayed_scaling_mixed").
std::string precision_of_recipe(const std::string& name) {
  if (name.find("nvfp4") != std::string::npos) return "nvfp4";
  if (name.find("mxfp8") != std::string::npos) return "mxfp8";
  if (name.find("fp8") != std::string::npos) return "fp8";
  if (name.rfind("fp16", 0) == 0) return "fp16";
  if (name.find("bf16") != std::string::npos) return "bf16";
  return "fp32";
}

class Reader {
 public:
  Reader(LogConfig& c, const Map& m) : c_(c), m_(m) {}
  // Stores canonical `key` from log name `name` when printed (and not None unless none_as is given).
  void put(const std::string& key, const std::string& name, std::string (*norm)(const std::string&) = norm_int,
           const char* none_as = nullptr) {
    auto v = get(m_, name);
    if (!v) return;
    if (is_none(v)) {
      if (none_as) c_.fields[key] = {name, *v, none_as};
      return;
    }
    c_.fields[key] = {name, *v, norm(*v)};
  }
  void set(const std::string& key, const std::string& name, const std::string& printed, const std::string& n) {
    c_.fields[key] = {name, printed, n};
  }
  std::optional<std::string> raw(const std::string& name) const { return get(m_, name); }
  bool has(const std::string& key) const { return c_.fields.count(key) > 0; }
  std::string norm(const std::string& key) const { return has(key) ? c_.fields.at(key).normalized : ""; }

 private:
  LogConfig& c_;
  const Map& m_;
};

std::string norm_text(const std::string& s) { return s; }

// Which models a key is compared for: every model, mixture-of-experts ones (when the log has experts
// too), multi-latent-attention ones (when the log has MLA too).
enum class Only { all, moe, mla };

// The values compared one to one: canonical key, Megatron-LM's printed-argument name, Megatron-Bridge's
// YAML name ("" = read by a rule of its own below), the plan field it is compared with (its path in
// the plan JSON, or the `value` rule), the value's form and what an absent ("None") print means.
struct LogKey {
  std::string key, args, bridge, plan;
  Only only = Only::all;
  std::string (*norm)(const std::string&) = norm_int;
  const char* none_as = nullptr;
  std::string (*value)(const Plan&) = nullptr;
  const char* label = nullptr;  // the plan side as messages name it (default: plan)
};

std::string b(bool v) { return v ? "True" : "False"; }
std::string gated(const Plan& p) { return b(p.model.activation == Activation::swiglu); }
std::string untied(const Plan& p) { return b(!p.model.tied_embeddings); }
std::string has_mla(const Plan& p) { return b(p.model.mla.has_value()); }
std::string precision(const Plan& p) {
  return p.training.precision == Precision::tf32 ? "fp32" : std::string(to_string(p.training.precision));
}
std::string moe_layers(const Plan& p) {
  std::vector<int> pat(size_t(std::max(0, p.model.num_layers)));
  for (size_t i = 0; i < pat.size(); ++i) pat[i] = p.model.is_moe_layer(int(i)) ? 1 : 0;
  return "pattern:" + join_ints(pat);
}

const std::vector<LogKey>& log_keys() {
  static const std::vector<LogKey> keys = [] {
    const auto T = Only::all, E = Only::moe, A = Only::mla;
    std::vector<LogKey> k = {
        {"global_batch_size", "global_batch_size", "train.global_batch_size", "training.global_batch_size"},
        {"seq_length", "seq_length", "", "training.seq_length"},
        {"dp", "data_parallel_size", "", "parallel.dp", T, norm_int, nullptr, nullptr, "parallel (dp = world / (tp*pp*cp))"},
        {"sequence_parallel", "sequence_parallel", "model.sequence_parallel", "parallel.sp", T, norm_bool},
        {"num_query_groups", "", "", "model.num_query_groups"},
        {"kv_channels", "kv_channels", "", "model.kv_channels"},
        {"vocab", "", "", "model.vocab_size"},
        {"num_experts", "num_experts", "model.num_moe_experts", "model.moe.num_experts", T, norm_int, "0"},
        {"etp", parallel_field("etp")->log, "", "parallel.etp", E},
        {"moe_shared_expert_ffn", "moe_shared_expert_intermediate_size", "model.moe_shared_expert_intermediate_size",
         "model.moe.shared_expert_ffn_hidden_size", E, norm_int, "0"},
        {"moe_layers", "", "", "", E, norm_int, nullptr, moe_layers, "model.moe (first_k_dense_layers, moe_layer_freq)"},
        {"precision", "", "", "training.precision", T, norm_int, nullptr, precision},
        {"gated_mlp", "swiglu", "model.gated_linear_unit", "model.activation", T, norm_bool, nullptr, gated},
        {"untied_embeddings", "untie_embeddings_and_output_weights", "", "model.tied_embeddings", T, norm_bool, nullptr, untied},
        {"mla", "multi_latent_attention", "", "model.mla", T, norm_bool, nullptr, has_mla},
        {"q_lora_rank", "q_lora_rank", "model.q_lora_rank", "model.mla.q_lora_rank", A, norm_int, "0"},
        {"recompute", "recompute_granularity", "model.recompute_granularity", "parallel.recompute", T, norm_text, "none"},
        {"zero", "", "", "parallel.zero"},
    };
    for (const ModelField& f : model_fields()) {  // model fields: their log names (Bridge: model.<name>)
      const std::string json = f.json, part = json.substr(0, json.find('.') + 1);
      if (*f.log)
        k.push_back({f.log, f.log, std::string("model.") + f.log, "model." + json, part == "moe." ? E : part == "mla." ? A : T});
    }
    for (const char* f : {"world_size", "micro_batch_size", "tp", "pp", "vpp", "cp", "ep"}) {  // plan fields: their log names
      const std::string log = parallel_field(f)->log;
      const std::string bridge = *f == 'w' ? "" : *f == 'm' ? "train." + log : "model." + log;
      k.push_back({f, log, bridge, std::string("parallel.") + f, T, norm_int, *f == 'v' ? "1" : nullptr});
    }
    return k;
  }();
  return keys;
}

// The printed values of the keys of `only` whose log name this source has (Megatron's or Bridge's).
void read_keys(Reader& r, Only only, bool bridge) {
  for (const LogKey& k : log_keys()) {
    const std::string& name = bridge ? k.bridge : k.args;
    if (k.only == only && !name.empty()) r.put(k.key, name, k.norm, k.none_as);
  }
}

void read_vocab(Reader& r, const std::optional<PaddedVocab>& padded, const std::string& vocab_name, const std::string& div_name,
                const std::string& tp_key) {
  if (padded) {
    r.set("vocab", "padded vocab", std::to_string(padded->padded) + " (original " + std::to_string(padded->original) + ")",
          std::to_string(padded->original) + "|" + std::to_string(padded->padded));
    return;
  }
  auto pv = r.raw("padded_vocab_size");
  if (!is_none(pv)) {
    r.set("vocab", "padded_vocab_size", *pv, "|" + norm_int(*pv));
    return;
  }
  auto v = r.raw(vocab_name);
  if (is_none(v) || !to_int(*v)) return;
  int64_t orig = *to_int(*v), mult = 0;
  auto div = r.raw(div_name);
  auto tp = to_int(r.norm(tp_key));
  if (!is_none(div) && to_int(*div) && tp) mult = *to_int(*div) * *tp;
  std::string padded_s = mult > 0 ? std::to_string((orig + mult - 1) / mult * mult) : "";
  r.set("vocab", vocab_name, *v + (padded_s.empty() ? "" : " (padded " + padded_s + ")"), std::to_string(orig) + "|" + padded_s);
}

// MoE layer pattern from Megatron's moe_layer_freq (an int N: layer i is MoE when i % N == 0; or a list).
void read_moe_freq(Reader& r, const std::string& name) {
  auto v = r.raw(name);
  auto layers = to_int(r.norm("num_layers"));
  if (is_none(v) || !layers) return;
  std::vector<int> pat = int_list(*v);
  if (pat.empty()) {
    auto n = to_int(*v);
    if (!n || *n < 1) return;
    for (int64_t i = 0; i < *layers; ++i) pat.push_back(i % *n == 0 ? 1 : 0);
  }
  r.set("moe_layers", name, *v, "pattern:" + join_ints(pat));
}

void read_megatron_args(LogConfig& c, const Map& a, const std::optional<PaddedVocab>& padded) {
  Reader r(c, a);
  c.source = ConfigSource::megatron_args;
  read_keys(r, Only::all, false);
  if (!r.has("vpp") || r.norm("vpp") == "1") {
    auto per = r.raw("num_layers_per_virtual_pipeline_stage");
    auto L = to_int(r.norm("num_layers")), pp = to_int(r.norm("pp"));
    if (!is_none(per) && to_int(*per) && L && pp && *to_int(*per) > 0)
      r.set("vpp", "num_layers_per_virtual_pipeline_stage", *per,
            std::to_string(megatron_vpp_of(int(*L), int(*pp), int(*to_int(*per)))));
  }
  auto gqa = r.raw("group_query_attention");
  if (gqa && norm_bool(*gqa) == "False" && r.has("num_attention_heads"))
    r.set("num_query_groups", "group_query_attention", "False (one group per head: " + r.norm("num_attention_heads") + ")",
          r.norm("num_attention_heads"));
  else
    r.put("num_query_groups", "num_query_groups");
  if (r.norm("num_experts") != "0" && r.has("num_experts")) {
    read_keys(r, Only::moe, false);
    read_moe_freq(r, "moe_layer_freq");
  }
  read_vocab(r, padded, "vocab_size", "make_vocab_size_divisible_by", "tp");
  if (r.raw("bf16") || r.raw("fp16"))
    r.set("precision", "bf16/fp16/fp8/fp4", "bf16=" + r.raw("bf16").value_or("-") + " fp8=" + r.raw("fp8").value_or("-"),
          precision_of(r.raw("bf16"), r.raw("fp16"), r.raw("fp8"), r.raw("fp8_recipe"), r.raw("fp4")));
  if (r.norm("mla") == "True") read_keys(r, Only::mla, false);
  auto ckpt = r.raw("checkpoint_activations");  // Megatron-LM before recompute_granularity (2020-2021)
  if (!r.raw("recompute_granularity") && ckpt)
    r.set("recompute", "checkpoint_activations", *ckpt, norm_bool(*ckpt) == "True" ? "full" : "none");
  auto fsdp = r.raw("use_torch_fsdp2"), mfsdp = r.raw("use_megatron_fsdp");
  auto strategy = r.raw("data_parallel_sharding_strategy");
  auto mfsdp_zero = strategy ? megatron_fsdp_zero(*strategy) : std::nullopt;
  if (mfsdp && norm_bool(*mfsdp) == "True" && mfsdp_zero)
    r.set("zero", "data_parallel_sharding_strategy", *strategy, std::to_string(*mfsdp_zero));
  else if ((fsdp && norm_bool(*fsdp) == "True") || (mfsdp && norm_bool(*mfsdp) == "True"))
    r.set("zero", "use_torch_fsdp2/use_megatron_fsdp", "True", "3");
  else if (auto d = r.raw("use_distributed_optimizer"))
    r.set("zero", "use_distributed_optimizer", *d, norm_bool(*d) == "True" ? "1,2" : "0");
}

void read_deepspeed_args(LogConfig& c, const Map& a, const std::optional<PaddedVocab>& padded) {
  read_megatron_args(c, a, padded);
  c.source = ConfigSource::deepspeed_args;
  Reader r(c, a);
  c.fields.erase("num_query_groups");
  r.put("num_query_groups", "num_key_value_heads");
  if (!r.has("num_query_groups")) r.put("num_query_groups", "num_attention_heads");
  auto ne = r.raw("num_experts");
  std::vector<int> experts = ne ? int_list(*ne) : std::vector<int>{};
  for (const LogKey& k : log_keys())  // the experts as DeepSpeed prints them, read below
    if (k.only == Only::moe || k.key == "num_experts") c.fields.erase(k.key);
  if (!experts.empty()) {
    int e = experts.front();
    bool uniform = std::all_of(experts.begin(), experts.end(), [&](int x) { return x == e; });
    r.set("num_experts", "num_experts", *ne, uniform ? (e <= 1 ? "0" : std::to_string(e)) : "varies:" + *ne);
    if (e > 1) {
      r.put("moe_router_topk", "topk");
      auto interval = to_int(r.raw("expert_interval").value_or("")), L = to_int(r.norm("num_layers"));
      if (interval && *interval > 0 && L)
        r.set("moe_layers", "expert_interval", std::to_string(*interval), "count:" + std::to_string(*L / *interval));
    }
  }
  if (r.raw("moe_expert_parallel_size")) r.put("ep", "moe_expert_parallel_size");
  if (auto sp = r.raw("ds_sequence_parallel_size")) r.put("cp", "ds_sequence_parallel_size");
  auto ds = r.raw("deepspeed");
  if (ds && norm_bool(*ds) == "True" && r.raw("zero_stage")) {
    auto z = to_double(*r.raw("zero_stage"));
    if (z) r.set("zero", "zero_stage", *r.raw("zero_stage"), std::to_string(static_cast<int>(*z)));
  }
  auto ckpt = r.raw("checkpoint_activations");
  if (ckpt && norm_bool(*ckpt) == "True") r.set("recompute", "checkpoint_activations", *ckpt, "full");
}

void read_bridge_yaml(LogConfig& c, const Map& y, const std::optional<PaddedVocab>& padded) {
  Reader r(c, y);
  c.source = ConfigSource::bridge_yaml;
  read_keys(r, Only::all, true);
  r.put("seq_length", "dataset.seq_length");
  if (!r.has("seq_length")) r.put("seq_length", "dataset.sequence_length");
  if (!r.has("seq_length")) {
    r.put("seq_length", "model.seq_length");
    if (r.has("seq_length"))
      c.notes.push_back(
          "the configuration dump has no dataset sequence length: model.seq_length (the model "
          "provider's) was compared");
  } else if (auto ms = r.raw("model.seq_length"); !is_none(ms) && norm_int(*ms) != r.norm("seq_length")) {
    c.notes.push_back("model.seq_length " + *ms + " (the model provider's) differs from the data's " + r.norm("seq_length") +
                      "; the data's sequence length was used");
  }
  auto heads = r.norm("num_attention_heads"), hidden = r.norm("hidden_size");
  r.put("num_query_groups", "model.num_query_groups", norm_int, heads.empty() ? nullptr : heads.c_str());
  std::string kvc = (!heads.empty() && !hidden.empty() && to_int(heads) && *to_int(heads) > 0)
                        ? std::to_string(*to_int(hidden) / *to_int(heads))
                        : "";
  r.put("kv_channels", "model.kv_channels", norm_int, kvc.empty() ? nullptr : kvc.c_str());
  if (r.has("num_experts") && r.norm("num_experts") != "0") {
    std::string tp = r.norm("tp");
    r.put("etp", "model.expert_tensor_parallel_size", norm_int, tp.empty() ? nullptr : tp.c_str());
    read_keys(r, Only::moe, true);
    read_moe_freq(r, "model.moe_layer_freq");
  }
  read_vocab(r, padded, "model.vocab_size", "model.make_vocab_size_divisible_by", "tp");
  if (auto mp = r.raw("mixed_precision"); !is_none(mp) && *mp != "{}")
    r.set("precision", "mixed_precision", *mp, precision_of_recipe(*mp));
  else if (r.raw("mixed_precision.bf16") || r.raw("mixed_precision.fp16"))
    r.set("precision", "mixed_precision", "bf16=" + r.raw("mixed_precision.bf16").value_or("-"),
          precision_of(r.raw("mixed_precision.bf16"), r.raw("mixed_precision.fp16"), r.raw("mixed_precision.fp8"),
                       r.raw("mixed_precision.fp8_recipe"), r.raw("mixed_precision.fp4")));
  else if (r.raw("model.bf16") || r.raw("model.fp16"))
    r.set("precision", "model.bf16/fp16/fp8", "bf16=" + r.raw("model.bf16").value_or("-"),
          precision_of(r.raw("model.bf16"), r.raw("model.fp16"), r.raw("model.fp8"), r.raw("model.fp8_recipe"),
                       r.raw("model.fp4")));
  if (auto share = r.raw("model.share_embeddings_and_output_weights"))
    r.set("untied_embeddings", "model.share_embeddings_and_output_weights", *share,
          norm_bool(*share) == "True" ? "False" : "True");
  if (r.raw("model.kv_lora_rank") && !is_none(r.raw("model.kv_lora_rank"))) {
    r.set("mla", "model.kv_lora_rank", *r.raw("model.kv_lora_rank"), "True");
    read_keys(r, Only::mla, true);
  }
  auto mf = r.raw("ddp.use_megatron_fsdp"), cf = r.raw("ddp.use_custom_fsdp");
  if ((mf && norm_bool(*mf) == "True") || (cf && norm_bool(*cf) == "True"))
    r.set("zero", "ddp.use_megatron_fsdp", "True", "3");
  else if (auto d = r.raw("ddp.use_distributed_optimizer"))
    r.set("zero", "ddp.use_distributed_optimizer", *d, norm_bool(*d) == "True" ? "1,2" : "0");
}

bool is_deepspeed(const Map& a) {
  return a.count("deepspeed") || a.count("num_key_value_heads") || a.count("zero_stage") ||
         a.count("ds_sequence_parallel_size") || a.count("expert_interval");
}

// ---- plan side --------------------------------------------------------------------------------

struct PlanValue {
  std::string field, value;
};

// The plan's value of every key: its `value` rule, or the plan JSON at its path (absent: 0), in the
// log's form (True/False for booleans).
std::map<std::string, PlanValue> plan_values(const Plan& p) {
  const nlohmann::json j = plan_to_json(p);
  std::map<std::string, PlanValue> v;
  for (const LogKey& k : log_keys()) {
    std::string value = "0", pointer = "/" + k.plan;
    std::replace(pointer.begin(), pointer.end(), '.', '/');
    if (k.value)
      value = k.value(p);
    else if (const auto at = nlohmann::json::json_pointer(pointer); j.contains(at))
      value = j[at].is_boolean() ? b(j[at].get<bool>()) : j[at].is_string() ? j[at].get<std::string>() : j[at].dump();
    v[k.key] = {k.label ? k.label : k.plan, value};
  }
  return v;
}

int pattern_count(const std::string& pattern) { return static_cast<int>(std::count(pattern.begin(), pattern.end(), '1')); }

// Whether a normalized log value agrees with the plan's value for canonical `key`.
bool agrees(const std::string& key, const std::string& log, const std::string& plan) {
  if (key == "vocab") {
    auto bar = log.find('|');
    return log.substr(0, bar) == plan || (bar != std::string::npos && log.substr(bar + 1) == plan);
  }
  if (key == "zero") {
    for (size_t i = 0; i <= log.size();) {
      size_t c = log.find(',', i);
      if (log.substr(i, c == std::string::npos ? std::string::npos : c - i) == plan) return true;
      if (c == std::string::npos) break;
      i = c + 1;
    }
    return false;
  }
  if (key == "moe_layers" && log.rfind("count:", 0) == 0) return std::to_string(pattern_count(plan)) == log.substr(6);
  return log == plan;
}

std::string describe_plan_value(const std::string& key, const std::string& v) {
  if (key == "moe_layers") return std::to_string(pattern_count(v)) + " MoE layers (" + v.substr(8) + ")";
  return v;
}

}  // namespace

std::string to_string(ConfigSource s) {
  switch (s) {
    case ConfigSource::megatron_args:
      return "Megatron-LM arguments block";
    case ConfigSource::deepspeed_args:
      return "Megatron-DeepSpeed arguments block";
    case ConfigSource::bridge_yaml:
      return "Megatron-Bridge configuration dump";
    case ConfigSource::none:
      break;
  }
  return "none";
}

LogConfig read_log_config(const Map& args, const Map& yaml, const std::optional<PaddedVocab>& padded) {
  LogConfig c;
  if (!args.empty()) {
    if (is_deepspeed(args))
      read_deepspeed_args(c, args, padded);
    else
      read_megatron_args(c, args, padded);
  } else if (!yaml.empty()) {
    read_bridge_yaml(c, yaml, padded);
  } else if (padded) {
    c.fields["vocab"] = {"padded vocab", std::to_string(padded->padded),
                         std::to_string(padded->original) + "|" + std::to_string(padded->padded)};
  }
  return c;
}

std::vector<std::string> check_plan(const LogConfig& log, const Plan& plan) {
  auto pv = plan_values(plan);
  bool both_moe = plan.model.moe && log.fields.count("num_experts") && log.fields.at("num_experts").normalized != "0";
  bool both_mla = plan.model.mla && log.fields.count("mla") && log.fields.at("mla").normalized == "True";
  std::string what = log.source == ConfigSource::bridge_yaml ? "log config " : "log argument ";
  std::vector<std::string> out;
  for (const auto& [key, f] : log.fields) {
    auto it = pv.find(key);
    if (it == pv.end()) continue;
    const std::string& k = key;  // clang does not capture structured bindings in lambdas
    const Only only = std::find_if(log_keys().begin(), log_keys().end(), [&k](const LogKey& r) { return r.key == k; })->only;
    if ((only == Only::moe && !both_moe) || (only == Only::mla && !both_mla)) continue;
    if (agrees(key, f.normalized, it->second.value)) continue;
    out.push_back(what + f.name + " = " + f.printed + " but the plan has " + it->second.field + " = " +
                  describe_plan_value(key, it->second.value));
  }
  return out;
}

std::vector<std::string> config_differences(const LogConfig& a, const LogConfig& b) {
  std::vector<std::string> out;
  for (const auto& [k, f] : a.fields) {
    auto it = b.fields.find(k);
    if (it != b.fields.end() && it->second.normalized != f.normalized)
      out.push_back(f.name + " " + f.printed + " -> " + it->second.printed);
  }
  return out;
}

std::string framework_name(ConfigSource source, bool deepspeed_lines, bool bridge_memory, bool nemo_lines) {
  if (source == ConfigSource::bridge_yaml || bridge_memory) return "Megatron-Bridge";
  if (source == ConfigSource::deepspeed_args || deepspeed_lines) return "Megatron-DeepSpeed";
  if (nemo_lines) return "NeMo";
  return "Megatron-LM";
}

}  // namespace mplan::runs
