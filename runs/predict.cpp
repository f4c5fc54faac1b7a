// Prediction via the simulator when the build has it (MPLAN_RUNS_HAVE_SIMULATOR).
#include "runs/predict.h"

#ifdef MPLAN_RUNS_HAVE_SIMULATOR
#include "simulator/cost_params.h"
#include "simulator/simulator.h"
#endif

namespace mplan::runs {

#ifdef MPLAN_RUNS_HAVE_SIMULATOR

bool simulator_available() { return true; }

Expected<nlohmann::json> predict_plan(const Plan& plan) {
  auto r = simulate(plan, default_cost_params(plan.cluster));
  if (!r) return Error("prediction: the simulator rejected the plan: " + r.error().message());
  return report_to_json(r.value());
}

#else

bool simulator_available() { return false; }

Expected<nlohmann::json> predict_plan(const Plan&) {
  return Error(
      "prediction: this mplan was built without the simulator (target mplan_simulator); no prediction "
      "stored");
}

#endif

}  // namespace mplan::runs
