// Reads the embedded data/frameworks/*.json (see framework_data.h).
#include "simulator/framework_data.h"

#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mplan {

// Defined in the generated embedded_framework_data.cpp (simulator/CMakeLists.txt).
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_framework_data();

namespace {
double fact_value(const nlohmann::json& step, const char* key, const std::string& file) {
  const auto& v = step.at(key).at("value");
  if (!v.is_number() || v.get<double>() < 0) throw std::logic_error(file + ": " + key + ".value must be a number >= 0");
  return v.get<double>();
}

// Every value of a section carries what it means and where it is documented.
void require_citations(const nlohmann::json& section, const std::string& name, const std::string& file) {
  for (auto it = section.begin(); it != section.end(); ++it) {
    const auto& e = it.value();
    for (const char* k : {"note", "citation"})
      if (!e.is_object() || !e.contains(k) || !e.at(k).is_string() || e.at(k).get<std::string>().empty())
        throw std::logic_error(file + ": " + name + "." + it.key() + " needs a non-empty " + k);
  }
}

std::map<Framework, FrameworkStep> load() {
  std::map<Framework, FrameworkStep> out;
  for (const auto& [path, text] : embedded_framework_data()) {
    const std::string file(path);
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object() || j.value("schema", "") != "mplan.framework_defaults/1")
      throw std::logic_error(file + ": not an mplan.framework_defaults/1 file");
    auto fw = parse_framework(j.value("framework", ""));
    if (!fw) throw std::logic_error(file + ": unknown framework");
    const auto& step = j.at("step");
    require_citations(step, "step", file);
    require_citations(j.at("kernels"), "kernels", file);
    FrameworkStep s;
    s.grad_clip = step.at("grad_clip").at("value").get<bool>();
    s.optimizer_bytes_per_param = fact_value(step, "optimizer_bytes_per_param", file);
    s.data_loading_s = fact_value(step, "data_loading_s", file);
    s.logging_s = fact_value(step, "logging_s", file);
    const auto& host = step.at("host_sync_s").at("value");
    s.host_sync_fitted = host.is_string() && host.get<std::string>() == "fitted";
    if (!s.host_sync_fitted) s.host_sync_s = fact_value(step, "host_sync_s", file);
    const auto& kernels = j.at("kernels");
    s.fp8_act_bytes = fact_value(kernels, "activation_bytes_per_element", file);
    s.fp8_weight_fwd_bytes = fact_value(kernels, "weight_fwd_bytes_per_element", file);
    s.fp8_weight_bwd_bytes = fact_value(kernels, "weight_bwd_bytes_per_element", file);
    s.flash_attention_2_rate = fact_value(kernels, "flash_attention_2_rate", file);
    if (!(s.flash_attention_2_rate > 0 && s.flash_attention_2_rate <= 1))
      throw std::logic_error(file + ": kernels.flash_attention_2_rate must be in (0, 1]");
    out[*fw] = s;
  }
  return out;
}
}  // namespace

const FrameworkStep& framework_step(Framework f) {
  static const std::map<Framework, FrameworkStep> table = load();
  auto it = table.find(f);
  if (it == table.end()) throw std::logic_error("data/frameworks has no file for framework " + to_string(f));
  return it->second;
}

}  // namespace mplan
