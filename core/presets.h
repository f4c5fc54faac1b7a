// Model and cluster presets shipped in data/ (embedded in the binary), and the resolvers behind
// every --model/--cluster option: a preset name, an mplan JSON file or a Hugging Face config.json.
#pragma once
#include <string>
#include <vector>

#include "core/cluster_spec.h"
#include "core/model_spec.h"
#include "core/status.h"

namespace mplan {

// The cluster of the development host's profiled CPU (data/calibration/local-cpu/local-cpu.json):
// resolvable by name like a preset, listed apart (no GPU profile ships for it).
constexpr const char* kLocalCpuCluster = "local-cpu";

std::vector<std::string> model_preset_names();
std::vector<std::string> cluster_preset_names();
Expected<ModelSpec> model_preset(const std::string& name);
Expected<ClusterSpec> cluster_preset(const std::string& name);
// Raw JSON text of a preset (for `mplan models --format json` and tests).
std::string model_preset_text(const std::string& name);
std::string cluster_preset_text(const std::string& name);

// NAME or FILE: a preset name; else a readable file holding an mplan model JSON or a Hugging Face
// config.json (told apart by "model_type"). Unknown names suggest the closest preset.
Expected<ModelSpec> resolve_model(const std::string& name_or_file);
Expected<ClusterSpec> resolve_cluster(const std::string& name_or_file);

}  // namespace mplan
