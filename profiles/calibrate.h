// `mplan calibrate`: picks a device of a profile database (or a shipped profile), builds the cluster
// its rows were measured on (a preset for GPUs, the local-cpu cluster for a CPU), fits the cost
// model, and produces the "mplan.calibration/1" JSON (simulator/cost_params.h) plus, for a CPU, the
// local-cpu ClusterSpec.
#pragma once
#include <optional>
#include <string>

#include "core/cluster_spec.h"
#include "core/status.h"
#include "profiles/fit.h"
#include "profiles/profile_db.h"
#include "simulator/cost_params.h"

namespace mplan::profiles {

struct CalibrateOptions {
  std::string db;       // profile database file
  std::string shipped;  // or: a shipped profile name (profiles/data/NAME.sql), loaded in memory
  std::string device;   // device id or a substring of its name; "" = the newest device with rows
  std::string cluster;  // cluster preset or file the rows ran on; "" = the device's own
  bool store = true;    // record the calibration in the database (not for shipped profiles)
  // Starting values of the fit and values of what it does not fit; default: the documented
  // defaults for the cluster (default_cost_params).
  std::optional<CostParams> base;
};

struct CalibrateResult {
  Device device;
  ClusterSpec cluster;  // with fitted latencies (the local-cpu cluster for a CPU device)
  FitResult fit;
  Calibration calibration;
  int kernel_rows = 0, collective_rows = 0;
};

Expected<CalibrateResult> calibrate(const CalibrateOptions& o);

// The cluster preset a GPU name belongs to ("NVIDIA H100 80GB HBM3" -> "dgx-h100"), "" if unknown.
std::string cluster_for_gpu_name(const std::string& gpu_name);

// Picks the device: by id, by name substring, or the newest with rows.
Expected<Device> select_device(const ProfileDb& db, const std::string& which);

}  // namespace mplan::profiles
