// `mplan validate --runs FILE.csv [--memory FILE.csv] [--calibration FILE] [--format table|json]`:
// scores the simulator against published runs (CSV columns of shared/calibration/) and prints the
// per-row error table, MAPE, median, p90, share within 10%, per family, and skipped rows with reasons.
// --export-plans DIR writes each scored row's plan (DIR/ROW.json) for `mplan simulate --plan`.
#include <cctype>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>

#include "cli/commands.h"
#include "cli/plan_args.h"
#include "cli/table.h"
#include "core/json_fields.h"
#include "core/plan.h"
#include "core/strict_json.h"
#include "simulator/cross_validate.h"
#include "simulator/validate.h"

namespace mplan::cli {

namespace {

struct ValidateOptions {
  std::string runs, memory, calibration, format = "table", fit_out, export_dir, cv;
  int fit_passes = 3, cv_folds = 5, cv_evals = 0;
  std::string fit_params;  // comma-separated subset of default_fit_params()
  bool show_skipped = true;
  bool force = false;
  bool as_stated = false;  // rows without their recipe facts (data/run_facts): as a user states the run
};

nlohmann::json stats_json(const ErrorStats& s) {
  return {{"n", s.n}, {"mape_pct", s.mape}, {"median_ape_pct", s.median}, {"p90_ape_pct", s.p90}, {"within_10pct", s.within10}};
}

nlohmann::json report_json(const ValidationReport& r) {
  nlohmann::json rows = nlohmann::json::array(), fam = nlohmann::json::object();
  for (const auto& x : r.rows) {
    nlohmann::json j = {{"row_id", x.row_id}, {"model", x.model}, {"gpu", x.gpu}, {"skipped", x.skipped}};
    if (x.failed) {  // charged as 10x off and as not fitting, listed with the reason
      j.update({{"failed", true}, {"reason", x.reason}, {"charged_ape_pct", kFailedRowApePct}, {"fits", false}});
      if (x.measured > 0) j["measured"] = x.measured;
      if (!x.families.empty()) j["families"] = x.families;
    } else if (x.skipped) {
      j["reason"] = x.reason;
      if (x.predicted > 0)  // a known regression: predicted and reported, not scored
        j.update({{"measured", x.measured}, {"predicted", x.predicted}, {"error_pct", x.error_pct}});
    } else if (x.expect_oom) {
      j.update({{"expect_oom", true},
                {"peak_memory_gib", x.peak_memory_gib},
                {"capacity_gib", x.capacity_gib},
                {"fits", x.fits},
                {"families", x.families},
                {"notes", x.notes}});
    } else {
      j.update({{"measured", x.measured},
                {"predicted", x.predicted},
                {"error_pct", x.error_pct},
                {"measured_from", x.how},
                {"families", x.families},
                {"notes", x.notes},
                {"peak_memory_gib", x.peak_memory_gib},
                {"capacity_gib", x.capacity_gib},
                {"fits", x.fits}});
      if (!x.fits) j["dominant_memory"] = x.dominant_memory;
    }
    rows.push_back(j);
  }
  for (const auto& [f, s] : r.by_family) fam[f] = stats_json(s);
  nlohmann::json overall = stats_json(r.overall);
  overall["fits_share"] = r.fits_share;
  overall["fits_rows"] = r.fits_rows;
  overall["failed_rows"] = r.failed;
  if (r.oom_rows > 0) {
    overall["oom_rows"] = r.oom_rows;
    overall["oom_predicted"] = r.oom_predicted;
  }
  return {{"rows", rows}, {"overall", overall}, {"by_family", fam}, {"skipped", r.skipped}, {"failed", r.failed}};
}

// One plan file per scored row, so a row's prediction can be inspected with `mplan simulate --plan`.
void export_plans(const ValidationReport& r, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError{"--export-plans: cannot create directory '" + dir + "': " + ec.message()};
  for (const auto& x : r.rows) {
    if (x.skipped || x.failed) continue;
    // the row id comes from the CSV: keep it a plain file name inside DIR
    std::string name = x.row_id;
    for (char& ch : name)
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_' && ch != '.') ch = '_';
    if (name.empty() || name[0] == '.') name = "row_" + name;
    std::string err = write_text_file_atomic(dir + "/" + name + ".json", dump_json(plan_to_json(x.plan), 2) + "\n");
    if (!err.empty()) throw InputError{"--export-plans: " + err};
  }
}

void print_report(const ValidationReport& r, const std::string& what, const std::string& unit, bool runs_that_ran) {
  TextTable t({"row", "model", "gpu", "layout", "measured " + unit, "predicted", "error", "peak GiB", "fits", "families"});
  for (const auto& x : r.rows) {
    if (x.skipped || x.failed || x.expect_oom) continue;
    const auto& p = x.plan.parallel;
    std::string layout = "tp" + std::to_string(p.tp) + " pp" + std::to_string(p.pp) +
                         (p.vpp > 1 ? "x" + std::to_string(p.vpp) : "") + " dp" + std::to_string(p.dp()) +
                         (p.cp > 1 ? " cp" + std::to_string(p.cp) : "") + (p.ep > 1 ? " ep" + std::to_string(p.ep) : "") + " z" +
                         std::to_string(p.zero);
    std::string fam;
    for (const auto& f : x.families) fam += (fam.empty() ? "" : ",") + f;
    t.add_row({x.row_id, x.model.substr(0, 24), x.gpu, layout, fmt(x.measured, unit == "GiB" ? 1 : 0),
               fmt(x.predicted, unit == "GiB" ? 1 : 0), (x.error_pct >= 0 ? "+" : "") + fmt(x.error_pct, 1) + "%",
               fmt(x.peak_memory_gib, 1) + "/" + fmt(x.capacity_gib, 0), x.fits ? "yes" : "NO", fam});
  }
  std::cout << "== " << what << "\n" << t.render() << "\n";
  TextTable s({"set", "rows", "MAPE", "median", "p90", "within 10%"});
  auto add = [&](const std::string& n, const ErrorStats& e) {
    s.add_row(
        {n, std::to_string(e.n), fmt(e.mape, 1) + "%", fmt(e.median, 1) + "%", fmt(e.p90, 1) + "%", fmt_pct(e.within10, 0)});
  };
  add("all", r.overall);
  for (const auto& [f, e] : r.by_family) add(f, e);
  std::cout << s.render();
  int scored = r.overall.n;
  if (runs_that_ran)
    std::cout << "\npredicted to fit in GPU memory: " << r.fits_rows << " of " << scored << " rows (" << fmt_pct(r.fits_share, 1)
              << ")\n";
  for (const auto& x : r.rows)
    if (runs_that_ran && !x.skipped && !x.failed && !x.expect_oom && !x.fits)
      std::cout << "  does not fit: " << x.row_id << " (" << x.model << "): " << fmt(x.peak_memory_gib, 1) << " of "
                << fmt(x.capacity_gib, 1) << " GiB, largest term " << x.dominant_memory << "\n";
  if (r.oom_rows > 0) {
    std::cout << "rows that ran out of memory, predicted not to fit: " << r.oom_predicted << " of " << r.oom_rows << "\n";
    for (const auto& x : r.rows)
      if (x.expect_oom)
        std::cout << "  " << x.row_id << " (" << x.model << "): predicted " << fmt(x.peak_memory_gib, 1) << " of "
                  << fmt(x.capacity_gib, 1) << " GiB" << (x.fits ? " (fits: wrong)" : " (does not fit: right)") << "\n";
  }
  if (r.failed) {
    std::cout << "\nrows that could not be built or simulated (charged as 10x off, " << fmt(kFailedRowApePct, 0)
              << " %, and as not fitting; never dropped): " << r.failed << "\n";
    for (const auto& x : r.rows)
      if (x.failed) std::cout << "  " << x.row_id << " (" << x.model << "): " << x.reason << "\n";
  }
  if (r.skipped) {
    std::cout << "\nskipped " << r.skipped << " rows:\n";
    for (const auto& x : r.rows)
      if (x.skipped) std::cout << "  " << x.row_id << " (" << x.model << "): " << x.reason << "\n";
  }
  std::cout << "\n";
}

// A CSV that lacks the columns the scoring reads would score nothing and report "MAPE 0.0%": refuse
// it, naming the missing columns, and refuse a file of which no row could be scored.
void require_columns(const std::vector<CsvRow>& rows, const std::string& flag, const std::string& path, bool memory) {
  if (rows.empty()) throw InputError{flag + " " + path + ": no data rows (a header and one row per run are needed)"};
  std::vector<std::string> need = {"model",    "layers",   "hidden", "heads", "vocab", "seq_len",
                                   "gpu_type", "num_gpus", "gbs",    "tp",    "pp",    "precision"};
  need.insert(need.end(),
              memory ? std::initializer_list<std::string>{"mem_total_gib"} : std::initializer_list<std::string>{"row_id"});
  std::string missing;
  for (const auto& c : need)
    if (!rows.front().f.count(c)) missing += (missing.empty() ? "" : ", ") + c;
  bool measured = memory || rows.front().f.count("tokens_per_sec_per_gpu") || rows.front().f.count("step_time_s") ||
                  rows.front().f.count("tflops_per_gpu");
  if (!measured) missing += std::string(missing.empty() ? "" : ", ") + "one of tokens_per_sec_per_gpu|step_time_s|tflops_per_gpu";
  if (!missing.empty())
    throw InputError{flag + " " + path + ": missing column(s) " + missing + "; the columns are those of " +
                     (memory ? "shared/calibration/published_memory_dev.csv" : "shared/calibration/published_runs_dev.csv")};
}

void require_scored(const ValidationReport& rep, const std::string& flag, const std::string& path) {
  if (rep.overall.n > rep.failed) return;  // at least one row simulated (failed rows are charged beside it)
  std::string why;
  for (const auto& x : rep.rows)
    if (x.skipped || x.failed) {
      why = " (first row: " + x.reason + ")";
      break;
    }
  throw InputError{flag + " " + path + ": none of its " + std::to_string(rep.rows.size()) + " rows could be scored" + why};
}

std::vector<FitParamSpec> chosen_params(const ValidateOptions& o) {
  std::vector<FitParamSpec> which;
  for (const auto& spec : default_fit_params())
    if (o.fit_params.empty() || ("," + o.fit_params + ",").find("," + spec.name + ",") != std::string::npos)
      which.push_back(spec);
  if (which.empty()) throw InputError{"--fit-params: none of '" + o.fit_params + "' is a fittable parameter"};
  return which;
}

nlohmann::json cv_stats_json(const CvStats& s) {
  return {{"in_sample", stats_json(s.in_sample)}, {"held_out", stats_json(s.held_out)}};
}

void print_cv_table(const std::string& title, const std::map<std::string, CvStats>& sets) {
  TextTable t({title, "rows", "in-sample MAPE", "held-out MAPE", "median", "p90", "within 10%"});
  for (const auto& [k, s] : sets)
    t.add_row({k, std::to_string(s.held_out.n), fmt(s.in_sample.mape, 1) + "%", fmt(s.held_out.mape, 1) + "%",
               fmt(s.held_out.median, 1) + "%", fmt(s.held_out.p90, 1) + "%", fmt_pct(s.held_out.within10, 0)});
  std::cout << t.render() << "\n";
}

int run_cross_validation(const ValidateOptions& o) {
  if (o.runs.empty()) throw InputError{"--cv needs --runs FILE.csv"};
  auto rows = read_csv_file(o.runs);
  if (!rows) throw InputError{"--runs: " + rows.error().message()};
  require_columns(*rows, "--runs", o.runs, false);
  if (o.cv == "model")
    if (std::string why = model_cv_problem(*rows); !why.empty()) throw InputError{"--cv model: " + why};
  CvOptions co;
  co.mode = o.cv == "group" ? CvMode::group : o.cv == "model" ? CvMode::model : CvMode::source;
  co.folds = o.cv_folds;
  co.rounds = o.fit_passes;
  co.max_evals = o.cv_evals;
  CvReport rep = cross_validate(*rows, load_calibration(o.calibration), chosen_params(o), co,
                                [](const std::string& what) { std::cerr << "cross-validation: " << what << "\n"; });
  if (rep.rows.empty()) throw InputError{"--runs: no row of " + o.runs + " could be scored (no expected columns?)"};
  if (!o.fit_out.empty()) {
    Calibration cal = rep.in_sample_calibration;
    cal.fit = {{"rows", rep.rows.size()},
               {"source", o.runs},
               {"cross_validation", o.cv},
               {"held_out_mape_pct", rep.overall.held_out.mape},
               {"in_sample_mape_pct", rep.overall.in_sample.mape},
               {"interval_coverage", rep.coverage},
               {"interval_coverage_at_q10_q90", rep.coverage_nominal},
               {"interval_level", rep.interval_level},
               {"reset_to_prior", rep.reset_to_prior},
               {"method", "NLopt LN_SBPLX over all parameters jointly (log-scaled, bounded), weighted mean |ln(pred/meas)|"}};
    std::string err = write_text_file_atomic(o.fit_out, dump_json(calibration_to_json(cal), 2) + "\n");
    if (!err.empty()) throw InputError{"--fit: " + err};
  }
  if (o.format == "json") {
    nlohmann::json rows_j = nlohmann::json::array(), fam = nlohmann::json::object(), src = nlohmann::json::object(),
                   fw = nlohmann::json::object(), mf = nlohmann::json::object();
    for (const auto& r : rep.rows)
      rows_j.push_back({{"row_id", r.row_id},
                        {"source", r.source},
                        {"framework", r.framework},
                        {"model", r.model},
                        {"model_family", r.model_family},
                        {"families", r.families},
                        {"fold", r.fold},
                        {"measured", r.measured},
                        {"predicted_in_sample", r.in_sample},
                        {"predicted_held_out", r.held_out}});
    for (const auto& [k, s] : rep.by_family) fam[k] = cv_stats_json(s);
    for (const auto& [k, s] : rep.by_source) src[k] = cv_stats_json(s);
    for (const auto& [k, s] : rep.by_framework) fw[k] = cv_stats_json(s);
    for (const auto& [k, s] : rep.by_model_family) mf[k] = cv_stats_json(s);
    nlohmann::json out = {{"cross_validation",
                           {{"mode", o.cv},
                            {"folds", rep.folds},
                            {"overall", cv_stats_json(rep.overall)},
                            {"by_family", fam},
                            {"by_source", src},
                            {"by_framework", fw},
                            {"by_model_family", mf},
                            {"rows", rows_j},
                            {"failures", rep.failures},
                            {"intervals", rep.intervals},
                            {"interval_coverage", rep.coverage},
                            {"interval_coverage_rows", rep.coverage_rows},
                            {"interval_level", rep.interval_level},
                            {"interval_coverage_at_q10_q90", rep.coverage_nominal},
                            {"reset_to_prior", rep.reset_to_prior}}}};
    std::cout << dump_json(out, 2) << "\n";
    return kExitOk;
  }
  std::cout << "== cross-validation ("
            << (o.cv == "group"   ? "k-fold over run groups"
                : o.cv == "model" ? "leave one model family out"
                                  : "leave one source out")
            << "), " << o.runs << "\n";
  print_cv_table("set", {{"all", rep.overall}});
  print_cv_table("family", rep.by_family);
  print_cv_table("framework", rep.by_framework);
  print_cv_table("source", rep.by_source);
  print_cv_table("model family", rep.by_model_family);
  std::cout << "80% prediction intervals (ln measured/predicted, residual quantiles " << fmt(rep.interval_level, 3) << "/"
            << fmt(1 - rep.interval_level, 3) << "): ";
  for (auto it = rep.intervals.begin(); it != rep.intervals.end(); ++it)
    std::cout << it.key() << " [" << fmt(it.value()["lo"].get<double>(), 3) << ", " << fmt(it.value()["hi"].get<double>(), 3)
              << "] ";
  std::cout << "\ncoverage out of fold: " << fmt_pct(rep.coverage, 1) << " of " << rep.coverage_rows
            << " rows (plain 10th/90th percentiles: " << fmt_pct(rep.coverage_nominal, 1) << ")\n";
  for (const auto& [fold, names] : rep.reset_to_prior) {
    std::cout << "fold '" << fold << "': no training row informs";
    for (const auto& n : names) std::cout << " " << n;
    std::cout << " (they start from their priors)\n";
  }
  if (!rep.failures.empty()) {
    std::cout << "rows that failed to build or simulate (charged as 10x off, never dropped):\n";
    for (const auto& f : rep.failures) std::cout << "  " << f << "\n";
  }
  if (!o.fit_out.empty()) std::cout << "wrote the in-sample calibration with its intervals to " << o.fit_out << "\n";
  return kExitOk;
}

RowSettings settings_of(const ValidateOptions& o) { return o.as_stated ? RowSettings::as_stated : RowSettings::with_run_facts; }

int run_validate(const ValidateOptions& o) {
  if (o.runs.empty() && o.memory.empty()) throw InputError{"give --runs FILE.csv and/or --memory FILE.csv"};
  if (!o.cv.empty() && o.as_stated)
    throw InputError{"--as-stated scores rows without their recipe facts; --cv fits with them: give one of the two"};
  if (!o.cv.empty()) return run_cross_validation(o);
  auto warned = std::make_shared<std::set<std::string>>();  // one --force warning per GPU architecture
  ParamsFor params = [&o, warned](const Plan& p) {
    if (o.calibration.empty()) return default_cost_params(p.cluster);
    Calibration cal = load_calibration(o.calibration);
    std::string w = check_calibration(cal, p.cluster.gpu, o.force);
    if (!w.empty() && warned->insert(p.cluster.gpu.arch).second) std::cerr << w << "\n";
    return cal.params_for(p.cluster.gpu);
  };
  if (!o.fit_out.empty()) {
    if (o.runs.empty()) throw InputError{"--fit needs --runs FILE.csv"};
    auto rows = read_csv_file(o.runs);
    if (!rows) throw InputError{"--runs: " + rows.error().message()};
    require_columns(*rows, "--runs", o.runs, false);
    auto runs = measured_runs_from_rows(*rows);
    Calibration start = load_calibration(o.calibration);
    std::vector<FitParamSpec> which = chosen_params(o);
    FitResult fr = fit_cost_params(runs, start, which, o.fit_passes, [](int round, int evals, double loss) {
      std::cerr << "\rfit round " << round + 1 << ": " << evals << " evaluations, mean |ln err| " << loss << "        "
                << std::flush;
    });
    std::cerr << "\n";
    Calibration cal = fr.calibration;
    cal.fit = {{"rows", fr.rows},
               {"evaluations", fr.evaluations},
               {"mean_abs_log_error_before", fr.loss_before},
               {"mean_abs_log_error_after", fr.loss_after},
               {"mape_before_pct", fr.mape_before},
               {"mape_after_pct", fr.mape_after},
               {"source", o.runs},
               {"failed_rows", fr.failed},
               {"method", "NLopt LN_SBPLX over all parameters jointly (log-scaled, bounded), weighted mean |ln(pred/meas)|"}};
    if (fr.rows_not_fitted > 0) cal.fit["rows_not_fitted"] = fr.rows_not_fitted;  // an unmeasured kernel (fit_runs.h)
    std::string err = write_text_file_atomic(o.fit_out, dump_json(calibration_to_json(cal), 2) + "\n");
    if (!err.empty()) throw InputError{"--fit: " + err};
    std::cout << "fitted " << fr.rows << " rows: MAPE " << fmt(fr.mape_before, 1) << "% -> " << fmt(fr.mape_after, 1) << "% ("
              << fr.evaluations << " simulations); wrote " << o.fit_out << "\n";
    if (fr.rows_not_fitted > 0)
      std::cout << fr.rows_not_fitted
                << " rows scored, not fitted: their step has a kernel no measurement rates (the Mamba SSD scan)\n";
    std::cout << "\n";
    const_cast<ValidateOptions&>(o).calibration = o.fit_out;
  }
  nlohmann::json out = nlohmann::json::object();
  if (!o.runs.empty()) {
    auto rows = read_csv_file(o.runs);
    if (!rows) throw InputError{"--runs: " + rows.error().message()};
    require_columns(*rows, "--runs", o.runs, false);
    ValidationReport rep = validate_throughput(*rows, params, settings_of(o));
    require_scored(rep, "--runs", o.runs);
    if (!o.export_dir.empty()) export_plans(rep, o.export_dir);
    if (o.format == "json")
      out["throughput"] = report_json(rep);
    else
      print_report(rep, "throughput: tokens/s per GPU, " + o.runs, "tok/s", true);
  }
  if (!o.memory.empty()) {
    auto rows = read_csv_file(o.memory);
    if (!rows) throw InputError{"--memory: " + rows.error().message()};
    require_columns(*rows, "--memory", o.memory, true);
    ValidationReport rep = validate_memory(*rows, params, settings_of(o));
    require_scored(rep, "--memory", o.memory);
    if (o.format == "json")
      out["memory"] = report_json(rep);
    else
      print_report(rep, "memory: peak GiB per GPU, " + o.memory, "GiB", false);
  }
  if (o.format == "json") std::cout << dump_json(out, 2) << "\n";
  return kExitOk;
}

}  // namespace

void add_validate_command(CLI::App& app, Runner& run) {
  auto o = std::make_shared<ValidateOptions>();
  auto* sub = app.add_subcommand("validate", "Score the simulator against published training runs");
  sub->add_option("--runs", o->runs, "throughput CSV (columns of shared/calibration/published_runs_dev.csv)");
  sub->add_option("--memory", o->memory, "memory CSV (columns of published_memory_dev.csv)");
  sub->add_option("--calibration", o->calibration, "calibration JSON applied to every row");
  add_force_option(sub, o->force);
  sub->add_option("--format", o->format, "table|json")->check(format_choice({"table", "json"}));
  sub->add_option("--fit", o->fit_out, "first fit the global cost parameters to --runs and write the calibration here");
  sub->add_option("--fit-params", o->fit_params, "comma-separated parameters to fit (default: all of the global set)");
  sub->add_flag("--as-stated", o->as_stated,
                "score each row as it states the run: its columns and its framework release's documented defaults, "
                "without the recipe facts of data/run_facts");
  sub->add_option("--export-plans", o->export_dir, "write each scored throughput row's plan to DIR/ROW.json");
  sub->add_option("--fit-passes", o->fit_passes, "passes of the cyclic parameter search")->check(int_range(1, 1000));
  sub->add_option("--cv", o->cv,
                  "cross-validate: source (leave one source out), group (k-fold over run groups) or model (leave one model "
                  "family out, data/model_families.csv)")
      ->check(CLI::IsMember({"source", "group", "model"}));
  sub->add_option("--cv-folds", o->cv_folds, "folds of --cv group (default 5)")->check(CLI::Range(2, 50));
  sub->add_option("--cv-evals", o->cv_evals, "simulations of all rows per fit round (default 60 per parameter)")
      ->check(int_range(0, 100000000));
  sub->callback([&run, o] { run = [o] { return run_validate(*o); }; });
}

}  // namespace mplan::cli
