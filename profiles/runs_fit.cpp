// Step-level fit to measured runs (see runs_fit.h).
#include "profiles/runs_fit.h"

#include "simulator/fit_runs.h"
#include "simulator/published.h"
#include "simulator/validate.h"

namespace mplan::profiles {

Expected<RunsFitResult> fit_runs_csv(const std::string& csv, const ClusterSpec& cluster, Calibration& cal) {
  auto all = read_csv_file(csv);
  if (!all) return all.error();
  RunsFitResult res;
  res.rows_in_file = int(all->size());
  // rows of this GPU only: the kernel-fitted parameters describe this GPU
  std::vector<CsvRow> mine;
  for (const auto& r : *all) {
    auto run = published_run_from_row(r);
    if (run && run->plan.cluster.gpu.name == cluster.gpu.name) mine.push_back(r);
  }
  std::vector<MeasuredRun> runs = measured_runs_from_rows(mine);
  res.rows_used = int(runs.size());
  if (runs.empty()) {
    res.notes.push_back("no clean, expressible rows of " + cluster.gpu.name + " in " + csv +
                        ": the step-level parameters keep their defaults");
    return res;
  }
  Calibration start = cal;
  start.by_arch.clear();  // the kernel fit is this GPU's own: no per-architecture overrides on top
  auto params_of = [](const Calibration& c) { return [c](const Plan&) { return c.params; }; };
  ValidationReport before = validate_throughput(mine, params_of(start));
  // the per-step host cost of the user's own runs: not a parameter of the shipped fit (which charges
  // each framework's own, simulator/framework_data.h), so its bounds are given here
  std::vector<FitParamSpec> which = {fit_param("overlap_slowdown"),
                                     {"optimizer_overhead_s", 0.0, 0.5, "per-step host cost of these runs, seconds"}};
  mplan::FitResult fr = fit_cost_params(runs, start, which, 2);
  cal = fr.calibration;
  ValidationReport after = validate_throughput(mine, params_of(cal));
  for (const auto& w : which)
    if (double* v = cost_param_ref(cal.params, w.name)) res.fitted.emplace_back(w.name, *v);
  res.overall = {after.overall.n, before.overall.mape, after.overall.mape};
  for (const auto& [fam, st] : after.by_family) {
    RunFamilyError e;
    e.rows = st.n;
    e.mape_after = st.mape;
    auto b = before.by_family.find(fam);
    e.mape_before = b != before.by_family.end() ? b->second.mape : 0;
    res.by_family[fam] = e;
  }
  return res;
}

}  // namespace mplan::profiles
