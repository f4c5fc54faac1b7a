// `mplan search-check`: the search's quality benchmark. For every published run (the CSV columns of
// shared/calibration/published_runs_dev.csv), is the best layout the search finds for the same job
// predicted at least as fast as the published layout? Exit 1 when one is worse.
#include <cmath>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>

#include <unistd.h>

#include "cli/commands.h"
#include "cli/plan_args.h"
#include "cli/resolve.h"
#include "cli/simulate_output.h"
#include "cli/table.h"
#include "core/json_fields.h"
#include "core/strict_json.h"
#include "planner/planner.h"
#include "simulator/published.h"

namespace mplan::cli {

namespace {

struct CheckCliOptions {
  std::string runs, calibration, rows, format = "table";
  int threads = 0;
  bool force = false;
};

int run_search_check(const CheckCliOptions& o) {
  auto rows = read_csv_file(o.runs);
  if (!rows) throw InputError{"--runs: " + rows.error().message()};
  Calibration cal = load_calibration(o.calibration);
  std::set<std::string> only;
  {
    std::stringstream ss(o.rows);
    std::string id;
    while (std::getline(ss, id, ','))
      if (!id.empty()) only.insert(id);
  }
  TextTable t({"row", "model", "GPUs", "published layout", "step s", "best layout found", "step s", "ratio", "verdict"});
  nlohmann::json js = nlohmann::json::array();
  int checked = 0, ok = 0, better = 0, worse = 0, skipped = 0, pub_nofit = 0;
  std::vector<double> ratios;
  for (const CsvRow& row : *rows) {
    const std::string& id = row.get("row_id");
    if (!only.empty() && !only.count(id)) continue;
    auto run = published_run_from_row(row);
    if (!run) {
      ++skipped;
      continue;
    }
    const Plan& pub = run->plan;
    if (!o.calibration.empty()) check_calibration(cal, pub.cluster.gpu, o.force);
    CostParams prm = cal.params_for(pub.cluster.gpu);
    auto pr = simulate(pub, prm);
    if (!pr) {
      ++skipped;
      continue;
    }
    Plan job = pub;
    SearchOptions so;
    so.top_k = 1;
    so.threads = o.threads;
    so.allow_tp_across_nvlink = pub.parallel.tp > pub.cluster.placement_domain();
    auto sr = search(job, cal, so);
    if (!sr) {
      ++skipped;
      continue;
    }
    ++checked;
    std::string verdict, best_layout = "-", best_step = "-", ratio_s = "-";
    double ratio = NAN;
    if (sr->top.empty()) {
      verdict = pr->fits ? "WORSE: nothing found" : "nothing fits (published does not fit either)";
      if (pr->fits) ++worse;
    } else {
      const Candidate& b = sr->top[0];
      ratio = b.report.step_time_s / pr->step_time_s;
      ratios.push_back(ratio);
      best_layout = layout_summary(b.plan.parallel);
      best_step = fmt(b.report.step_time_s, 3);
      ratio_s = fmt(ratio, 3);
      if (!pr->fits) {
        verdict = "published does not fit (predicted " + fmt(pr->peak_memory_gib, 1) + " GiB)";
        ++pub_nofit;
        ++ok;
      } else if (ratio <= 1 + 1e-9) {
        ++ok;
        verdict = ratio < 0.995 ? "better: " + fmt_pct(1 - ratio) + " faster" : "ok (same)";
        if (ratio < 0.995) ++better;
      } else {
        ++worse;
        verdict = "WORSE";
      }
    }
    t.add_row({id, run->model_name.substr(0, 20), std::to_string(pub.parallel.world_size), layout_summary(pub.parallel),
               fmt(pr->step_time_s, 3), best_layout, best_step, ratio_s, verdict});
    js.push_back({{"row_id", id},
                  {"model", run->model_name},
                  {"gpus", pub.parallel.world_size},
                  {"published", parallel_to_json(pub.parallel)},
                  {"published_step_time_s", pr->step_time_s},
                  {"published_fits", pr->fits},
                  {"best", sr->top.empty() ? nlohmann::json() : parallel_to_json(sr->top[0].plan.parallel)},
                  {"best_step_time_s", sr->top.empty() ? nlohmann::json() : nlohmann::json(sr->top[0].report.step_time_s)},
                  {"ratio", std::isnan(ratio) ? nlohmann::json() : nlohmann::json(ratio)},
                  {"verdict", verdict},
                  {"search_wall_s", sr->stats.wall_s},
                  {"simulated", sr->stats.simulated}});
    if (isatty(2)) std::cerr << "\r" << checked << " rows checked" << std::flush;
  }
  if (isatty(2)) std::cerr << "\r" << std::string(30, ' ') << "\r";
  if (o.format == "json") {
    std::cout << dump_json(js, 2) << "\n";
  } else {
    std::cout << t.render() << "\n";
    double gmean = 0;
    for (double r : ratios) gmean += std::log(r);
    gmean = ratios.empty() ? 1 : std::exp(gmean / double(ratios.size()));
    std::cout << checked << " rows checked: " << ok << " at least as fast as published (" << better << " more than 0.5% faster; "
              << pub_nofit << " where the published layout does not fit in the simulator), " << worse << " worse; " << skipped
              << " rows not expressible; geometric mean ratio " << fmt(gmean, 3) << "\n";
  }
  return worse == 0 ? kExitOk : kExitInternal;
}

}  // namespace

void add_search_check_command(CLI::App& app, Runner& run) {
  auto o = std::make_shared<CheckCliOptions>();
  auto* sub =
      app.add_subcommand("search-check", "Quality benchmark: is the best layout found at least as fast as each published run?");
  sub->add_option("--runs", o->runs, "CSV with the columns of shared/calibration/published_runs_dev.csv")->required();
  sub->add_option("--calibration", o->calibration, "calibration JSON applied to every row");
  add_force_option(sub, o->force);
  sub->add_option("--rows", o->rows, "only these row ids (comma-separated)");
  sub->add_option("--threads", o->threads, "worker threads per search")->check(int_range(0, 4096));
  sub->add_option("--format", o->format, "table|json")->check(format_choice({"table", "json"}));
  sub->callback([&run, o] { run = [o] { return run_search_check(*o); }; });
}

}  // namespace mplan::cli
