// `mplan runs import|list|show|tag` and `mplan regress`: the runs database (runs/), imports of
// Megatron-LM logs and CSV files, and the MFU regression gate (exit 1 on a regression).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "core/strict_json.h"
#include "cli/resolve.h"
#include "cli/table.h"
#include "core/bounded_input.h"
#include "core/json_fields.h"
#include "runs/import.h"
#include "runs/megatron_log.h"
#include "runs/plot.h"
#include "runs/predict.h"
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

// Importers create the database; readers require it, so a mistyped --db is not "no runs".
std::unique_ptr<RunsDb> require_db(const std::string& path, bool create = false) {
  auto db = create ? RunsDb::open(path) : RunsDb::open_existing(path);
  if (!db) throw InputError{db.error().message()};
  return std::move(db).value();
}

template <class T>
T require(Expected<T> r) {
  if (!r) throw InputError{r.error().message()};
  return std::move(r).value();
}

void require(const Status& s) {
  if (!s) throw InputError{s.error().message()};
}

std::string now_utc_iso() {
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// "2024-05-01", "2024-05-01T12:00:00Z" or "2024-05-01 12:00:00" -> "YYYY-MM-DDTHH:MM:SSZ".
std::string normalize_date(const std::string& s) {
  auto digits = [&](size_t a, size_t n) {
    for (size_t i = a; i < a + n; ++i)
      if (i >= s.size() || s[i] < '0' || s[i] > '9') return false;
    return true;
  };
  bool date = digits(0, 4) && s.size() >= 10 && s[4] == '-' && digits(5, 2) && s[7] == '-' && digits(8, 2);
  if (date && s.size() == 10) return s + "T00:00:00Z";
  if (date && s.size() >= 19 && (s[10] == 'T' || s[10] == ' ') && digits(11, 2) && s[13] == ':' && digits(14, 2) &&
      s[16] == ':' && digits(17, 2) && (s.size() == 19 || (s.size() == 20 && s[19] == 'Z')))
    return s.substr(0, 10) + "T" + s.substr(11, 8) + "Z";
  throw InputError{"--started-at: '" + s + "' is not a date; write 2024-05-01 or 2024-05-01T12:00:00Z (UTC)"};
}

std::string mfu_cell(double mfu) { return mfu > 0 ? fmt_pct(mfu, 2) : "-"; }
std::string num_cell(double v, int d) { return v > 0 ? fmt(v, d) : "-"; }

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string o;
  for (const auto& s : v) o += (o.empty() ? "" : sep) + s;
  return o;
}

// ---------------------------------------------------------------- import

struct ImportOptions {
  std::string db, megatron_log, csv, plan, host, git_commit, started_at, format = "table";
  int warmup = 10;
  bool allow_mismatch = false, no_predict = false;
  std::vector<std::string> software, tags;
};

void print_import(const RunRecord& r, int64_t id, const runs::ImportResult& res, const std::string& db,
                  const std::string& pred_note, int warmup) {
  const auto& s = r.summary;
  std::cout << "imported run " << id << " into " << db << "\n"
            << "plan " << r.plan_key << ": " << runs::plan_label(r.plan) << "\n"
            << "source: " << r.source << " " << r.source_file << " (" << res.format << "), " << s.steps_total
            << " logged steps, " << res.warmup_excluded << " warm-up steps excluded\n"
            << runs::warmup_rule_text(warmup) << "\n";
  TextTable t({"measured (median)", "value"});
  t.add_row({"step time (s)", fmt(s.step_time_s, 4)});
  t.add_row({"tokens/s (job)", fmt(s.tokens_per_s, 0)});
  t.add_row({"TFLOP/s/GPU (model, causal)", fmt(s.tflops_per_gpu, 1)});
  t.add_row({"MFU", fmt_pct(s.mfu, 2) + " +/- " + fmt_pct(s.mfu_spread, 2) + " step noise"});
  t.add_row({"peak memory (GiB, max over ranks)", s.peak_memory_gib > 0 ? fmt(s.peak_memory_gib, 2) : "unknown"});
  if (s.predicted_mfu > 0)
    t.add_row({"predicted MFU", fmt_pct(s.predicted_mfu, 2) + " (measured " +
                                    fmt(100 * (s.mfu - s.predicted_mfu) / s.predicted_mfu, 1) + "% vs predicted)"});
  std::cout << t.render();
  if (!pred_note.empty()) std::cout << pred_note << "\n";
  if (!r.warnings.empty()) {
    std::cout << "warnings:\n";
    for (const auto& w : r.warnings) std::cout << "  - " << w << "\n";
  }
}

