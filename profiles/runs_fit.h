// `mplan calibrate --runs FILE.csv`: after the kernel/collective fit, the few step-level parameters
// that no kernel can measure (overlap_slowdown, optimizer_overhead_s) are fitted to measured
// end-to-end runs of the same GPU, with the simulator (simulator/fit_runs.h) and the kernel-fitted
// parameters held fixed. Reports the throughput error per run family before and after.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/cluster_spec.h"
#include "core/status.h"
#include "simulator/cost_params.h"

namespace mplan::profiles {

struct RunFamilyError {
  int rows = 0;
  double mape_before = 0, mape_after = 0;  // percent
};

struct RunsFitResult {
  int rows_in_file = 0;
  int rows_used = 0;  // clean, expressible rows of this GPU
  std::vector<std::pair<std::string, double>> fitted;
  RunFamilyError overall;
  std::map<std::string, RunFamilyError> by_family;
  std::vector<std::string> notes;
};

// Fits `cal` (updated in place) to the rows of `csv` whose GPU is `cluster`'s.
Expected<RunsFitResult> fit_runs_csv(const std::string& csv, const ClusterSpec& cluster, Calibration& cal);

}  // namespace mplan::profiles
