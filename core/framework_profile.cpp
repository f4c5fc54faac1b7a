// Reads the "capabilities" section of the embedded data/frameworks/*.json (see framework_profile.h).
// Every capability must be present with a value of its type, a note and a citation; an unknown key is
// a defect too, so a capability added to the data is also added here.
#include "core/framework_profile.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

namespace mplan {

// Defined in the generated embedded_framework_profiles.cpp (core/CMakeLists.txt).
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_framework_profiles();

namespace {

using nlohmann::json;

struct Reader {
  const json& caps;
  std::string file;
  std::string section;
  std::set<std::string> seen;

  const json& value(const char* key) {
    seen.insert(key);
    if (!caps.contains(key)) throw std::logic_error(file + ": " + section + "." + key + " missing");
    const json& c = caps.at(key);
    for (const char* k : {"note", "citation"})
      if (!c.is_object() || !c.contains(k) || !c.at(k).is_string() || c.at(k).get<std::string>().empty())
        throw std::logic_error(file + ": " + section + "." + key + " needs a non-empty " + k);
    if (!c.contains("value")) throw std::logic_error(file + ": " + section + "." + key + ".value missing");
    return c.at("value");
  }
  bool flag(const char* key) {
    const json& v = value(key);
    if (!v.is_boolean()) throw std::logic_error(file + ": " + section + "." + key + ".value must be true or false");
    return v.get<bool>();
  }
  int count(const char* key) {
    const json& v = value(key);
    if (!v.is_number_integer() || v.get<int>() < 0)
      throw std::logic_error(file + ": " + section + "." + key + ".value must be an integer >= 0");
    return v.get<int>();
  }
  template <class E>
  E choice(const char* key, std::initializer_list<std::pair<const char*, E>> names) {
    const json& v = value(key);
    std::string all;
    for (const auto& [n, e] : names) {
      if (v.is_string() && v.get<std::string>() == n) return e;
      all += (all.empty() ? "" : " | ") + std::string(n);
    }
    throw std::logic_error(file + ": " + section + "." + key + ".value must be one of " + all);
  }
};

// One entry of the "releases" array: release, match, and cited defaults (each {value, note, citation}).
ReleaseDefaults read_release(const json& e, const std::string& file) {
  ReleaseDefaults d;
  if (!e.is_object() || !e.contains("release") || !e.at("release").is_string() || !e.contains("match") ||
      !e.at("match").is_array() || e.at("match").empty() || !e.contains("defaults") || !e.at("defaults").is_object())
    throw std::logic_error(file + ": each of releases needs a release name, a non-empty match list and defaults");
  d.release = e.at("release").get<std::string>();
  for (const json& m : e.at("match")) {
    if (!m.is_string() || m.get<std::string>().empty()) throw std::logic_error(file + ": releases.match entries are text");
    std::string s = m.get<std::string>();
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return char(std::tolower(ch)); });
    d.match.push_back(s);
  }
  Reader r{e.at("defaults"), file, "releases[" + d.release + "].defaults", {}};
  const json& defs = e.at("defaults");
  if (defs.contains("grad_reduce_in_bf16")) d.grad_reduce_in_bf16 = r.flag("grad_reduce_in_bf16");
  if (defs.contains("fp8_param_gather")) d.fp8_param_gather = r.flag("fp8_param_gather");
  if (defs.contains("main_params")) {
    const json& v = r.value("main_params");
    auto mp = v.is_string() ? parse_enum<MainParams>(v.get<std::string>()) : std::nullopt;
    if (!mp) throw std::logic_error(file + ": " + r.section + ".main_params.value must be fp32 | remainder | bf16 | none");
    d.main_params = *mp;
  }
  if (defs.contains("attention_backend")) {
    const json& v = r.value("attention_backend");
    auto b = v.is_string() ? parse_enum<AttentionBackend>(v.get<std::string>()) : std::nullopt;
    if (!b) throw std::logic_error(file + ": " + r.section + ".attention_backend.value must be flash | unfused | triton");
    d.attention_backend = *b;
  }
  if (defs.contains("dropout")) {
    const json& v = r.value("dropout");
    if (!v.is_number() || v.get<double>() < 0 || v.get<double>() >= 1)
      throw std::logic_error(file + ": " + r.section + ".dropout.value must be a probability in [0, 1)");
    d.dropout = v.get<double>();
  }
  if (defs.contains("moe_force_balance")) d.moe_force_balance = r.flag("moe_force_balance");
  for (const auto& [key, v] : defs.items())
    if (!r.seen.count(key)) throw std::logic_error(file + ": " + r.section + "." + key + " is not a known release default");
  return d;
}

