// The GUI's door to the planner and simulator. A seam: the app calls these functions only, so the
// planner can be swapped (tests inject their own SearchFunction).
#pragma once
#include <functional>
#include <string>

#include "planner/planner.h"

namespace mplan::gui {

using SearchFunction = std::function<Expected<SearchResult>(const Plan&, const Calibration&, const SearchOptions&)>;

// mplan::search.
SearchFunction defaultSearchFunction();

// The simulator's report of a plan with its timeline (trace) filled.
Expected<StepReport> simulateWithTrace(const Plan& plan, const Calibration& cal);
// Megatron-LM arguments (planner exporter), or the exporter's error.
Expected<std::string> megatronArgs(const Plan& plan);
// The planner's explanation of a plan, or an error.
Expected<std::string> explainPlan(const Plan& plan, const Calibration& cal);

}  // namespace mplan::gui
