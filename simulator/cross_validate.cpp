// Cross-validation of the cost model (see cross_validate.h).
#include "simulator/cross_validate.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/framework.h"
#include "core/hash.h"
#include "core/stats.h"
#include "simulator/model_families.h"
#include "simulator/simulator.h"

namespace mplan {

std::string run_group_key(const CsvRow& r) {
  std::string k;
  for (const char* c : {"model", "gpu_type", "num_gpus", "tp", "pp", "cp", "ep", "precision"}) k += r.get(c) + "|";
  return k;
}

std::pair<double, double> residual_quantiles(std::vector<double> v, double level) {
  if (v.empty()) return {0, 0};
  std::sort(v.begin(), v.end());
  return {stats::quantile_sorted(v, level), stats::quantile_sorted(v, 1.0 - level)};
}

namespace {

struct Prepared {
  std::vector<MeasuredRun> runs;
  std::vector<CvRow> rows;
};

Prepared prepare(const std::vector<CsvRow>& csv) {
  Prepared p;
  std::vector<MeasuredRun> all = measured_runs_from_rows(csv);
  std::map<std::string, const CsvRow*> by_id;
  for (const CsvRow& r : csv) by_id[r.get("row_id")] = &r;
  for (const MeasuredRun& m : all) {
    const CsvRow& r = *by_id.at(m.id);
    auto run = published_run_from_row(r);
    CvRow row;
    row.row_id = m.id;
    row.source = r.get("source_id");
    row.framework = to_string(m.plan.training.framework);
    row.group = run_group_key(r);
    row.model = r.get("model");
    row.model_family = model_family(row.model).value_or("");
    row.gpu = r.get("gpu_type");
    if (run) row.families = run->families;
    row.interval_family = m.plan.model.moe ? "moe" : "dense";
    row.measured = m.tokens_per_s_per_gpu;
    p.runs.push_back(m);
    p.rows.push_back(row);
  }
  return p;
}

// Predicted tokens/s of every run under `cal` (0 = failed), and the failures.
std::vector<double> predict(const std::vector<MeasuredRun>& runs, const Calibration& cal, std::vector<std::string>* failed) {
  std::vector<double> out(runs.size(), 0.0);
  for (size_t i = 0; i < runs.size(); ++i) {
    auto r = simulate(runs[i].plan, cal.params_for(runs[i].plan.cluster.gpu));
    if (r && r->tokens_per_s_per_gpu > 0 && std::isfinite(r->tokens_per_s_per_gpu))
      out[i] = r->tokens_per_s_per_gpu;
    else if (failed)
      failed->push_back(runs[i].id + ": " + (r ? "no throughput" : r.error().problems.front()));
  }
  return out;
}

// Parameters that no training row depends on (perturbing them leaves the training loss unchanged) would
// keep the value of `start` — a calibration fitted to every row, the held-out ones included. They fall
// back to their prior (the uncalibrated default of CostParams) so that nothing of a held-out fold leaks
// into its prediction.
std::vector<std::string> reset_unidentified(const std::vector<MeasuredRun>& train, Calibration& cal,
                                            const std::vector<FitParamSpec>& which, int threads) {
  std::vector<std::string> reset;
  const double base = fit_loss(train, cal, threads).loss;
  Calibration prior;
  for (const FitParamSpec& spec : which) {
    Calibration probe = cal;
    double* v = calibration_param(probe, spec.name);
    if (!v) continue;
    const double was = *v;
    *v = std::clamp(was * 1.3 > spec.hi ? was / 1.3 : was * 1.3 + (was == 0 ? 0.1 * spec.hi : 0), spec.lo, spec.hi);
    if (*v == was) continue;
    if (std::fabs(fit_loss(train, probe, threads).loss - base) > 1e-12) continue;
    if (double* p = calibration_param(prior, spec.name)) {
      *calibration_param(cal, spec.name) = std::clamp(*p, spec.lo, spec.hi);
      reset.push_back(spec.name);
    }
  }
  return reset;
}

double ape(double pred, double meas) { return pred > 0 ? std::fabs(pred / meas - 1.0) * 100.0 : kFailedRowApePct; }

void add_stats(CvStats& s, const std::vector<const CvRow*>& rows) {
  std::vector<double> a, b;
  for (const CvRow* r : rows) {
    a.push_back(ape(r->in_sample, r->measured));
    b.push_back(ape(r->held_out, r->measured));
  }
  s.in_sample = error_stats(a);
  s.held_out = error_stats(b);
}

// Folds: each a set of row indices held out, with a description.
std::vector<std::pair<std::string, std::vector<size_t>>> make_folds(const std::vector<CvRow>& rows, const CvOptions& opt) {
  std::map<std::string, std::vector<size_t>> by;
  std::map<std::string, int> family_rows;
  for (const CvRow& r : rows) ++family_rows[r.model_family];
  for (size_t i = 0; i < rows.size(); ++i) {
    std::string key;
    if (opt.mode == CvMode::source)
      key = rows[i].source;
    else if (opt.mode == CvMode::model)
      key = family_fold(rows[i].model_family, family_rows[rows[i].model_family]);
    else
      key = "fold " + std::to_string(fnv1a(rows[i].group) % uint64_t(std::max(2, opt.folds)) + 1);
    by[key].push_back(i);
  }
  return {by.begin(), by.end()};
}

}  // namespace

std::string model_cv_problem(const std::vector<CsvRow>& csv) {
  std::set<std::string> missing, families;
  std::map<std::string, std::string> model_of;
  for (const CsvRow& r : csv) model_of[r.get("row_id")] = r.get("model");
  for (const MeasuredRun& m : measured_runs_from_rows(csv)) {
    const std::string& name = model_of[m.id];
    if (auto f = model_family(name))
      families.insert(*f);
    else
      missing.insert(name);
  }
  if (!missing.empty()) {
    std::string names;
    for (const auto& n : missing) names += (names.empty() ? "\"" : ", \"") + n + "\"";
    return "model(s) " + names + " are not in the model-family table (data/model_families.csv): add each as " +
           "`model,family,note` and rebuild, or use --cv source|group";
  }
  if (families.size() < 2)
    return "leaving one model family out needs rows of at least two model families; the clean rows are all of " +
           (families.empty() ? std::string("no family") : "family \"" + *families.begin() + "\"") + ": use --cv source|group";
  return "";
}

CvReport cross_validate(const std::vector<CsvRow>& csv, const Calibration& start, const std::vector<FitParamSpec>& which,
                        const CvOptions& opt, const std::function<void(const std::string&)>& progress) {
  CvReport rep;
  Prepared p = prepare(csv);
  const size_t n = p.rows.size();
  // in-sample: one fit on every row
  if (progress) progress("in-sample fit on " + std::to_string(n) + " rows");
  FitResult all = fit_cost_params(p.runs, start, which, opt.rounds, {}, opt.max_evals, opt.threads);
  rep.in_sample_calibration = all.calibration;
  std::vector<double> ins = predict(p.runs, all.calibration, &rep.failures);
  for (size_t i = 0; i < n; ++i) p.rows[i].in_sample = ins[i];
  // held out: refit without each fold
  auto folds = make_folds(p.rows, opt);
  std::vector<std::string> fold_of(n);
  for (const auto& [name, idx] : folds) {
    if (progress) progress("fold '" + name + "': " + std::to_string(idx.size()) + " rows held out");
    std::set<size_t> out(idx.begin(), idx.end());
    std::vector<MeasuredRun> train, test;
    for (size_t i = 0; i < n; ++i) (out.count(i) ? test : train).push_back(p.runs[i]);
    Calibration fold_start = start;
    std::vector<std::string> reset = reset_unidentified(fitted_runs(train), fold_start, which, opt.threads);
    if (!reset.empty()) rep.reset_to_prior[name] = reset;
    // and stay there: the loss is flat along them, so a simplex search would let them drift anywhere
    std::vector<FitParamSpec> fold_which;
    for (const FitParamSpec& spec : which)
      if (std::find(reset.begin(), reset.end(), spec.name) == reset.end()) fold_which.push_back(spec);
    FitResult fr = fit_cost_params(train, fold_start, fold_which, opt.rounds, {}, opt.max_evals, opt.threads);
    std::vector<double> pred = predict(test, fr.calibration, &rep.failures);
    for (size_t k = 0; k < idx.size(); ++k) {
      p.rows[idx[k]].held_out = pred[k];
      p.rows[idx[k]].fold = name;
    }
    rep.folds.push_back(name + " (" + std::to_string(idx.size()) + " rows)");
  }
  // Prediction intervals from the held-out residuals ln(measured / held-out prediction), per interval
  // family. Coverage is measured out of fold: the interval for a fold's rows is built from the other
  // folds' residuals only. Held-out sources differ from each other more than rows within a source, so
  // the 10th/90th percentiles of pooled residuals cover less than 80 % of a new source; the quantile
  // level is therefore widened in steps of 0.5 % until the out-of-fold coverage reaches 80 % (split
  // conformal calibration), and that level is used for the shipped interval.
  std::map<std::string, std::vector<double>> resid;
  for (const CvRow& r : p.rows)
    if (r.held_out > 0) resid[r.interval_family].push_back(std::log(r.measured / r.held_out));
  auto coverage_at = [&](double level, int* rows) {
    int inside = 0, counted = 0;
    for (const auto& [name, idx] : folds) {
      std::map<std::string, std::vector<double>> other;
      for (const CvRow& r : p.rows)
        if (r.fold != name && r.held_out > 0) other[r.interval_family].push_back(std::log(r.measured / r.held_out));
      for (size_t i : idx) {
        const CvRow& r = p.rows[i];
        if (r.held_out <= 0 || other[r.interval_family].size() < 5) continue;
        auto [lo, hi] = residual_quantiles(other[r.interval_family], level);
        double e = std::log(r.measured / r.held_out);
        inside += e >= lo && e <= hi ? 1 : 0;
        ++counted;
      }
    }
    *rows = counted;
    return counted > 0 ? double(inside) / counted : 0.0;
  };
  rep.coverage_nominal = coverage_at(0.10, &rep.coverage_rows);
  double level = 0.10;
  rep.coverage = rep.coverage_nominal;
  while (rep.coverage < kIntervalTarget && level > 0.005 + 1e-12) {
    level -= 0.005;
    rep.coverage = coverage_at(level, &rep.coverage_rows);
  }
  rep.interval_level = level;
  rep.intervals = nlohmann::json::object();
  for (const auto& [fam, v] : resid) {
    auto [lo, hi] = residual_quantiles(v, level);
    rep.intervals[fam] = {{"lo", lo}, {"hi", hi}, {"level", level}, {"target", kIntervalTarget}, {"n", v.size()}};
  }
  rep.in_sample_calibration.intervals = rep.intervals;
  // statistics; the rows that state a measured run mplan cannot build are charged in every set they
  // belong to (held out and in sample: 10x off), not dropped
  rep.rows = p.rows;
  for (const UnbuiltRow& u : unbuilt_rows(csv)) {
    CvRow row;
    row.row_id = u.row->get("row_id");
    row.source = u.row->get("source_id");
    auto fw = framework_from_text(u.row->get("framework"));
    row.framework = fw ? to_string(*fw) : u.row->get("framework");
    row.group = run_group_key(*u.row);
    row.model = u.row->get("model");
    row.model_family = model_family(row.model).value_or("");
    row.gpu = u.row->get("gpu_type");
    row.measured = 1;  // any: a zero prediction is charged kFailedRowApePct
    row.fold = "not built";
    rep.rows.push_back(row);
    rep.failures.push_back(row.row_id + ": " + u.reason);
  }
  std::vector<const CvRow*> everyone;
  std::map<std::string, std::vector<const CvRow*>> fam, src, fw, mf;
  for (const CvRow& r : rep.rows) {
    everyone.push_back(&r);
    for (const auto& f : r.families) fam[f].push_back(&r);
    src[r.source].push_back(&r);
    fw[r.framework].push_back(&r);
    if (!r.model_family.empty()) mf[r.model_family].push_back(&r);
  }
  add_stats(rep.overall, everyone);
  for (auto& [k, v] : fam) add_stats(rep.by_family[k], v);
  for (auto& [k, v] : src) add_stats(rep.by_source[k], v);
  for (auto& [k, v] : fw) add_stats(rep.by_framework[k], v);
  for (auto& [k, v] : mf) add_stats(rep.by_model_family[k], v);
  std::sort(rep.failures.begin(), rep.failures.end());
  rep.failures.erase(std::unique(rep.failures.begin(), rep.failures.end()), rep.failures.end());
  return rep;
}

}  // namespace mplan