FrameworkProfile read_profile(const json& j, const std::string& file) {
  if (j.is_discarded() || !j.is_object() || j.value("schema", "") != "mplan.framework_defaults/1")
    throw std::logic_error(file + ": not an mplan.framework_defaults/1 file");
  if (!j.contains("capabilities") || !j.at("capabilities").is_object())
    throw std::logic_error(file + ": no \"capabilities\" section");
  Reader r{j.at("capabilities"), file, "capabilities", {}};
  FrameworkProfile p;
  p.release = j.value("release", "");
  p.model_states = r.choice<ModelStateLayout>(
      "model_states",
      {{"mixed_precision_master", ModelStateLayout::mixed_precision_master}, {"sharded_fp32", ModelStateLayout::sharded_fp32}});
  p.megatron_core_rules = r.flag("megatron_core_rules");
  p.remat_style = r.choice<RematStyle>(
      "remat_style", {{"modules", RematStyle::modules}, {"op_sac", RematStyle::op_sac}, {"jax_policy", RematStyle::jax_policy}});
  p.unfused_loss =
      r.choice<UnfusedLoss>("unfused_loss", {{"vocab_parallel_fp32_softmax", UnfusedLoss::vocab_parallel_fp32_softmax},
                                             {"torch_eager_fp32", UnfusedLoss::torch_eager_fp32}});
  p.kv_repeated = r.flag("kv_repeated");
  p.ring_attention_eager = r.flag("ring_attention_eager");
  p.eager_by_default = r.flag("eager_by_default");
  p.supports_torch_compile = r.flag("supports_torch_compile");
  p.supports_fp8_param_gather = r.flag("supports_fp8_param_gather");
  p.fsdp_pp_keeps_stage_gathered = r.flag("fsdp_pp_keeps_stage_gathered");
  p.fsdp_root_unsharded = r.flag("fsdp_root_unsharded");
  p.default_microbatches_per_stage = r.count("default_microbatches_per_stage");
  p.default_interleaved_chunks = r.count("default_interleaved_chunks");
  p.layer_checkpoint_every = r.count("layer_checkpoint_every");
  p.default_recompute = r.choice<DefaultRecompute>("default_recompute", {{"none", DefaultRecompute::none},
                                                                         {"full", DefaultRecompute::full},
                                                                         {"selective", DefaultRecompute::selective},
                                                                         {"selective_layer", DefaultRecompute::selective_layer}});
  for (const auto& [key, v] : r.caps.items())
    if (!r.seen.count(key)) throw std::logic_error(file + ": capabilities." + key + " is not a known capability");
  if (j.contains("releases")) {
    if (!j.at("releases").is_array()) throw std::logic_error(file + ": releases must be an array");
    for (const json& e : j.at("releases")) p.releases.push_back(read_release(e, file));
  }
  return p;
}

std::map<Framework, FrameworkProfile> load() {
  std::map<Framework, FrameworkProfile> out;
  for (const auto& [path, text] : embedded_framework_profiles()) {
    const std::string file(path);
    const json j = json::parse(text, nullptr, false);
    FrameworkProfile p = read_profile(j, file);
    auto fw = parse_framework(j.value("framework", ""));
    if (!fw) throw std::logic_error(file + ": unknown framework");
    out[*fw] = std::move(p);
  }
  return out;
}

const std::map<Framework, FrameworkProfile>& table() {
  static const std::map<Framework, FrameworkProfile> t = load();
  return t;
}

}  // namespace

std::string to_string(DefaultRecompute d) {
  switch (d) {
    case DefaultRecompute::none:
      return "none";
    case DefaultRecompute::full:
      return "full";
    case DefaultRecompute::selective:
      return "selective";
    case DefaultRecompute::selective_layer:
      return "selective (layer)";
  }
  return "?";
}

FrameworkProfile parse_framework_profile(const std::string& text, const std::string& file) {
  return read_profile(json::parse(text, nullptr, false), file);
}

const FrameworkProfile& framework_profile(Framework f) {
  auto it = table().find(f);
  if (it == table().end()) throw std::logic_error("data/frameworks has no file for framework " + to_string(f));
  return it->second;
}

const ReleaseDefaults* release_defaults(Framework f, const std::string& framework_text) {
  std::string t = framework_text;
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char ch) { return char(std::tolower(ch)); });
  for (const ReleaseDefaults& d : framework_profile(f).releases)
    for (const std::string& m : d.match)
      if (t.find(m) != std::string::npos) return &d;
  return nullptr;
}

std::string frameworks_with(bool FrameworkProfile::*cap) {
  std::string out;
  for (const auto& [f, p] : table())
    if (p.*cap) out += (out.empty() ? "" : ", ") + to_string(f);
  return out.empty() ? "none" : out;
}

}  // namespace mplan
