// Calibration fit: the cost model's parameters from profile rows, per op class, by least squares on
// log(predicted / measured) time over all shapes of the class. Classes are fitted in dependency
// order: memory-bound ops (hbm_eff, kernel_overhead_us), GEMMs (gemm_eff_max, gemm_ramp_us,
// precision_eff per non-reference precision), attention (attn_fwd_eff, attn_bwd_eff), then
// collectives on one scale-up domain (nvlink_eff and the per-step latency), across domains
// (network_eff and latency), and all-to-all (a2a_eff).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/cluster_spec.h"
#include "core/status.h"
#include "profiles/profile_db.h"
#include "simulator/cost_params.h"

namespace mplan::profiles {

// Error of a fitted class (or op) over its rows: absolute percentage errors of time.
struct FitError {
  int rows = 0;
  double mape = 0, median_ape = 0, p90_ape = 0, max_ape = 0;
  double rms_log = 0;  // root mean square of ln(pred / measured)
};

struct ClassFit {
  std::string name;  // memory | gemm | attention | collectives.scale_up | collectives.scale_out | collectives.all_to_all
  std::vector<std::pair<std::string, double>> params;  // fitted values
  FitError error;
  std::string note;  // e.g. "no rows: defaults kept"
};

struct FitResult {
  CostParams params;
  ClusterSpec cluster;  // input cluster with the fitted per-step latencies
  std::vector<ClassFit> classes;
  std::vector<std::pair<std::string, FitError>> per_op;  // op name (kernels) or collective name
  std::vector<int64_t> kernel_ids, collective_ids;       // rows used
  nlohmann::json to_json() const;                        // the "fit" object of mplan.calibration/1
};

struct FitOptions {
  bool fit_latency = true;  // fit scale_up/scale_out_latency_us (else keep the cluster's)
};

// Fits `base` (documented defaults) to the rows measured on `cluster`'s GPU (or local-cpu cluster).
Expected<FitResult> fit_rows(const std::vector<KernelRow>& kernels, const std::vector<CollectiveRow>& collectives,
                             const ClusterSpec& cluster, const CostParams& base, const FitOptions& opt = {});

FitError fit_error(const std::vector<double>& predicted, const std::vector<double>& measured);

// "1-5,8,10-12": compact list of row ids.
std::string id_ranges(std::vector<int64_t> ids);

}  // namespace mplan::profiles
