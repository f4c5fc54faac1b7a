// Imports a Hugging Face transformers `config.json` into a ModelSpec, detected by `model_type`.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/model_spec.h"
#include "core/status.h"

namespace mplan {

// model_type values understood by hf_model_from_config.
const std::vector<std::string>& hf_supported_model_types();
// True when `j` looks like a Hugging Face config (has "model_type" or "architectures").
bool looks_like_hf_config(const nlohmann::json& j);
// `name` becomes ModelSpec::name (e.g. the file's directory name).
Expected<ModelSpec> hf_model_from_config(const nlohmann::json& j, const std::string& name);

}  // namespace mplan
