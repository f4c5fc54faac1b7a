// JSON of runs (summary, steps, ops) and of regression reports.
#include "runs/run_json.h"

namespace mplan::runs {

using nlohmann::json;

namespace {

json opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
// Summary figures where 0 means "none" (no memory report, no prediction) are written as null.
json positive_or_null(double v) { return v > 0 ? json(v) : json(nullptr); }

}  // namespace

json summary_to_json(const RunSummary& s) {
  return {{"steps_total", s.steps_total},
          {"steps_measured", s.steps_measured},
          {"step_time_s", s.step_time_s},
          {"tokens_per_s", s.tokens_per_s},
          {"tflops_per_gpu", s.tflops_per_gpu},
          {"mfu", s.mfu},
          {"mfu_spread", s.mfu_spread},
          {"peak_memory_gib", positive_or_null(s.peak_memory_gib)},
          {"predicted_mfu", positive_or_null(s.predicted_mfu)}};
}

json run_to_json(const RunRecord& r, bool with_details, bool with_plan) {
  json j = {{"id", r.id},
            {"plan_key", r.plan_key},
            {"plan_label", plan_label(r.plan)},
            {"source", r.source},
            {"source_file", r.source_file},
            {"source_job", r.source_job > 0 ? json(r.source_job) : json(nullptr)},
            {"host", r.host},
            {"software", r.software},
            {"git_commit", r.git_commit},
            {"started_at", r.started_at},
            {"status", r.status},
            {"tags", r.tags},
            {"warnings", r.warnings},
            {"summary", summary_to_json(r.summary)}};
  if (with_plan) j["plan"] = r.plan;
  if (with_details) {
    j["prediction"] = r.prediction;
    json steps = json::array();
    for (const auto& m : r.steps)
      steps.push_back({{"step", m.step},
                       {"loss", opt(m.loss)},
                       {"step_time_s", m.step_time_s},
                       {"tokens_per_s", m.tokens_per_s},
                       {"tflops_per_gpu", m.tflops_per_gpu},
                       {"mfu", m.mfu},
                       {"peak_memory_gib", opt(m.peak_memory_gib)},
                       {"warmup", m.warmup},
                       {"skipped", m.skipped},
                       {"reported_tflops_per_gpu", opt(m.reported_tflops_per_gpu)},
                       {"reported_tokens_per_s_per_gpu", opt(m.reported_tokens_per_s_per_gpu)}});
    j["steps"] = steps;
    json ops = json::array();
    for (const auto& o : r.ops)
      ops.push_back({{"op", o.op}, {"measured_s", o.measured_s}, {"predicted_s", o.predicted_s}, {"calls", o.calls}});
    j["ops"] = ops;
  }
  return j;
}

json regress_to_json(const RegressReport& rep) {
  json plans = json::array();
  for (const auto& p : rep.plans) {
    json hist = json::array();
    for (const auto& h : p.history)
      hist.push_back({{"run_id", h.run_id}, {"started_at", h.started_at}, {"mfu", h.mfu}, {"predicted_mfu", h.predicted_mfu}});
    plans.push_back({{"plan_key", p.plan_key},
                     {"plan_label", p.label},
                     {"status", p.status},
                     {"explanation", p.explanation},
                     {"latest_run", p.latest_id},
                     {"latest_started_at", p.latest_at},
                     {"latest_mfu", p.latest_mfu},
                     {"baseline_runs", p.baseline_ids},
                     {"baseline_mfu", p.baseline_mfu},
                     {"change_pct", p.change_pct},
                     {"noise_mfu", p.noise_mfu},
                     {"noise_pct", p.noise_pct},
                     {"noise_basis", p.noise_basis},
                     {"run_to_run_sigma_mfu", p.run_sigma_known ? json(p.run_sigma_mfu) : json(nullptr)},
                     {"level_shifts", p.level_shifts},
                     {"predicted_mfu", p.predicted_mfu},
                     {"vs_prediction_pct", p.vs_prediction_pct},
                     {"history", hist}});
  }
  return {{"baseline", rep.baseline}, {"threshold_pct", rep.threshold_pct}, {"regressions", rep.regressions()}, {"plans", plans}};
}

}  // namespace mplan::runs
