// Validation runner (see validate.h).
#include "simulator/validate.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <utility>

#include "core/stats.h"

namespace mplan {

std::string dominant_memory_term(const MemoryBreakdown& m) {
  const std::pair<const char*, double> parts[] = {{"weights", m.weights},
                                                  {"gradients", m.gradients},
                                                  {"optimizer states", m.optimizer},
                                                  {"activations", m.activations},
                                                  {"communication buffers", m.comm_buffers},
                                                  {"other", m.other}};
  const auto* best = &parts[0];
  for (const auto& p : parts)
    if (p.second > best->second) best = &p;
  char b[96];
  std::snprintf(b, sizeof b, "%s %.1f GiB", best->first, best->second);
  return b;
}

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
  s.median = stats::quantile_sorted(v, 0.5);
  s.p90 = stats::quantile_sorted(v, 0.9);
  s.within10 = double(within) / v.size();
  return s;
}

namespace {

bool lower_eq(std::string s, const char* want) {
  for (auto& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return s == want;
}

void summarise(ValidationReport& rep) {
  std::vector<double> all;
  std::map<std::string, std::vector<double>> fam;
  int scored = 0;
  for (const auto& r : rep.rows) {
    if (r.skipped) {
      ++rep.skipped;
      continue;
    }
    if (r.failed) {  // charged, not dropped: 10x off, and not predicted to fit
      ++rep.failed;
      if (r.expect_oom) {  // an out-of-memory observation mplan cannot reproduce: not predicted
        ++rep.oom_rows;
        continue;
      }
      ++scored;
      all.push_back(kFailedRowApePct);
      for (const auto& f : r.families) fam[f].push_back(kFailedRowApePct);
      continue;
    }
    if (r.expect_oom) {
      ++rep.oom_rows;
      rep.oom_predicted += r.fits ? 0 : 1;
      continue;
    }
    ++scored;
    rep.fits_rows += r.fits ? 1 : 0;
    double a = std::fabs(r.error_pct);
    all.push_back(a);
    for (const auto& f : r.families) fam[f].push_back(a);
  }
  rep.overall = error_stats(all);
  for (auto& [f, v] : fam) rep.by_family[f] = error_stats(v);
  rep.fits_share = scored > 0 ? double(rep.fits_rows) / scored : 1.0;
}

void record_memory(ValidationRow& row, const StepReport& r) {
  row.peak_memory_gib = r.peak_memory_gib;
  row.capacity_gib = r.capacity_gib;
  row.fits = r.fits;
  row.dominant_memory = dominant_memory_term(r.memory);
}

// A complete row mplan cannot build or simulate: charged (see summarise), listed with the reason.
void mark_failed(ValidationRow& row, std::string reason) {
  row.failed = true;
  row.fits = false;
  row.reason = std::move(reason);
}

// Why a throughput row states nothing to score ("" when it does): no run (unstated_run) or no measurement.
std::string unscorable_throughput_row(const CsvRow& c, RowSettings settings) {
  std::string why = unstated_run(c, settings);
  if (why.empty() && !has_throughput_measurement(c))
    why = "no throughput measurement in the row (tokens_per_sec_per_gpu, step_time_s or tflops_per_gpu; not scored)";
  return why;
}

ValidationRow start_row(const CsvRow& c, const std::string& id_key) {
  ValidationRow row;
  row.row_id = c.get(id_key);
  row.model = c.get("model");
  row.gpu = c.get("gpu_type");
  return row;
}

}  // namespace

ValidationReport validate_throughput(const std::vector<CsvRow>& rows, const ParamsFor& params, RowSettings settings) {
  ValidationReport rep;
  for (const auto& c : rows) {
    ValidationRow row = start_row(c, "row_id");
    if (auto flag = doubtful_flag(c)) {
      row.skipped = true;
      row.reason = "flagged " + *flag;
      rep.rows.push_back(row);
      continue;
    }
    if (std::string why = unscorable_throughput_row(c, settings); !why.empty()) {
      row.skipped = true;
      row.reason = why;
      rep.rows.push_back(row);
      continue;
    }
    auto run = published_run_from_row(c, settings);
    if (!run) {
      mark_failed(row, run.error().problems.front());
      rep.rows.push_back(row);
      continue;
    }
    row.families = run->families;
    row.notes = run->notes;
    row.plan = run->plan;
    auto meas = measured_tokens_per_s_per_gpu(c, *run, &row.how);
    if (!meas) {
      row.skipped = true;
      row.reason = "no throughput measurement in the row (not scored)";
      rep.rows.push_back(row);
      continue;
    }
    row.measured = *meas;
    auto r = simulate(run->plan, params(run->plan));
    if (!r || !(r->tokens_per_s_per_gpu > 0) || !std::isfinite(r->tokens_per_s_per_gpu)) {
      mark_failed(row, r ? std::string("no throughput predicted") : r.error().problems.front());
      rep.rows.push_back(row);
      continue;
    }
    row.predicted = r->tokens_per_s_per_gpu;
    record_memory(row, *r);
    row.error_pct = (row.predicted - row.measured) / row.measured * 100.0;
    if (known_regression(c)) {
      row.skipped = true;
      row.reason = "flagged known_regression (the source documents a regression of this release): predicted " +
                   std::to_string(int(std::lround(row.predicted))) + " vs measured " +
                   std::to_string(int(std::lround(row.measured))) + " tokens/s/GPU, not scored";
    }
    rep.rows.push_back(row);
  }
  summarise(rep);
  return rep;
}

std::vector<UnbuiltRow> unbuilt_rows(const std::vector<CsvRow>& rows) {
  std::vector<UnbuiltRow> out;
  for (const auto& c : rows) {
    if (doubtful_flag(c) || known_regression(c) || !unscorable_throughput_row(c, RowSettings::with_run_facts).empty()) continue;
    auto run = published_run_from_row(c);
    if (!run) out.push_back({&c, run.error().problems.front()});
  }
  return out;
}

std::vector<MeasuredRun> measured_runs_from_rows(const std::vector<CsvRow>& rows) {
  std::vector<MeasuredRun> out;
  for (const auto& c : rows) {
    if (doubtful_flag(c) || known_regression(c)) continue;
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

ValidationReport validate_memory(const std::vector<CsvRow>& rows, const ParamsFor& params, RowSettings settings) {
  ValidationReport rep;
  for (const auto& c : rows) {
    ValidationRow row = start_row(c, "mem_row_id");
    auto total = c.num("mem_total_gib");
    row.expect_oom = lower_eq(c.get("oom"), "yes");
    if (auto flag = doubtful_flag(c)) {
      row.skipped = true;
      row.reason = "flagged " + *flag;
    } else if (!total && !row.expect_oom) {
      row.skipped = true;
      row.reason = "no mem_total_gib";
    }
    if (row.skipped) {
      rep.rows.push_back(row);
      continue;
    }
    CsvRow cr = c;
    cr.f["row_id"] = row.row_id;
    if (std::string why = unstated_run(cr, settings); !why.empty()) {
      row.skipped = true;
      row.reason = why;
      rep.rows.push_back(row);
      continue;
    }
    auto run = published_run_from_row(cr, settings);
    if (!run) {
      mark_failed(row, run.error().problems.front());
      rep.rows.push_back(row);
      continue;
    }
    row.families = run->families;
    row.notes = run->notes;
    row.plan = run->plan;
    auto r = simulate(run->plan, params(run->plan));
    if (!r) {
      mark_failed(row, r.error().problems.front());
      rep.rows.push_back(row);
      continue;
    }
    record_memory(row, *r);
    if (row.expect_oom) {
      // an out-of-memory observation: the prediction is right when the layout does not fit
      row.how = "out-of-memory observation";
      rep.rows.push_back(row);
      continue;
    }
    row.measured = *total;
    const MemoryBreakdown& b = r->memory;
    if (c.num("mem_weights_grads_optimizer_gib") && c.num("mem_activations_gib")) {
      // the source breaks memory into model states + activations (allocator profile): compare the
      // same two components, without the CUDA context and allocator overhead mplan adds on top
      row.predicted = b.weights + b.gradients + b.optimizer + b.activations;
      row.how = "model states + activations";
    } else if (framework_memory(run->plan.training.framework).reports_reserved) {
      // the framework prints the caching allocator's peak reserved bytes (no CUDA context, no NCCL)
      row.predicted = b.reserved();
      row.how = "peak reserved (allocator)";
    } else {
      row.predicted = r->peak_memory_gib;
      row.how = "peak device memory";
    }
    row.error_pct = (row.predicted - row.measured) / row.measured * 100.0;
    if (known_regression(c)) {
      row.skipped = true;
      row.reason = "flagged known_regression (the source documents a regression of this release): predicted " +
                   std::to_string(int(std::lround(row.predicted))) + " vs measured " +
                   std::to_string(int(std::lround(row.measured))) + " tokens/s/GPU, not scored";
    }
    rep.rows.push_back(row);
  }
  summarise(rep);
  return rep;
}

}  // namespace mplan
