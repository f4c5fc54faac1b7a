// The plan file "mplan.plan/1": model, cluster, training and parallel config in one versioned JSON.
// `mplan search` writes it; simulate, train, export and the GUI read it.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "core/cluster_spec.h"
#include "core/model_spec.h"
#include "core/parallel_config.h"
#include "core/status.h"
#include "core/training_spec.h"

namespace mplan {

constexpr const char* kPlanSchema = "mplan.plan/1";

struct Plan {
  ModelSpec model;
  ClusterSpec cluster;
  TrainingSpec training;
  ParallelConfig parallel;
  nlohmann::json meta = nlohmann::json::object();  // free-form: who wrote it, predicted numbers ...
};

nlohmann::json plan_to_json(const Plan& p);
// Parses and validates (model, cluster and the layout rules).
Expected<Plan> plan_from_json(const nlohmann::json& j);
Expected<Plan> read_plan_file(const std::string& path);
// Atomic write (temp file + rename). Returns ok or the problem.
Status write_plan_file(const std::string& path, const Plan& p);

}  // namespace mplan
