// Validation runner (see validate.h).
#include "simulator/validate.h"

#include <algorithm>
#include <cmath>

namespace mplan {

ErrorStats error_stats(const std::vector<double>& e) {
  ErrorStats s;
  s.n = int(e.size());
  if (e.empty()) return s;
  std::vector<double> v = e;
  std::sort(v.begin(), v.end());
  double sum = 0;
  int within = 0;
  for (double x : v) {
    sum += x;
    within += x <= 10.0 ? 1 : 0;
  }
  s.mape = sum / v.size();
  s.median = v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  s.p90 = v[std::min(v.size() - 1, size_t(std::ceil(0.9 * v.size())) - 1)];
  s.within10 = double(within) / v.size();
  return s;
}

namespace {

void summarise(ValidationReport& rep) {
  std::vector<double> all;
  std::map<std::string, std::vector<double>> fam;
  for (const auto& r : rep.rows) {
    if (r.skipped) {
      ++rep.skipped;
      continue;
    }
    double a = std::fabs(r.error_pct);
    all.push_back(a);
    for (const auto& f : r.families) fam[f].push_back(a);
  }
  rep.overall = error_stats(all);
  for (auto& [f, v] : fam) rep.by_family[f] = error_stats(v);
}

ValidationRow start_row(const CsvRow& c, const std::string& id_key) {
  ValidationRow row;
  row.row_id = c.get(id_key);
  row.model = c.get("model");
  row.gpu = c.get("gpu_type");
  return row;
}

}  // namespace

ValidationReport validate_throughput(const std::vector<CsvRow>& rows, const ParamsFor& params) {
  ValidationReport rep;
  for (const auto& c : rows) {
    ValidationRow row = start_row(c, "row_id");
    if (auto flag = doubtful_flag(c)) {
      row.skipped = true;
      row.reason = "flagged " + *flag;
      rep.rows.push_back(row);
      continue;
    }
    auto run = published_run_from_row(c);
    if (!run) {
      row.skipped = true;
      row.reason = run.error().problems.front();
      rep.rows.push_back(row);
      continue;
    }
    row.families = run->families;
    row.notes = run->notes;
    row.plan = run->plan;
    auto meas = measured_tokens_per_s_per_gpu(c, *run, &row.how);
    if (!meas) {
      row.skipped = true;
      row.reason = "no throughput measurement in the row";
      rep.rows.push_back(row);
      continue;
    }
    auto r = simulate(run->plan, params(run->plan));
    if (!r) {
      row.skipped = true;
      row.reason = r.error().problems.front();
      rep.rows.push_back(row);
      continue;
    }
    row.measured = *meas;
    row.predicted = r->tokens_per_s_per_gpu;
    row.error_pct = (row.predicted - row.measured) / row.measured * 100.0;
    rep.rows.push_back(row);
  }
  summarise(rep);
  return rep;
}

std::vector<MeasuredRun> measured_runs_from_rows(const std::vector<CsvRow>& rows) {
  std::vector<MeasuredRun> out;
  for (const auto& c : rows) {
    if (doubtful_flag(c)) continue;
    auto run = published_run_from_row(c);
    if (!run) continue;
    auto meas = measured_tokens_per_s_per_gpu(c, *run, nullptr);
    if (!meas) continue;
    out.push_back({run->row_id, run->plan, *meas, 1.0});
  }
  // balance dense and MoE rows: each class carries half of the loss
  int moe = 0;
  for (const auto& r : out) moe += r.plan.model.moe ? 1 : 0;
  int dense = int(out.size()) - moe;
  for (auto& r : out) r.weight = (r.plan.model.moe ? 0.5 / std::max(1, moe) : 0.5 / std::max(1, dense)) * out.size();
  return out;
}

ValidationReport validate_memory(const std::vector<CsvRow>& rows, const ParamsFor& params) {
  ValidationReport rep;
  for (const auto& c : rows) {
    ValidationRow row = start_row(c, "mem_row_id");
    auto total = c.num("mem_total_gib");
    if (auto flag = doubtful_flag(c)) {
      row.skipped = true;
      row.reason = "flagged " + *flag;
    } else if (!total) {
      row.skipped = true;
      row.reason = "no mem_total_gib";
    }
    if (row.skipped) {
      rep.rows.push_back(row);
      continue;
    }
    CsvRow cr = c;
    cr.f["row_id"] = row.row_id;
    auto run = published_run_from_row(cr);
    if (!run) {
      row.skipped = true;
      row.reason = run.error().problems.front();
      rep.rows.push_back(row);
      continue;
    }
    row.families = run->families;
    row.notes = run->notes;
    row.plan = run->plan;
    auto r = simulate(run->plan, params(run->plan));
    if (!r) {
      row.skipped = true;
      row.reason = r.error().problems.front();
      rep.rows.push_back(row);
      continue;
    }
    row.how = c.get("mem_metric");
    row.measured = *total;
    row.predicted = r->peak_memory_gib;
    if (c.num("mem_weights_grads_optimizer_gib") && c.num("mem_activations_gib")) {
      // the source breaks memory into model states + activations (allocator profile): compare the
      // same two components, without the CUDA context and allocator overhead mplan adds on top
      const MemoryBreakdown& b = r->memory;
      row.predicted = b.weights + b.gradients + b.optimizer + b.activations;
      row.how = "model states + activations";
    }
    row.error_pct = (row.predicted - row.measured) / row.measured * 100.0;
    rep.rows.push_back(row);
  }
  summarise(rep);
  return rep;
}

}  // namespace mplan
