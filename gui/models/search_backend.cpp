// The GUI's door to the planner and simulator (see search_backend.h).
#include "gui/models/search_backend.h"

namespace mplan::gui {

bool havePlanner() {
#ifdef MPLAN_GUI_HAVE_PLANNER
  return true;
#else
  return false;
#endif
}

SearchFunction defaultSearchFunction() {
#ifdef MPLAN_GUI_HAVE_PLANNER
  return [](const Plan& job, const Calibration& cal, const SearchOptions& opt) { return search(job, cal, opt); };
#else
  return fallbackSearch;
#endif
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

Expected<std::string> megatronArgs(const Plan& plan) {
#ifdef MPLAN_GUI_HAVE_PLANNER
  return export_megatron_args(plan);
#else
  (void)plan;
  return Error("Megatron-LM export needs the planner library, which this build of mplan-gui does not include.");
#endif
}

Expected<std::string> explainPlan(const Plan& plan, const Calibration& cal) {
#ifdef MPLAN_GUI_HAVE_PLANNER
  try {
    return explain_plan(plan, cal);
  } catch (const std::exception& e) {
    return Error(std::string("explain failed: ") + e.what());
  }
#else
  (void)plan;
  (void)cal;
  return Error("Explanations need the planner library, which this build of mplan-gui does not include.");
#endif
}

}  // namespace mplan::gui
