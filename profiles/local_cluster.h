// The `local-cpu` cluster: this host described as a ClusterSpec from its CPU profile, so the
// simulator predicts the CPU executor with the code path it uses for GPUs. One "GPU" per core
// (peak = the best measured fp32 GEMM rate, memory bandwidth = one core's STREAM triad,
// memory = MemTotal / cores), one scale-up domain of all cores whose bandwidth is the best measured
// MPI bus bandwidth and whose per-step latency is fitted by `mplan calibrate`; one node.
#pragma once
#include <vector>

#include "core/cluster_spec.h"
#include "profiles/profile_db.h"

namespace mplan::profiles {

// Latencies start at the fastest small send/recv; calibrate replaces them with fitted values
// (set_fitted_latencies).
ClusterSpec local_cpu_cluster(const Device& cpu, const std::vector<CollectiveRow>& collectives);
void set_fitted_latencies(ClusterSpec& c, double scale_up_us, double scale_out_us);

}  // namespace mplan::profiles
