// Preset lookup over the embedded data/ files and the --model/--cluster resolvers.
#include "core/presets.h"

#include <sys/stat.h>

#include <algorithm>
#include <string_view>
#include <utility>

#include "core/hf_import.h"
#include "core/json_fields.h"
#include "core/suggest.h"

namespace mplan {

// Defined in the generated embedded_presets.cpp (see core/CMakeLists.txt).
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_presets();

namespace {

std::string stem(std::string_view path) {
  auto slash = path.rfind('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  auto dot = base.rfind(".json");
  return std::string(dot == std::string_view::npos ? base : base.substr(0, dot));
}

std::vector<std::string> names_under(std::string_view dir) {
  std::vector<std::string> out;
  for (const auto& [path, text] : embedded_presets())
    if (path.rfind(dir, 0) == 0) out.push_back(stem(path));
  std::sort(out.begin(), out.end());
  return out;
}

std::string text_of(std::string_view dir, const std::string& name) {
  for (const auto& [path, text] : embedded_presets())
    if (path.rfind(dir, 0) == 0 && stem(path) == name) return std::string(text);
  return {};
}

bool is_file(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string file_stem_name(const std::string& path) {
  std::string s = stem(path);
  if (s == "config") {  // a Hugging Face checkout: name it after its directory
    auto slash = path.rfind('/');
    if (slash != std::string::npos && slash > 0) {
      std::string dir = path.substr(0, slash);
      auto s2 = dir.rfind('/');
      return s2 == std::string::npos ? dir : dir.substr(s2 + 1);
    }
  }
  return s;
}

}  // namespace

std::vector<std::string> model_preset_names() { return names_under("data/models/"); }
std::vector<std::string> cluster_preset_names() { return names_under("data/clusters/"); }
std::string model_preset_text(const std::string& name) { return text_of("data/models/", name); }
std::string cluster_preset_text(const std::string& name) {
  // "local-cpu": the CPU of the development host as profiled and committed (data/calibration/local-cpu);
  // not in cluster_preset_names() because no GPU profile ships for it
  if (name == kLocalCpuCluster) return text_of("data/calibration/local-cpu/", name);
  return text_of("data/clusters/", name);
}

Expected<ModelSpec> model_preset(const std::string& name) {
  std::string text = model_preset_text(name);
  if (text.empty())
    return Error("unknown model preset '" + name + "'" + did_you_mean(name, model_preset_names()) +
                 "; presets: " + join(model_preset_names()));
  std::vector<std::string> problems;
  auto j = parse_json_text(text, "data/models/" + name + ".json", problems);
  if (!j) return Error(problems);
  return model_from_json(*j);
}

Expected<ClusterSpec> cluster_preset(const std::string& name) {
  std::string text = cluster_preset_text(name);
  if (text.empty())
    return Error("unknown cluster preset '" + name + "'" + did_you_mean(name, cluster_preset_names()) +
                 "; presets: " + join(cluster_preset_names()));
  std::vector<std::string> problems;
  auto j = parse_json_text(text, "data/clusters/" + name + ".json", problems);
  if (!j) return Error(problems);
  return cluster_from_json(*j);
}

Expected<ModelSpec> resolve_model(const std::string& s) {
  if (!model_preset_text(s).empty()) return model_preset(s);
  if (!is_file(s)) {
    return Error("--model: '" + s + "' is neither a model preset nor a readable file" + did_you_mean(s, model_preset_names()) +
                 "; presets: " + join(model_preset_names()));
  }
  std::vector<std::string> problems;
  auto text = read_text_file(s, problems);
  if (!text) return Error(problems);
  auto j = parse_json_text(*text, s, problems);
  if (!j) return Error(problems);
  Expected<ModelSpec> r = looks_like_hf_config(*j) ? hf_model_from_config(*j, file_stem_name(s)) : model_from_json(*j);
  if (!r) {
    std::vector<std::string> msgs;
    for (auto& e : r.error().problems) msgs.push_back(s + ": " + e);
    return Error(msgs);
  }
  return r;
}

Expected<ClusterSpec> resolve_cluster(const std::string& s) {
  if (!cluster_preset_text(s).empty()) return cluster_preset(s);
  if (!is_file(s)) {
    return Error("--cluster: '" + s + "' is neither a cluster preset nor a readable file" +
                 did_you_mean(s, cluster_preset_names()) + "; presets: " + join(cluster_preset_names()) + " and " +
                 kLocalCpuCluster + " (the profiled CPU of the development host)");
  }
  std::vector<std::string> problems;
  auto text = read_text_file(s, problems);
  if (!text) return Error(problems);
  auto j = parse_json_text(*text, s, problems);
  if (!j) return Error(problems);
  auto r = cluster_from_json(*j);
  if (!r) {
    std::vector<std::string> msgs;
    for (auto& e : r.error().problems) msgs.push_back(s + ": " + e);
    return Error(msgs);
  }
  return r;
}

}  // namespace mplan
