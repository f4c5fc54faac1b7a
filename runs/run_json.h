// JSON views of runs and regression reports (for --format json and the GUI).
#pragma once
#include <nlohmann/json.hpp>

#include "runs/regress.h"
#include "runs/runs_db.h"

namespace mplan::runs {

nlohmann::json summary_to_json(const RunSummary& s);
// Steps and ops only when `with_details`; the plan document only when `with_plan`.
nlohmann::json run_to_json(const RunRecord& r, bool with_details, bool with_plan);
nlohmann::json regress_to_json(const RegressReport& rep);

}  // namespace mplan::runs
