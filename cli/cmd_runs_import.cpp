// `mplan runs import`: training logs (Megatron-LM, Megatron-DeepSpeed, Megatron-Bridge, NeMo 2.0; one
// file, several per-rank files or a directory; every job of a multi-job file, or the one chosen with
// --job) and CSV files become runs in the runs database, all jobs of one command in one transaction.
#include <chrono>
#include <ctime>
#include <iostream>

#include "cli/cmd_runs_util.h"
#include "cli/resolve.h"
#include "core/bounded_input.h"
#include "core/json_fields.h"
#include "core/strict_json.h"
#include "core/time_format.h"
#include "runs/import.h"
#include "runs/log_jobs.h"
#include "runs/predict.h"
#include "runs/run_json.h"

namespace mplan::cli {

namespace {

using nlohmann::json;
using runs::RunRecord;

struct ImportOptions {
  std::string db, csv, plan, host, git_commit, started_at, tz, format = "table";
  std::vector<std::string> logs, software, tags;
  int warmup = 10, job = 0;
  bool allow_mismatch = false, no_predict = false;
};

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

// The jobs of the logs, each imported (or the one chosen with --job). Any failing job fails the
// command: nothing is written.
std::vector<runs::ImportResult> import_logs(const ImportOptions& o, const Plan& plan, const runs::ImportOptions& io) {
  runs::LogSet set = require(runs::read_training_logs(o.logs));
  const int n = static_cast<int>(set.jobs.size());
  std::vector<std::string> listing;
  for (const auto& j : set.jobs) listing.push_back("  " + runs::describe_job(j));
  if (o.job > n)
    throw InputError{"--job " + std::to_string(o.job) + ": the log holds " + std::to_string(n) + " job(s):\n" +
                     join(listing, "\n")};
  std::vector<runs::ImportResult> out;
  std::vector<std::string> failed, ok;
  for (const auto& job : set.jobs) {
    if (o.job > 0 && job.index != o.job) continue;
    auto r = runs::import_log_job(job, plan, io);
    if (!r) {
      failed.push_back(r.error().message());
      continue;
    }
    ok.push_back(std::to_string(job.index));
    runs::ImportResult res = std::move(r).value();
    res.run.source_file = join(set.files, ",");
    res.run.source_job = n > 1 ? job.index : 0;
    for (const auto& w : set.warnings) res.run.warnings.push_back(w);
    out.push_back(std::move(res));
  }
  if (!failed.empty()) {
    std::string msg = join(failed, "\n");
    if (n > 1) {
      msg += "\nthe log holds " + std::to_string(n) + " jobs:\n" + join(listing, "\n");
      if (!ok.empty()) msg += "\njob(s) " + join(ok, ", ") + " match the plan: import one with --job N";
    }
    throw InputError{msg + "\nnothing was imported"};
  }
  return out;
}

// Provenance, dates and the prediction, common to every imported run.
void finish_run(const ImportOptions& o, runs::ImportResult& res, const json& prediction) {
  RunRecord& run = res.run;
  if (!o.started_at.empty()) run.started_at = normalize_date(o.started_at);
  if (run.started_at.empty()) {
    run.started_at = utc_now_iso();
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
  run.prediction = prediction;
}

void print_import(const RunRecord& r, const runs::ImportResult& res, const std::string& db, const std::string& pred_note,
                  int warmup) {
  const auto& s = r.summary;
  std::cout << "imported run " << r.id << " into " << db << "\n"
            << "plan " << r.plan_key << ": " << runs::plan_label(r.plan) << "\n";
  if (!res.job.empty()) std::cout << res.job << "\n";
  std::cout << "source: " << r.source << " " << r.source_file << " (" << res.framework << ", " << res.format << "), "
            << s.steps_total << " logged steps, " << res.warmup_excluded << " warm-up steps excluded";
  if (res.skipped_excluded > 0) std::cout << ", " << res.skipped_excluded << " skipped";
  std::cout << "\n" << runs::warmup_rule_text(warmup) << "\n";
  TextTable t({"measured (median)", "value"});
  t.add_row({"step time (s)", fmt(s.step_time_s, 4)});
  t.add_row({"tokens/s (job)", fmt(s.tokens_per_s, 0)});
  t.add_row({"TFLOP/s/GPU (model, causal)", fmt(s.tflops_per_gpu, 1)});
  t.add_row({"MFU", fmt_pct(s.mfu, 2) + " +/- " + fmt_pct(s.mfu_spread, 2) + " step noise"});
  t.add_row({"peak memory (GiB, max over ranks)", num_cell(s.peak_memory_gib, 2)});
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

json import_json(const RunRecord& stored, const runs::ImportResult& res, const ImportOptions& o, const std::string& pred_note) {
  json j = runs::run_to_json(stored, false, false);
  j["db"] = o.db;
  j["warmup_rule"] = runs::warmup_rule_text(o.warmup);
  j["warmup_excluded"] = res.warmup_excluded;
  j["skipped_excluded"] = res.skipped_excluded;
  j["log_format"] = res.format;
  j["framework"] = res.framework;
  j["job"] = res.job.empty() ? json(nullptr) : json(res.job);
  j["prediction_stored"] = !stored.prediction.empty();
  if (!pred_note.empty()) j["prediction_note"] = pred_note;
  return j;
}

int run_import(const ImportOptions& o) {
  if (o.logs.empty() == o.csv.empty())
    throw InputError{"runs import: give --megatron-log FILE|DIR (repeatable: per-rank files) or --csv FILE, not both"};
  if (o.warmup < 0) throw InputError{"--warmup: must be >= 0"};
  if (o.job < 0) throw InputError{"--job: must be >= 1 (the job's number in the log, see the import's job list)"};
  if (o.job > 0 && !o.csv.empty()) throw InputError{"--job: applies to training logs, not to --csv"};
  Plan plan = require_plan(o.plan);
  runs::ImportOptions io;
  io.warmup_iters = o.warmup;
  io.allow_mismatch = o.allow_mismatch;
  if (!o.tz.empty()) io.tz = require(runs::TimeZone::parse(o.tz));
  std::vector<runs::ImportResult> results;
  if (!o.logs.empty()) {
    results = import_logs(o, plan, io);
  } else {
    std::vector<std::string> problems;
    auto text = read_input_file(o.csv, kMaxTableInputBytes, problems);  // regular file or "-", size-capped
    if (!text) throw InputError{"--csv " + join(problems, "\n")};
    results.push_back(require(runs::import_csv(*text, o.csv, plan, io)));
    results.back().run.source_file = o.csv;
  }
  std::string pred_note;
  json prediction = json::object();
  if (o.no_predict)
    pred_note = "prediction: not stored (--no-predict)";
  else if (auto p = runs::predict_plan(plan))
    prediction = p.value();
  else
    pred_note = p.error().message();
  std::vector<RunRecord> records;
  for (auto& r : results) {
    finish_run(o, r, prediction);
    records.push_back(r.run);
  }
  auto db = require_db(o.db, true);
  std::vector<int64_t> ids = require(db->add_runs(records));
  json all = json::array();
  for (size_t i = 0; i < ids.size(); ++i) {
    RunRecord stored = require(db->get_run(ids[i]));
    if (o.format == "json")
      all.push_back(import_json(stored, results[i], o, pred_note));
    else
      print_import(stored, results[i], o.db, pred_note, o.warmup);
    if (o.format != "json" && i + 1 < ids.size()) std::cout << "\n";
  }
  if (o.format == "json")
    std::cout << dump_json(all.size() == 1 ? all[0] : json{{"db", o.db}, {"jobs", all.size()}, {"runs", all}}, 2) << "\n";
  return kExitOk;
}

}  // namespace

void add_runs_import_command(CLI::App* runs_cmd, Runner& run) {
  auto io = std::make_shared<ImportOptions>();
  auto* imp = runs_cmd->add_subcommand("import",
                                       "Import training logs (Megatron-LM, Megatron-DeepSpeed, Megatron-Bridge, "
                                       "NeMo 2.0) or a CSV of step metrics as runs");
  imp->add_option("--db", io->db, "runs database file (SQLite; created when missing)")->required();
  imp->add_option("--megatron-log,--log", io->logs,
                  "training log, or a directory of per-rank logs (repeatable: --megatron-log rank0.log "
                  "--megatron-log rank7.log); every job in it becomes a run");
  imp->add_option("--job", io->job, "import only job N of a log holding several (1-based)");
  imp->add_option("--csv", io->csv,
                  "CSV with a header: step, step_time_s | tokens_per_s [, tflops_per_gpu, mfu, "
                  "peak_memory_gib, loss]");
  imp->add_option("--plan", io->plan, "the mplan.plan/1 file the run used")->required();
  imp->add_option("--warmup", io->warmup, "iterations after (re)start treated as warm-up (default 10)");
  imp->add_flag("--allow-mismatch", io->allow_mismatch,
                "import even when the log's configuration contradicts the plan or the MFU is implausible");
  imp->add_option("--tz", io->tz,
                  "time zone of the log's local times when the log states none: UTC, +02:00, "
                  "Europe/Berlin (default: UTC, with a warning)");
  imp->add_flag("--no-predict", io->no_predict, "do not store the simulator's prediction");
  imp->add_option("--host", io->host, "host or cluster name the run ran on");
  imp->add_option("--git-commit", io->git_commit, "commit of the training code");
  imp->add_option("--started-at", io->started_at, "date of the run, UTC (default: from the log, else now)");
  imp->add_option("--software", io->software, "KEY=VALUE version facts (repeatable): cuda=12.4 nccl=2.21 ...");
  imp->add_option("--tag", io->tags, "tag the new run (repeatable)");
  imp->add_option("--format", io->format, "table|json")->check(format_choice({"table", "json"}));
  imp->callback([&run, io] { run = [io] { return run_import(*io); }; });
}

}  // namespace mplan::cli
