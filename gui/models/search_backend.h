// The GUI's door to the planner and simulator. A seam: the app calls these functions only, so the
// planner can be swapped (tests inject their own SearchFunction; a build without the planner
// library uses a small built-in exhaustive search with the same result types).
#pragma once
#include <functional>
#include <string>

#include "planner/planner.h"

namespace mplan::gui {

using SearchFunction = std::function<Expected<SearchResult>(const Plan&, const Calibration&, const SearchOptions&)>;

// mplan::search when the planner library is linked, else fallbackSearch.
SearchFunction defaultSearchFunction();
bool havePlanner();

#ifndef MPLAN_GUI_HAVE_PLANNER
// Small exhaustive search (tp, pp, vpp, dp, mbs, zero, recompute) over validate_layout + simulate,
// used only when the planner is not built. Honours cancel, progress, fix/max and top_k.
Expected<SearchResult> fallbackSearch(const Plan& job, const Calibration& cal, const SearchOptions& opt);
#endif

// The simulator's report of a plan with its timeline (trace) filled.
Expected<StepReport> simulateWithTrace(const Plan& plan, const Calibration& cal);
// Megatron-LM arguments (planner exporter), or an error saying the planner is not built.
Expected<std::string> megatronArgs(const Plan& plan);
// The planner's explanation of a plan, or an error.
Expected<std::string> explainPlan(const Plan& plan, const Calibration& cal);

}  // namespace mplan::gui