int run_import(const ImportOptions& o) {
  if (o.megatron_log.empty() == o.csv.empty())
    throw InputError{"runs import: give exactly one of --megatron-log FILE or --csv FILE"};
  if (o.warmup < 0) throw InputError{"--warmup: must be >= 0"};
  Plan plan = require_plan(o.plan);
  runs::ImportOptions io;
  io.warmup_iters = o.warmup;
  io.allow_mismatch = o.allow_mismatch;
  runs::ImportResult res;
  if (!o.megatron_log.empty()) {
    auto log = require(runs::parse_megatron_log_file(o.megatron_log));
    res = require(runs::import_megatron_log(log, plan, io));
    res.run.source_file = o.megatron_log;
  } else {
    std::vector<std::string> problems;
    auto text = read_input_file(o.csv, kMaxTableInputBytes, problems);
    if (!text) throw InputError{"--csv " + join(problems, "\n")};
    res = require(runs::import_csv(*text, o.csv, plan, io));
    res.run.source_file = o.csv;
  }
  RunRecord& run = res.run;
  if (!o.started_at.empty()) run.started_at = normalize_date(o.started_at);
  if (run.started_at.empty()) {
    run.started_at = now_utc_iso();
    run.warnings.push_back("the file names no date: started_at is the import time (pass --started-at)");
  }
  if (!o.host.empty()) run.host = o.host;
  if (!o.git_commit.empty()) run.git_commit = o.git_commit;
  for (const auto& kv : o.software) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) throw InputError{"--software: '" + kv + "' is not KEY=VALUE"};
    run.software[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  run.tags = o.tags;
  std::string pred_note;
  if (o.no_predict) {
    pred_note = "prediction: not stored (--no-predict)";
  } else if (auto p = runs::predict_plan(plan)) {
    run.prediction = p.value();
  } else {
    pred_note = p.error().message();
  }
  auto db = require_db(o.db, true);
  int64_t id = require(db->add_run(run));
  RunRecord stored = require(db->get_run(id));
  if (o.format == "json") {
    json j = runs::run_to_json(stored, false, false);
    j["db"] = o.db;
    j["warmup_rule"] = runs::warmup_rule_text(o.warmup);
    j["warmup_excluded"] = res.warmup_excluded;
    j["log_format"] = res.format;
    j["prediction_stored"] = !stored.prediction.empty();
    if (!pred_note.empty()) j["prediction_note"] = pred_note;
    std::cout << dump_json(j, 2) << "\n";
  } else {
    print_import(stored, id, res, o.db, pred_note, o.warmup);
  }
  return kExitOk;
}

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
  TextTable t({"id", "started (UTC)", "plan", "source", "steps", "step s", "tokens/s", "TFLOP/s/GPU", "MFU",
               "predicted", "peak GiB", "tags"});
  for (const auto& r : rows) {
    const auto& s = r.summary;
    t.add_row({std::to_string(r.id), r.started_at.substr(0, 16), r.plan_key,
               r.source + (r.status == "completed" ? "" : " (" + r.status + ")"),
               std::to_string(s.steps_measured) + "/" + std::to_string(s.steps_total), num_cell(s.step_time_s, 3),
               num_cell(s.tokens_per_s, 0), num_cell(s.tflops_per_gpu, 1), mfu_cell(s.mfu), mfu_cell(s.predicted_mfu),
               num_cell(s.peak_memory_gib, 1), join(r.tags, ",")});
  }
  std::cout << t.render() << rows.size() << " run(s); newest first. 'mplan runs show --db " << o.db
            << " ID' for details.\n";
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
            << "host " << (r.host.empty() ? "-" : r.host) << ", git " << (r.git_commit.empty() ? "-" : r.git_commit)
            << ", tags " << (r.tags.empty() ? "-" : join(r.tags, ",")) << "\n"
            << "software " << dump_json(r.software) << "\n\n";
  TextTable t({"summary (median of measured steps)", "measured", "predicted"});
  auto pred = [&](const char* key, double scale, int d) -> std::string {
    if (!r.prediction.contains(key) || !r.prediction[key].is_number()) return "-";
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
                   op.predicted_s > 0 ? fmt(op.predicted_s * 1e3, 3) : "-",
                   op.predicted_s > 0 ? fmt(100 * (op.measured_s - op.predicted_s) / op.predicted_s, 1) + "%" : "-"});
    std::cout << "\nper-op timings (per step, slowest rank)\n" << ops.render();
  }
  if (o.steps) {
    TextTable st({"step", "loss", "step s", "tokens/s", "TFLOP/s/GPU", "MFU", "reported TFLOP/s", "peak GiB", ""});
    for (const auto& m : r.steps)
      st.add_row({std::to_string(m.step), fmt(m.loss, 4), fmt(m.step_time_s, 4), fmt(m.tokens_per_s, 0),
                  fmt(m.tflops_per_gpu, 1), fmt_pct(m.mfu, 2), num_cell(m.reported_tflops_per_gpu, 1),
                  num_cell(m.peak_memory_gib, 2), m.warmup ? "warm-up" : ""});
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
  std::cout << "run " << o.id << " tags: " << (r.tags.empty() ? "-" : join(r.tags, ",")) << "\n";
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
    std::string base = p.baseline_ids.empty() ? "-" : fmt_pct(p.baseline_mfu, 2) + " (" +
                                                          std::to_string(p.baseline_ids.size()) + " run" +
                                                          (p.baseline_ids.size() > 1 ? "s" : "") + ")";
    bool has_base = !p.baseline_ids.empty();
    t.add_row({p.plan_key, "#" + std::to_string(p.latest_id) + " " + p.latest_at.substr(0, 10), mfu_cell(p.latest_mfu),
               base, has_base ? fmt(p.change_pct, 1) + "%" : "-", has_base ? fmt(p.noise_pct, 1) + "%" : "-",
               mfu_cell(p.predicted_mfu), p.predicted_mfu > 0 ? fmt(p.vs_prediction_pct, 1) + "%" : "-",
               p.failed() ? "REGRESSION" : p.status});
  }
  std::cout << "baseline " << rep.baseline << ", threshold " << fmt(rep.threshold_pct, 1)
            << "% (a drop must also exceed the noise band: the run-to-run range of the plan's recent runs, at least "
               "the within-run noise)\n"
            << t.render();
  for (const auto& p : rep.plans)
    if (p.status != "ok") std::cout << p.plan_key << ": " << p.explanation << "\n";
  std::cout << rep.regressions() << " regression(s) in " << rep.plans.size() << " plan(s)\n";
}

