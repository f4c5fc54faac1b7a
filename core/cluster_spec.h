// ClusterSpec: GPU type (peaks per precision, memory, HBM, SMs) and the interconnect of a cluster.
// Every number of a preset carries a source, kept in `sources` keyed by the field's JSON path.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/precision.h"
#include "core/status.h"

namespace mplan {

struct GpuSpec {
  std::string name;
  std::string arch;  // architecture family (ampere, hopper, blackwell, cpu ...): calibrations differ per family
  std::map<Precision, double> peak_tflops;  // dense tensor-core peak per precision
  double memory_gib = 0;                    // usable HBM capacity
  double hbm_gbps = 0;                      // HBM bandwidth, GB/s
  int sm_count = 0;
  double host_link_gbps = 0;  // GPU <-> host memory per direction (PCIe, NVLink-C2C); 0 = unknown

  // Dense peak for training in `p`; nullopt when the GPU has no such mode.
  std::optional<double> peak(Precision p) const;
};

struct ClusterSpec {
  std::string name;
  GpuSpec gpu;
  int gpus_per_node = 8;
  int nvlink_domain_size = 8;  // GPUs sharing one NVLink (scale-up) domain
  // Consecutive ranks of a job placed in one NVLink domain (default: the whole domain). Rack-scale
  // domains are often filled with fewer GPUs than they hold (NVL72 racks run 64 of 72 for training).
  int ranks_per_nvlink_domain = 0;
  double scale_up_bw_gbps = 0;  // per GPU, per direction (NVLink)
  double scale_up_latency_us = 0;
  double scale_out_bw_gbps = 0;  // per GPU, per direction (InfiniBand / RoCE NIC)
  double scale_out_latency_us = 0;
  bool nvls = false;  // NVLink SHARP (in-switch reductions)
  int num_nodes = 1;
  std::map<std::string, std::string> sources;  // JSON path -> where the number comes from

  int max_gpus() const { return gpus_per_node * num_nodes; }
  int placement_domain() const { return ranks_per_nvlink_domain > 0 ? ranks_per_nvlink_domain : nvlink_domain_size; }
};

Expected<ClusterSpec> cluster_from_json(const nlohmann::json& j);
nlohmann::json cluster_to_json(const ClusterSpec& c);
std::vector<std::string> validate_cluster(const ClusterSpec& c);
// Numeric fields of the cluster that have no entry in `sources` (presets must have none).
std::vector<std::string> unsourced_cluster_fields(const ClusterSpec& c);

}  // namespace mplan
