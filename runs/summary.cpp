// Run summary (medians over measured steps: neither warm-up nor skipped), plan keys and plan labels.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/hash.h"
#include "core/plan.h"
#include "core/stats.h"
#include "runs/runs_db.h"

namespace mplan::runs {

using stats::kMadToSigma;
using stats::mad;
using stats::median;

using nlohmann::json;

RunSummary summarize(const std::vector<StepMetric>& steps, const json& prediction) {
  RunSummary s;
  s.steps_total = static_cast<int>(steps.size());
  std::vector<double> t, tok, tf, mfu;
  for (const auto& m : steps) {
    if (m.peak_memory_gib) s.peak_memory_gib = std::max(s.peak_memory_gib, *m.peak_memory_gib);
    if (!m.measured()) continue;
    t.push_back(m.step_time_s);
    tok.push_back(m.tokens_per_s);
    tf.push_back(m.tflops_per_gpu);
    mfu.push_back(m.mfu);
  }
  s.steps_measured = static_cast<int>(t.size());
  s.step_time_s = median(t);
  s.tokens_per_s = median(tok);
  s.tflops_per_gpu = median(tf);
  s.mfu = median(mfu);
  s.mfu_spread = kMadToSigma * mad(mfu);
  if (prediction.is_object() && prediction.contains("mfu") && prediction["mfu"].is_number())
    s.predicted_mfu = prediction["mfu"].get<double>();
  return s;
}

namespace {

// Drops provenance fields that do not change what runs ("source", "sources", "notes", "meta").
void strip_provenance(json& j) {
  if (!j.is_object()) return;
  for (const char* k : {"source", "sources", "notes", "meta"}) j.erase(k);
  for (auto& [k, v] : j.items()) strip_provenance(v);
}

// The normalized plan (defaults filled in by the core parser when it parses), without meta.
json canonical_plan(const json& plan) {
  json canon = plan;
  if (auto p = plan_from_json(plan)) canon = plan_to_json(p.value());
  if (!canon.is_object()) return canon;
  json key = json::object();
  for (const char* part : {"model", "training", "parallel"})
    if (canon.contains(part)) key[part] = canon[part];
  if (canon.contains("cluster") && canon["cluster"].is_object()) {
    const json& c = canon["cluster"];
    json ck = json::object();
    if (c.contains("gpu") && c["gpu"].is_object() && c["gpu"].contains("name")) ck["gpu"] = c["gpu"]["name"];
    for (const char* f : {"gpus_per_node", "nvlink_domain_size"})
      if (c.contains(f)) ck[f] = c[f];
    key["cluster"] = ck;
  }
  strip_provenance(key);
  return key;
}

std::string str_at(const json& j, const char* a, const char* b = nullptr) {
  const json* p = &j;
  if (!p->is_object() || !p->contains(a)) return "";
  p = &(*p)[a];
  if (b) {
    if (!p->is_object() || !p->contains(b)) return "";
    p = &(*p)[b];
  }
  if (p->is_string()) return p->get<std::string>();
  if (p->is_number_integer()) return std::to_string(p->get<int64_t>());
  if (p->is_boolean()) return p->get<bool>() ? "true" : "false";
  return "";
}

}  // namespace

std::string plan_key(const json& plan) {
  json canon = canonical_plan(plan);
  std::string model = str_at(plan, "model", "name");
  if (model.empty()) model = "plan";
  std::string hex = fnv1a_hex(canon.dump(-1, ' ', false, json::error_handler_t::replace));
  return model + "-" + hex.substr(0, 12);
}

std::string plan_label(const json& plan) {
  std::string out = str_at(plan, "model", "name");
  if (out.empty()) out = "plan";
  std::string gpu;
  if (plan.contains("cluster") && plan["cluster"].is_object() && plan["cluster"].contains("gpu"))
    gpu = str_at(plan["cluster"], "gpu", "name");
  std::string world = str_at(plan, "parallel", "world_size");
  if (!gpu.empty()) out += " " + gpu;
  if (!world.empty()) out += " x" + world;
  auto add = [&](const char* label, const char* field, const char* skip = nullptr) {
    std::string v = str_at(plan, "parallel", field);
    if (v.empty() || (skip && v == skip)) return;
    out += std::string(" ") + label + v;
  };
  add("tp", "tp");
  add("pp", "pp");
  add("vpp", "vpp", "1");
  add("cp", "cp", "1");
  add("ep", "ep", "1");
  if (auto p = plan_from_json(plan)) out += " dp" + std::to_string(p.value().parallel.dp());
  add("mbs", "micro_batch_size");
  std::string gbs = str_at(plan, "training", "global_batch_size"), seq = str_at(plan, "training", "seq_length");
  if (!gbs.empty()) out += " gbs" + gbs;
  if (!seq.empty()) out += " seq" + seq;
  std::string prec = str_at(plan, "training", "precision");
  if (!prec.empty()) out += " " + prec;
  return out;
}

}  // namespace mplan::runs
