// local-cpu cluster from a CPU profile (see local_cluster.h).
#include "profiles/local_cluster.h"

#include <algorithm>
#include <sstream>

namespace mplan::profiles {

namespace {
std::string num(double v, int prec = 4) {
  std::ostringstream o;
  o.precision(prec);
  o << v;
  return o.str();
}
}  // namespace

ClusterSpec local_cpu_cluster(const Device& d, const std::vector<CollectiveRow>& rows) {
  const std::string measured = "measured on " + (d.host.empty() ? std::string("this host") : d.host) + " " +
                               d.created_at.substr(0, 10) + " by mplan profile --backend cpu (device " + std::to_string(d.id) +
                               ")";
  ClusterSpec c;
  c.name = "local-cpu";
  c.gpu.name = d.name;
  c.gpu.arch = "cpu";
  auto pk = d.peak_tflops.find("fp32");
  c.gpu.peak_tflops[Precision::fp32] = pk != d.peak_tflops.end() && pk->second > 0 ? pk->second : 1e-3;
  c.gpu.memory_gib = d.memory_gib > 0 ? d.memory_gib : 1;
  c.gpu.hbm_gbps = d.hbm_gbps > 0 ? d.hbm_gbps : 1;
  c.gpu.sm_count = 1;
  int cores = d.libraries.contains("cores") && d.libraries["cores"].is_number_integer() ? d.libraries["cores"].get<int>() : 1;
  double best_bus = 0, best_small = 0;
  int largest_group = 1;
  for (const auto& r : rows) {
    best_bus = std::max(best_bus, r.busbw_gbps);
    largest_group = std::max(largest_group, r.group_size);
    if (r.op == "send_recv" && (best_small == 0 || r.median_us < best_small)) best_small = r.median_us;
  }
  cores = std::max(cores, largest_group);
  c.gpus_per_node = cores;
  c.nvlink_domain_size = cores;
  c.num_nodes = 1;
  c.nvls = false;
  c.sources["gpu.peak_tflops.fp32"] = measured + ": best cblas_sgemm rate of the GEMM grid, one core, one BLAS thread (" +
                                      num(c.gpu.peak_tflops[Precision::fp32] * 1000) + " GFLOP/s)";
  c.sources["gpu.memory_gib"] = measured + ": MemTotal / usable cores";
  c.sources["gpu.hbm_gbps"] = measured + ": STREAM triad bandwidth of one core";
  c.sources["gpu.sm_count"] = "one core is one execution unit (no wave quantisation)";
  c.sources["gpus_per_node"] = measured + ": usable cores (sched_getaffinity), one rank per core";
  c.sources["nvlink_domain_size"] = "all cores of the host share memory: one scale-up domain";
  c.sources["num_nodes"] = "one host";
  if (best_bus > 0) {
    c.scale_up_bw_gbps = best_bus;
    c.sources["scale_up_bw_gbps"] =
        measured + ": best MPI bus bandwidth over all collectives and sizes (" + num(best_bus) + " GB/s)";
  } else {
    c.scale_up_bw_gbps = std::max(0.1, c.gpu.hbm_gbps / 2);
    c.sources["scale_up_bw_gbps"] = "no collectives measured: half the measured memory bandwidth (a copy reads and writes)";
  }
  double lat = best_small > 0 ? best_small : 1.0;
  c.scale_up_latency_us = lat;
  c.sources["scale_up_latency_us"] =
      best_small > 0 ? measured + ": smallest send/recv time (before calibration)" : "no collectives measured: 1 us placeholder";
  c.scale_out_bw_gbps = c.scale_up_bw_gbps;
  c.scale_out_latency_us = lat;
  c.sources["scale_out_bw_gbps"] = "one host, no scale-out network: equal to the scale-up bandwidth";
  c.sources["scale_out_latency_us"] = "one host, no scale-out network: equal to the scale-up latency";
  return c;
}

void set_fitted_latencies(ClusterSpec& c, double up, double out) {
  c.scale_up_latency_us = up;
  c.scale_out_latency_us = out;
  c.sources["scale_up_latency_us"] = "fitted by mplan calibrate to the measured MPI collectives (per ring step)";
  c.sources["scale_out_latency_us"] = "one host, no scale-out network: the fitted scale-up latency";
}

}  // namespace mplan::profiles
