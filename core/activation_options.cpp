// Names and parsing of the recompute / offload module sets (see activation_options.h).
#include "core/activation_options.h"

namespace mplan {

const std::vector<std::pair<std::string, RecomputeModule>>& recompute_module_names() {
  static const std::vector<std::pair<std::string, RecomputeModule>> v = {{"core_attn", RecomputeModule::core_attn},
                                                                         {"layernorm", RecomputeModule::layernorm},
                                                                         {"mlp", RecomputeModule::mlp},
                                                                         {"moe", RecomputeModule::moe},
                                                                         {"moe_act", RecomputeModule::moe_act},
                                                                         {"mla_up_proj", RecomputeModule::mla_up_proj},
                                                                         {"shared_experts", RecomputeModule::shared_experts}};
  return v;
}

const std::vector<std::pair<std::string, OffloadModule>>& offload_module_names() {
  static const std::vector<std::pair<std::string, OffloadModule>> v = {
      {"attn_norm", OffloadModule::attn_norm}, {"qkv_linear", OffloadModule::qkv_linear},
      {"core_attn", OffloadModule::core_attn}, {"attn_proj", OffloadModule::attn_proj},
      {"mlp_norm", OffloadModule::mlp_norm},   {"expert_fc1", OffloadModule::expert_fc1},
      {"moe_act", OffloadModule::moe_act}};
  return v;
}

namespace {
template <typename E>
std::vector<std::string> names_of(ModuleSet<E> s, const std::vector<std::pair<std::string, E>>& table) {
  std::vector<std::string> out;
  for (const auto& [n, e] : table)
    if (s.has(e)) out.push_back(n);
  return out;
}
template <typename E>
std::optional<ModuleSet<E>> parse_set(const std::vector<std::string>& names, const std::vector<std::pair<std::string, E>>& table,
                                      std::string* bad) {
  ModuleSet<E> s;
  for (const auto& n : names) {
    bool found = false;
    for (const auto& [name, e] : table)
      if (name == n) {
        s.add(e);
        found = true;
      }
    if (!found) {
      if (bad) *bad = n;
      return std::nullopt;
    }
  }
  return s;
}
}  // namespace

std::vector<std::string> to_names(RecomputeModules s) { return names_of(s, recompute_module_names()); }
std::vector<std::string> to_names(OffloadModules s) { return names_of(s, offload_module_names()); }

std::optional<RecomputeModules> parse_recompute_modules(const std::vector<std::string>& names, std::string* bad) {
  return parse_set(names, recompute_module_names(), bad);
}
std::optional<OffloadModules> parse_offload_modules(const std::vector<std::string>& names, std::string* bad) {
  return parse_set(names, offload_module_names(), bad);
}

uint32_t remat_saved_tensors(RematPolicy p) {
  const uint32_t in = uint32_t(RematTensor::layer_input), qkv = uint32_t(RematTensor::qkv), out = uint32_t(RematTensor::out_proj),
                 wi = uint32_t(RematTensor::mlpwi), wo = uint32_t(RematTensor::mlpwo);
  switch (p) {
    case RematPolicy::none:
      return in | qkv | out | wi | wo;
    case RematPolicy::full:
      return in;
    case RematPolicy::save_qkv_proj:
      return in | qkv;
    case RematPolicy::save_out_proj:
      return in | out;
    case RematPolicy::save_dot_except_mlp:
      return in | qkv | out;
    case RematPolicy::save_dot_except_mlpwi:
      return in | qkv | out | wo;
    case RematPolicy::minimal:
      return in | qkv | out | wi | wo;
  }
  return in;
}

std::vector<std::string> split_list(const std::string& csv) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : csv) {
    if (c == ',' || c == ' ') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

std::string join_names(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

}  // namespace mplan
