// ClusterSpec JSON reading/writing, validation and the source check of presets.
#include "core/cluster_spec.h"

#include "core/json_fields.h"
#include "core/limits.h"

namespace mplan {

using nlohmann::json;

std::optional<double> GpuSpec::peak(Precision p) const {
  auto it = peak_tflops.find(p);
  if (it == peak_tflops.end()) return std::nullopt;
  return it->second;
}

Expected<ClusterSpec> cluster_from_json(const json& j) {
  std::vector<std::string> problems;
  JsonFields f(j, "cluster", problems);
  if (!problems.empty()) return Error(problems);
  f.reject_unknown({"name", "gpu", "gpus_per_node", "nvlink_domain_size", "scale_up_bw_gbps", "scale_up_latency_us",
                    "scale_out_bw_gbps", "scale_out_latency_us", "nvls", "num_nodes", "ranks_per_nvlink_domain", "sources",
                    "notes"});
  ClusterSpec c;
  c.name = f.opt_string("name").value_or("custom");
  c.gpus_per_node = static_cast<int>(f.integer("gpus_per_node", 1, kMaxGpus));
  c.nvlink_domain_size = static_cast<int>(f.integer_or("nvlink_domain_size", c.gpus_per_node, 1, kMaxGpus));
  c.scale_up_bw_gbps = f.number("scale_up_bw_gbps", false, kMaxBandwidthGbps);
  c.scale_up_latency_us = f.number("scale_up_latency_us", true, kMaxLatencyUs);
  c.scale_out_bw_gbps = f.number("scale_out_bw_gbps", false, kMaxBandwidthGbps);
  c.scale_out_latency_us = f.number("scale_out_latency_us", true, kMaxLatencyUs);
  c.nvls = f.boolean_or("nvls", false);
  c.ranks_per_nvlink_domain = static_cast<int>(f.integer_or("ranks_per_nvlink_domain", 0, 0, kMaxGpus));
  c.num_nodes = static_cast<int>(f.integer("num_nodes", 1, kMaxNodes));
  const json* g = f.object("gpu");
  if (!g) {
    if (!f.has("gpu")) f.problem("gpu", "missing; expected an object with name, peak_tflops, memory_gib, hbm_gbps, sm_count");
  } else {
    JsonFields gf(*g, "cluster.gpu", problems);
    gf.reject_unknown({"name", "arch", "peak_tflops", "memory_gib", "hbm_gbps", "sm_count", "host_link_gbps"});
    c.gpu.name = gf.string("name");
    c.gpu.arch = gf.opt_string("arch").value_or("");
    c.gpu.memory_gib = gf.number("memory_gib", false, kMaxMemoryGib);
    c.gpu.hbm_gbps = gf.number("hbm_gbps", false, kMaxBandwidthGbps);
    c.gpu.sm_count = static_cast<int>(gf.integer("sm_count", 1, kMaxSms));
    c.gpu.host_link_gbps = gf.opt_number("host_link_gbps", true, kMaxBandwidthGbps).value_or(0);
    const json* pk = gf.object("peak_tflops");
    if (!pk) {
      if (!gf.has("peak_tflops")) gf.problem("peak_tflops", "missing; expected e.g. {\"bf16\": 989.4, \"fp8\": 1978.9}");
    } else {
      JsonFields pf(*pk, "cluster.gpu.peak_tflops", problems);
      std::vector<std::string> names;
      names.reserve(kAllPrecisions.size());
      for (Precision p : kAllPrecisions) names.emplace_back(to_string(p));
      pf.reject_unknown(names);
      for (Precision p : kAllPrecisions) {
        std::string key(to_string(p));
        if (auto v = pf.opt_number(key.c_str(), false, kMaxPeakTflops)) c.gpu.peak_tflops[p] = *v;
      }
      if (pk->empty()) pf.problem("bf16", "no peak given; at least one precision's dense TFLOP/s is required");
    }
  }
  if (const json* s = f.object("sources")) {
    for (auto it = s->begin(); it != s->end(); ++it) {
      if (!it.value().is_string() || it.value().get<std::string>().empty())
        problems.push_back("cluster.sources." + it.key() + ": expected a non-empty string naming the source");
      else
        c.sources[it.key()] = it.value().get<std::string>();
    }
  }
  if (!problems.empty()) return Error(problems);
  auto v = validate_cluster(c);
  if (!v.empty()) return Error(v);
  return c;
}

json cluster_to_json(const ClusterSpec& c) {
  json peaks = json::object();
  for (const auto& [p, v] : c.gpu.peak_tflops) peaks[std::string(to_string(p))] = v;
  json j = {{"name", c.name},
            {"gpu",
             {{"name", c.gpu.name},
              {"arch", c.gpu.arch},
              {"peak_tflops", peaks},
              {"memory_gib", c.gpu.memory_gib},
              {"hbm_gbps", c.gpu.hbm_gbps},
              {"sm_count", c.gpu.sm_count}}},
            {"gpus_per_node", c.gpus_per_node},
            {"nvlink_domain_size", c.nvlink_domain_size},
            {"scale_up_bw_gbps", c.scale_up_bw_gbps},
            {"scale_up_latency_us", c.scale_up_latency_us},
            {"scale_out_bw_gbps", c.scale_out_bw_gbps},
            {"scale_out_latency_us", c.scale_out_latency_us},
            {"nvls", c.nvls},
            {"num_nodes", c.num_nodes}};
  if (c.ranks_per_nvlink_domain > 0) j["ranks_per_nvlink_domain"] = c.ranks_per_nvlink_domain;
  if (c.gpu.host_link_gbps > 0) j["gpu"]["host_link_gbps"] = c.gpu.host_link_gbps;
  if (!c.sources.empty()) j["sources"] = c.sources;
  return j;
}

std::vector<std::string> validate_cluster(const ClusterSpec& c) {
  std::vector<std::string> p;
  if (c.gpus_per_node < 1) p.push_back("cluster.gpus_per_node: must be >= 1");
  if (c.nvlink_domain_size < 1) p.push_back("cluster.nvlink_domain_size: must be >= 1");
  if (c.nvlink_domain_size >= 1 && c.gpus_per_node >= 1 && c.nvlink_domain_size % c.gpus_per_node != 0 &&
      c.gpus_per_node % c.nvlink_domain_size != 0)
    p.push_back("cluster.nvlink_domain_size: " + std::to_string(c.nvlink_domain_size) +
                " must be a multiple or a divisor of gpus_per_node=" + std::to_string(c.gpus_per_node));
  if (c.num_nodes < 1) p.push_back("cluster.num_nodes: must be >= 1");
  if (int64_t(c.num_nodes) * c.gpus_per_node > kMaxGpus)
    p.push_back("cluster: num_nodes x gpus_per_node = " + std::to_string(int64_t(c.num_nodes) * c.gpus_per_node) +
                " GPUs exceeds " + std::to_string(kMaxGpus) + "; describe the part of the cluster one job uses");
  if (c.ranks_per_nvlink_domain > c.nvlink_domain_size)
    p.push_back("cluster.ranks_per_nvlink_domain: " + std::to_string(c.ranks_per_nvlink_domain) +
                " exceeds nvlink_domain_size=" + std::to_string(c.nvlink_domain_size));
  if (c.gpu.memory_gib <= 0) p.push_back("cluster.gpu.memory_gib: must be > 0");
  if (c.gpu.sm_count < 1) p.push_back("cluster.gpu.sm_count: must be >= 1");
  return p;
}

std::vector<std::string> unsourced_cluster_fields(const ClusterSpec& c) {
  std::vector<std::string> fields = {"gpu.memory_gib",       "gpu.hbm_gbps",     "gpu.sm_count",        "gpus_per_node",
                                     "nvlink_domain_size",   "scale_up_bw_gbps", "scale_up_latency_us", "scale_out_bw_gbps",
                                     "scale_out_latency_us", "num_nodes"};
  if (c.ranks_per_nvlink_domain > 0) fields.push_back("ranks_per_nvlink_domain");
  if (c.gpu.host_link_gbps > 0) fields.push_back("gpu.host_link_gbps");
  for (const auto& [prec, v] : c.gpu.peak_tflops) fields.push_back("gpu.peak_tflops." + std::string(to_string(prec)));
  std::vector<std::string> missing;
  for (const auto& fld : fields)
    if (!c.sources.count(fld)) missing.push_back(fld);
  return missing;
}

}  // namespace mplan
