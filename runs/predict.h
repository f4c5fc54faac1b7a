// The simulator's prediction for a plan, stored with each imported run (when this mplan was built
// with the simulator; otherwise imports store an empty prediction and say so).
#pragma once
#include <nlohmann/json.hpp>

#include "core/plan.h"
#include "core/status.h"

namespace mplan::runs {

// True when the simulator was linked into this build.
bool simulator_available();
// report_to_json(simulate(plan, default cost parameters of the plan's GPU)); an error when the
// simulator is not built or rejects the plan.
Expected<nlohmann::json> predict_plan(const Plan& plan);

}  // namespace mplan::runs
