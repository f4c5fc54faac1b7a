// `mplan runs list|show|tag` and `mplan regress`: the runs database (runs/) and the MFU regression
// gate (exit 1 on a regression). `mplan runs import` is in cmd_runs_import.cpp.
#include <algorithm>
#include <iostream>
#include <memory>

#include "cli/cmd_runs_util.h"
#include "core/strict_json.h"
#include "runs/plot.h"
#include "runs/regress.h"
#include "runs/run_json.h"
#include "runs/runs_db.h"
#ifdef MPLAN_RUNS_HAVE_PNG
#include "runs/plot_png.h"
#endif

namespace mplan::cli {

namespace {

using nlohmann::json;
using runs::RunRecord;
using runs::RunsDb;

constexpr int kExitRegression = 1;

// ---------------------------------------------------------------- list / show / tag

struct ListOptions {
  std::string db, plan, tag, format = "table";
  int limit = 0;
};

int run_list(const ListOptions& o) {
  auto db = require_db(o.db);
  auto all = require(db->list_runs(o.plan));
  std::vector<RunRecord> rows;
  for (auto& r : all) {
    if (!o.tag.empty() && std::find(r.tags.begin(), r.tags.end(), o.tag) == r.tags.end()) continue;
    if (o.limit > 0 && static_cast<int>(rows.size()) >= o.limit) break;
    rows.push_back(std::move(r));
  }
  if (o.format == "json") {
    json out = json::array();
    for (const auto& r : rows) out.push_back(runs::run_to_json(r, false, false));
    std::cout << dump_json(out, 2) << "\n";
    return kExitOk;
  }
  if (rows.empty()) {
    std::cout << "no runs in " << o.db << (o.plan.empty() && o.tag.empty() ? "" : " matching the filter") << "\n";
    return kExitOk;
  }
  TextTable t({"id", "started (UTC)", "plan", "source", "steps", "step s", "tokens/s", "TFLOP/s/GPU", "MFU", "predicted",
               "peak GiB", "tags"});
  for (const auto& r : rows) {
    const auto& s = r.summary;
    t.add_row({std::to_string(r.id), r.started_at.substr(0, 16), r.plan_key,
               r.source + (r.status == "completed" ? "" : " (" + r.status + ")"),
               std::to_string(s.steps_measured) + "/" + std::to_string(s.steps_total), num_cell(s.step_time_s, 3),
               num_cell(s.tokens_per_s, 0), num_cell(s.tflops_per_gpu, 1), mfu_cell(s.mfu), mfu_cell(s.predicted_mfu),
               num_cell(s.peak_memory_gib, 1), join(r.tags, ",")});
  }
  std::cout << t.render() << rows.size() << " run(s); newest first. 'mplan runs show --db " << o.db << " ID' for details.\n";
  return kExitOk;
}

struct ShowOptions {
  std::string db, format = "table";
  int64_t id = 0;
  bool steps = false;
};

int run_show(const ShowOptions& o) {
  auto db = require_db(o.db);
  RunRecord r = require(db->get_run(o.id));
  if (o.format == "json") {
    std::cout << dump_json(runs::run_to_json(r, true, true), 2) << "\n";
    return kExitOk;
  }
  const auto& s = r.summary;
  std::cout << "run " << r.id << "  " << r.started_at << "  " << r.status << "  source " << r.source
            << (r.source_file.empty() ? "" : " (" + r.source_file + ")") << "\n"
            << "plan " << r.plan_key << ": " << runs::plan_label(r.plan) << "\n"
            << "host " << (r.host.empty() ? kAbsent : r.host) << ", git " << (r.git_commit.empty() ? kAbsent : r.git_commit)
            << ", tags " << (r.tags.empty() ? kAbsent : join(r.tags, ","))
            << (r.source_job > 0 ? ", job " + std::to_string(r.source_job) + " of the log" : "") << "\n"
            << "software " << dump_json(r.software) << "\n\n";
  TextTable t({"summary (median of measured steps)", "measured", "predicted"});
  auto pred = [&](const char* key, double scale, int d) -> std::string {
    if (!r.prediction.contains(key) || !r.prediction[key].is_number()) return std::string(kAbsent);
    return fmt(r.prediction[key].get<double>() * scale, d);
  };
  t.add_row({"steps measured / logged", std::to_string(s.steps_measured) + "/" + std::to_string(s.steps_total), ""});
  t.add_row({"step time (s)", fmt(s.step_time_s, 4), pred("step_time_s", 1, 4)});
  t.add_row({"TFLOP/s/GPU", fmt(s.tflops_per_gpu, 1), pred("model_tflops_per_gpu", 1, 1)});
  t.add_row({"MFU (%)", fmt(100 * s.mfu, 2) + " +/- " + fmt(100 * s.mfu_spread, 2), pred("mfu", 100, 2)});
  t.add_row({"peak memory (GiB)", num_cell(s.peak_memory_gib, 2), pred("peak_memory_gib", 1, 2)});
  std::cout << t.render();
  if (r.prediction.empty()) std::cout << "(no prediction stored with this run)\n";
  if (!r.ops.empty()) {
    TextTable ops({"op", "calls", "measured ms", "predicted ms", "error"});
    for (const auto& op : r.ops)
      ops.add_row({op.op, std::to_string(op.calls), fmt(op.measured_s * 1e3, 3),
                   op.predicted_s > 0 ? fmt(op.predicted_s * 1e3, 3) : kAbsent,
                   op.predicted_s > 0 ? fmt(100 * (op.measured_s - op.predicted_s) / op.predicted_s, 1) + "%" : kAbsent});
    std::cout << "\nper-op timings (per step, slowest rank)\n" << ops.render();
  }
  if (o.steps) {
    TextTable st({"step", "loss", "step s", "tokens/s", "TFLOP/s/GPU", "MFU", "reported TFLOP/s", "peak GiB", ""});
    for (const auto& m : r.steps)
      st.add_row({std::to_string(m.step), opt_cell(m.loss, 4), fmt(m.step_time_s, 4), fmt(m.tokens_per_s, 0),
                  fmt(m.tflops_per_gpu, 1), fmt_pct(m.mfu, 2), opt_cell(m.reported_tflops_per_gpu, 1),
                  opt_cell(m.peak_memory_gib, 2),
                  m.warmup    ? "warm-up"
                  : m.skipped ? "skipped"
                              : ""});
    std::cout << "\n" << st.render();
  } else {
    std::cout << "(" << r.steps.size() << " steps stored; --steps lists them)\n";
  }
  for (const auto& w : r.warnings) std::cout << "warning: " << w << "\n";
  return kExitOk;
}

struct TagOptions {
  std::string db, tag;
  int64_t id = 0;
  bool remove = false;
};

int run_tag(const TagOptions& o) {
  auto db = require_db(o.db);
  require(o.remove ? db->untag_run(o.id, o.tag) : db->tag_run(o.id, o.tag));
  RunRecord r = require(db->get_run(o.id));
  std::cout << "run " << o.id << " tags: " << (r.tags.empty() ? kAbsent : join(r.tags, ",")) << "\n";
  return kExitOk;
}

// ---------------------------------------------------------------- regress

struct RegressOptions {
  std::string db, baseline = "last-5", format = "table", plot;
  double threshold = 5.0;
};

void print_regress(const runs::RegressReport& rep) {
  TextTable t({"plan", "latest", "MFU", "baseline", "change", "noise +/-", "predicted", "vs pred", "status"});
  for (const auto& p : rep.plans) {
    std::string base = p.baseline_ids.empty() ? std::string(kAbsent)
                                              : fmt_pct(p.baseline_mfu, 2) + " (" + std::to_string(p.baseline_ids.size()) +
                                                    " run" + (p.baseline_ids.size() > 1 ? "s" : "") + ")";
    bool has_base = !p.baseline_ids.empty();
    t.add_row({p.plan_key, "#" + std::to_string(p.latest_id) + " " + p.latest_at.substr(0, 10), mfu_cell(p.latest_mfu), base,
               has_base ? fmt(p.change_pct, 1) + "%" : kAbsent, has_base ? fmt(p.noise_pct, 1) + "%" : kAbsent,
               mfu_cell(p.predicted_mfu), p.predicted_mfu > 0 ? fmt(p.vs_prediction_pct, 1) + "%" : kAbsent,
               p.failed() ? "REGRESSION" : p.status});
  }
  std::cout << "baseline " << rep.baseline << ", threshold " << fmt(rep.threshold_pct, 1)
            << "% (a drop must also exceed the noise band: 3 sigma of the run-to-run noise, measured from the spread "
               "of consecutive runs so that level shifts do not count as noise; at least the within-run noise)\n"
            << t.render();
  for (const auto& p : rep.plans)
    if (p.status != "ok") std::cout << p.plan_key << ": " << p.explanation << "\n";
  std::cout << rep.regressions() << " regression(s) in " << rep.plans.size() << " plan(s)\n";
}

int run_regress(const RegressOptions& o) {
  auto db = require_db(o.db);
  auto all = require(db->list_runs(""));
  // runs that were aborted, diverged or failed measure nothing comparable: only completed runs count
  all.erase(std::remove_if(all.begin(), all.end(), [](const RunRecord& r) { return r.status != "completed"; }), all.end());
  runs::RegressOptions ro;
  ro.baseline = o.baseline;
  ro.threshold_pct = o.threshold;
  auto rep = require(runs::detect_regressions(all, ro));
  if (!o.plot.empty()) {
    runs::PngWriter png = nullptr;
#ifdef MPLAN_RUNS_HAVE_PNG
    png = &runs::write_png;
#endif
    require(runs::write_plot(runs::regress_plot(rep), o.plot, png));
  }
  if (o.format == "json") {
    json j = runs::regress_to_json(rep);
    if (!o.plot.empty()) j["plot"] = o.plot;
    std::cout << dump_json(j, 2) << "\n";
  } else {
    print_regress(rep);
    if (!o.plot.empty()) std::cout << "plot written to " << o.plot << "\n";
  }
  return rep.regressions() > 0 ? kExitRegression : kExitOk;
}

void add_db_option(CLI::App* sub, std::string& db) {
  sub->add_option("--db", db, "runs database file (SQLite; `runs import` creates it)")->required();
}

}  // namespace

void add_runs_commands(CLI::App& app, Runner& run) {
  auto* runs_cmd = app.add_subcommand("runs", "Runs database: import measured runs, list, show, tag");
  runs_cmd->require_subcommand(1);

  add_runs_import_command(runs_cmd, run);

  auto lo = std::make_shared<ListOptions>();
  auto* list = runs_cmd->add_subcommand("list", "List runs, newest first");
  add_db_option(list, lo->db);
  list->add_option("--plan", lo->plan, "only runs of this plan key");
  list->add_option("--tag", lo->tag, "only runs with this tag");
  list->add_option("--limit", lo->limit, "at most N runs")->check(int_range(0, 1000000000));
  list->add_option("--format", lo->format, "table|json")->check(format_choice({"table", "json"}));
  list->callback([&run, lo] { run = [lo] { return run_list(*lo); }; });

  auto so = std::make_shared<ShowOptions>();
  auto* show = runs_cmd->add_subcommand("show", "Show one run: summary vs prediction, per-op timings, steps");
  add_db_option(show, so->db);
  show->add_option("id", so->id, "run id")->required();
  show->add_flag("--steps", so->steps, "list every stored step");
  show->add_option("--format", so->format, "table|json")->check(format_choice({"table", "json"}));
  show->callback([&run, so] { run = [so] { return run_show(*so); }; });

  auto to = std::make_shared<TagOptions>();
  auto* tag = runs_cmd->add_subcommand("tag", "Tag a run (e.g. as the baseline for mplan regress)");
  add_db_option(tag, to->db);
  tag->add_option("id", to->id, "run id")->required();
  tag->add_option("tag", to->tag, "tag name")->required();
  tag->add_flag("--remove", to->remove, "remove the tag instead");
  tag->callback([&run, to] { run = [to] { return run_tag(*to); }; });

  auto ro = std::make_shared<RegressOptions>();
  auto* reg = app.add_subcommand("regress",
                                 "Compare every plan's latest MFU with its baseline and prediction; "
                                 "exit 1 on a regression (CI gate)");
  add_db_option(reg, ro->db);
  reg->add_option("--baseline", ro->baseline,
                  "last-N (median of the N previous runs at the current level, default last-5), best-of-last-N, or "
                  "a TAG (the newest earlier run carrying it)");
  reg->add_option("--threshold", ro->threshold, "percent MFU drop that fails (default 5: a drop of 5% or more)");
  reg->add_option("--format", ro->format, "table|json")->check(format_choice({"table", "json"}));
  reg->add_option("--plot", ro->plot, "also draw MFU over time per plan to FILE.svg or FILE.png");
  reg->callback([&run, ro] { run = [ro] { return run_regress(*ro); }; });
}

}  // namespace mplan::cli