int run_regress(const RegressOptions& o) {
  auto db = require_db(o.db);
  auto all = require(db->list_runs(""));
  // runs that were aborted, diverged or failed measure nothing comparable: only completed runs count
  all.erase(std::remove_if(all.begin(), all.end(), [](const RunRecord& r) { return r.status != "completed"; }),
            all.end());
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

  auto io = std::make_shared<ImportOptions>();
  auto* imp = runs_cmd->add_subcommand("import", "Import a Megatron-LM log or a CSV of step metrics as a run");
  add_db_option(imp, io->db);
  imp->add_option("--megatron-log", io->megatron_log, "Megatron-LM training log (stdout of the last rank)");
  imp->add_option("--csv", io->csv, "CSV with a header: step, step_time_s | tokens_per_s [, tflops_per_gpu, mfu, "
                                    "peak_memory_gib, loss]");
  imp->add_option("--plan", io->plan, "the mplan.plan/1 file the run used")->required();
  imp->add_option("--warmup", io->warmup, "iterations after (re)start treated as warm-up (default 10)");
  imp->add_flag("--allow-mismatch", io->allow_mismatch, "import even when the log's arguments contradict the plan");
  imp->add_flag("--no-predict", io->no_predict, "do not store the simulator's prediction");
  imp->add_option("--host", io->host, "host or cluster name the run ran on");
  imp->add_option("--git-commit", io->git_commit, "commit of the training code");
  imp->add_option("--started-at", io->started_at, "date of the run, UTC (default: from the log, else now)");
  imp->add_option("--software", io->software, "KEY=VALUE version facts (repeatable): cuda=12.4 nccl=2.21 ...");
  imp->add_option("--tag", io->tags, "tag the new run (repeatable)");
  imp->add_option("--format", io->format, "table|json")->check(format_choice({"table", "json"}));
  imp->callback([&run, io] { run = [io] { return run_import(*io); }; });

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
  auto* reg = app.add_subcommand("regress", "Compare every plan's latest MFU with its baseline and prediction; "
                                            "exit 1 on a regression (CI gate)");
  add_db_option(reg, ro->db);
  reg->add_option("--baseline", ro->baseline, "last-N (median of the N previous runs, default last-5) or a TAG");
  reg->add_option("--threshold", ro->threshold, "percent MFU drop that fails (default 5)");
  reg->add_option("--format", ro->format, "table|json")->check(format_choice({"table", "json"}));
  reg->add_option("--plot", ro->plot, "also draw MFU over time per plan to FILE.svg or FILE.png");
  reg->callback([&run, ro] { run = [ro] { return run_regress(*ro); }; });
}

}  // namespace mplan::cli
