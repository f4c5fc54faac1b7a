// `mplan calibrate` orchestration (see calibrate.h).
#include "profiles/calibrate.h"

#include <algorithm>
#include <optional>

#include "core/presets.h"
#include "core/time_format.h"
#include "profiles/local_cluster.h"
#include "profiles/shipped.h"

namespace mplan::profiles {

using nlohmann::json;

std::string cluster_for_gpu_name(const std::string& n) {
  auto has = [&](const char* s) { return n.find(s) != std::string::npos; };
  if (has("GB300")) return "gb300-nvl72";
  if (has("GB200")) return "gb200-nvl72";
  if (has("B300")) return "dgx-b300";
  if (has("B200")) return "dgx-b200";
  if (has("H200")) return "dgx-h200";
  if (has("H100") || has("H800")) return "dgx-h100";
  if (has("A100") && has("80")) return "dgx-a100-80g";
  if (has("A100")) return "dgx-a100-40g";
  return "";
}

Expected<Device> select_device(const ProfileDb& db, const std::string& which) {
  auto devs = db.devices();
  if (!devs) return devs.error();
  if (devs->empty()) return Error(db.path() + ": holds no device; run `mplan profile --db " + db.path() + "` first");
  auto ks = db.kernels(0);
  auto cs = db.collectives(0);
  if (!ks) return ks.error();
  if (!cs) return cs.error();
  auto rows_of = [&](int64_t id) {
    int n = 0;
    for (const auto& r : *ks) n += r.device_id == id;
    for (const auto& r : *cs) n += r.device_id == id;
    return n;
  };
  std::string list;
  for (const auto& d : *devs)
    list += "\n  " + std::to_string(d.id) + ": " + d.name + " (" + d.created_at + ", " + std::to_string(rows_of(d.id)) + " rows)";
  if (which.empty()) {
    for (auto it = devs->rbegin(); it != devs->rend(); ++it)
      if (rows_of(it->id) > 0) return *it;
    return devs->back();  // no device has rows: its calibration is the documented defaults
  }
  bool numeric = std::all_of(which.begin(), which.end(), ::isdigit);
  std::vector<Device> hits;
  for (const auto& d : *devs)
    if ((numeric && std::to_string(d.id) == which) || (!numeric && d.name.find(which) != std::string::npos)) hits.push_back(d);
  if (hits.empty()) return Error("--device " + which + ": no such device in " + db.path() + "; devices:" + list);
  if (hits.size() > 1 && !numeric) return Error("--device " + which + " matches several devices; give its id:" + list);
  return hits.front();
}

Expected<CalibrateResult> calibrate(const CalibrateOptions& o) {
  std::optional<ProfileDb> db;
  if (!o.shipped.empty()) {
    auto sql = shipped_profile_sql(o.shipped);
    if (!sql) return sql.error();
    auto d = load_profile_sql(*sql, "profiles/data/" + o.shipped + ".sql");
    if (!d) return d.error();
    db.emplace(std::move(d).value());
  } else {
    auto d = ProfileDb::open(o.db);
    if (!d) return d.error();
    db.emplace(std::move(d).value());
  }
  auto dev = select_device(*db, o.device);
  if (!dev) return dev.error();
  auto ks = db->kernels(dev->id);
  if (!ks) return ks.error();
  auto cs = db->collectives(dev->id);
  if (!cs) return cs.error();

  CalibrateResult res;
  res.device = *dev;
  res.kernel_rows = int(ks->size());
  res.collective_rows = int(cs->size());
  ClusterSpec cluster;
  const bool cpu = dev->kind == "cpu";
  if (!o.cluster.empty() || !cpu) {
    std::string name = o.cluster.empty() ? dev->cluster : o.cluster;
    if (name.empty())
      return Error("device " + std::to_string(dev->id) + " (" + dev->name +
                   ") names no cluster its collectives ran on; give --cluster NAME|FILE");
    auto c = resolve_cluster(name);
    if (!c) return c.error();
    cluster = *c;
  } else {
    cluster = local_cpu_cluster(*dev, *cs);
  }
  if (cpu && o.cluster.empty()) {
    // the CPU device row is the source of truth for its own peak and bandwidth
    cluster.gpu.peak_tflops.clear();
    for (const auto& [p, v] : dev->peak_tflops)
      if (auto pr = parse_precision(p)) cluster.gpu.peak_tflops[*pr] = v;
  }
  if (cluster.gpu.peak_tflops.empty()) return Error("device " + dev->name + " has no peak TFLOP/s; its profile is incomplete");

  CostParams base = o.base ? *o.base : default_cost_params(cluster);
  Expected<FitResult> fit = FitResult{};
  if (ks->empty() && cs->empty()) {
    // nothing measured or published for this device: the documented defaults, said so
    FitResult none;
    none.params = base;
    none.cluster = cluster;
    for (const char* c : {"memory", "gemm", "attention", "collectives"})
      none.classes.push_back({c, {}, {}, "no rows: documented defaults (simulator/cost_params.cpp)"});
    fit = none;
  } else {
    fit = fit_rows(*ks, *cs, cluster, base);
  }
  if (!fit) return fit.error();
  res.fit = *fit;
  res.cluster = fit->cluster;
  if (cpu && o.cluster.empty())
    set_fitted_latencies(res.cluster, fit->cluster.scale_up_latency_us, fit->cluster.scale_up_latency_us);

  res.calibration.gpu = cluster.gpu.name;
  res.calibration.arch = cluster.gpu.arch;
  res.calibration.params = fit->params;
  json fj = fit->to_json();
  fj["date"] = utc_now_iso();
  fj["tool"] = "mplan calibrate";
  fj["profile"] = o.shipped.empty() ? o.db : "shipped:" + o.shipped;
  fj["device"] = {
      {"id", dev->id},        {"name", dev->name}, {"kind", dev->kind}, {"host", dev->host}, {"created_at", dev->created_at},
      {"source", dev->source}};
  fj["cluster"] = res.cluster.name;
  fj["not_fitted"] =
      "gemm_tile_m, gemm_tile_n, overlap_slowdown, optimizer_overhead_s, allocator_overhead_frac, "
      "reserved_gib, comm_buffer_bytes keep the documented defaults (simulator/cost_params.cpp); they "
      "need end-to-end runs (--runs)";
  res.calibration.fit = fj;

  if (o.store && o.shipped.empty()) {
    CalibrationRecord rec;
    rec.device_id = dev->id;
    rec.params = calibration_to_json(res.calibration);
    rec.fit = fj;
    rec.rows_used = {{"kernels", fit->kernel_ids}, {"collectives", fit->collective_ids}};
    auto id = db->add_calibration(rec);
    if (!id) return id.error();
  }
  return res;
}

}  // namespace mplan::profiles
