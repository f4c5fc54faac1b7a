// The GUI's door to the planner and simulator (see search_backend.h).
#include "gui/models/search_backend.h"

namespace mplan::gui {

SearchFunction defaultSearchFunction() {
  return [](const Plan& job, const Calibration& cal, const SearchOptions& opt) { return search(job, cal, opt); };
}

Expected<StepReport> simulateWithTrace(const Plan& plan, const Calibration& cal) {
  SimOptions o;
  o.trace = true;
  try {
    return simulate(plan, cal.params_for(plan.cluster.gpu), o);
  } catch (const std::exception& e) {
    return Error(std::string("The simulator failed on this plan: ") + e.what());
  }
}

Expected<std::string> megatronArgs(const Plan& plan) { return export_megatron_args(plan); }

Expected<std::string> explainPlan(const Plan& plan, const Calibration& cal) {
  try {
    return explain_plan(plan, cal);
  } catch (const std::exception& e) {
    return Error(std::string("explain failed: ") + e.what());
  }
}

}  // namespace mplan::gui
