// Schema versions of the runs database and the migrations between them (see docs/runs.md).
//   1: runs, steps, ops, tags.
//   2: per-step warm-up flag and framework-reported throughput; per-run import file, warnings and
//      summary columns (medians over measured steps), backfilled for runs written by schema 1.
//   3: absent step values are NULL (loss, peak memory, reported throughput: the 0 placeholders of
//      schemas 1-2 become NULL); per-step `skipped` flag and reported tokens/s/GPU (Megatron-DeepSpeed
//      tgs); per-run `source_job` (which job of a multi-job log). The steps table is rebuilt (SQLite
//      cannot drop NOT NULL in place); the runs table only gains a column.
//   4: per-run status (completed | aborted | diverged | failed); earlier runs are "completed".
#include "runs/schema.h"

#include <string>
#include <vector>

#include "runs/runs_db.h"
#include "runs/sqlite_util.h"

namespace mplan::runs {

namespace {

const char* kSchema1 = R"sql(
CREATE TABLE runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  plan_key TEXT NOT NULL,
  plan_json TEXT NOT NULL,
  source TEXT NOT NULL,
  host TEXT NOT NULL DEFAULT '',
  software_json TEXT NOT NULL DEFAULT '{}',
  git_commit TEXT NOT NULL DEFAULT '',
  started_at TEXT NOT NULL DEFAULT '',
  prediction_json TEXT NOT NULL DEFAULT '{}',
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
);
CREATE INDEX runs_by_plan ON runs(plan_key, started_at);
CREATE TABLE steps (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  idx INTEGER NOT NULL,
  step INTEGER NOT NULL,
  loss REAL NOT NULL DEFAULT 0,
  step_time_s REAL NOT NULL,
  tokens_per_s REAL NOT NULL DEFAULT 0,
  tflops_per_gpu REAL NOT NULL DEFAULT 0,
  mfu REAL NOT NULL DEFAULT 0,
  peak_memory_gib REAL NOT NULL DEFAULT 0,
  PRIMARY KEY (run_id, idx)
) WITHOUT ROWID;
CREATE TABLE ops (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  idx INTEGER NOT NULL,
  op TEXT NOT NULL,
  measured_s REAL NOT NULL DEFAULT 0,
  predicted_s REAL NOT NULL DEFAULT 0,
  calls INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (run_id, idx)
) WITHOUT ROWID;
CREATE TABLE tags (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  tag TEXT NOT NULL,
  PRIMARY KEY (run_id, tag)
) WITHOUT ROWID;
CREATE INDEX tags_by_tag ON tags(tag);
)sql";

const char* kSchema2 = R"sql(
ALTER TABLE steps ADD COLUMN warmup INTEGER NOT NULL DEFAULT 0;
ALTER TABLE steps ADD COLUMN reported_tflops_per_gpu REAL NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN source_file TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN warnings_json TEXT NOT NULL DEFAULT '[]';
ALTER TABLE runs ADD COLUMN steps_total INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN steps_measured INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN step_time_s REAL NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN tokens_per_s REAL NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN tflops_per_gpu REAL NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN mfu REAL NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN mfu_spread REAL NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN peak_memory_gib REAL NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN predicted_mfu REAL NOT NULL DEFAULT 0;
)sql";

const char* kSchema3 = R"sql(
CREATE TABLE steps_v3 (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  idx INTEGER NOT NULL,
  step INTEGER NOT NULL,
  loss REAL,
  step_time_s REAL NOT NULL,
  tokens_per_s REAL NOT NULL DEFAULT 0,
  tflops_per_gpu REAL NOT NULL DEFAULT 0,
  mfu REAL NOT NULL DEFAULT 0,
  peak_memory_gib REAL,
  warmup INTEGER NOT NULL DEFAULT 0,
  reported_tflops_per_gpu REAL,
  skipped INTEGER NOT NULL DEFAULT 0,
  reported_tokens_per_s_per_gpu REAL,
  PRIMARY KEY (run_id, idx)
) WITHOUT ROWID;
INSERT INTO steps_v3 (run_id, idx, step, loss, step_time_s, tokens_per_s, tflops_per_gpu, mfu, peak_memory_gib,
                      warmup, reported_tflops_per_gpu)
  SELECT run_id, idx, step, NULLIF(loss, 0), step_time_s, tokens_per_s, tflops_per_gpu, mfu,
         NULLIF(peak_memory_gib, 0), warmup, NULLIF(reported_tflops_per_gpu, 0) FROM steps;
DROP TABLE steps;
ALTER TABLE steps_v3 RENAME TO steps;
ALTER TABLE runs ADD COLUMN source_job INTEGER NOT NULL DEFAULT 0;
)sql";

const char* kSchema4 = R"sql(
ALTER TABLE runs ADD COLUMN status TEXT NOT NULL DEFAULT 'completed';
)sql";

// Schema 1 stored no summaries: compute them from the steps (no warm-up flags existed, so every
// step counts) and the stored prediction.
void backfill_summaries_v2(sqlite3* db) {
  std::vector<std::pair<int64_t, std::string>> runs;
  {
    Stmt q(db, "SELECT id, prediction_json FROM runs");
    while (q.next()) runs.emplace_back(q.i64(0), q.text(1));
  }
  Stmt steps(db,
             "SELECT step, step_time_s, tokens_per_s, tflops_per_gpu, mfu, peak_memory_gib FROM steps "
             "WHERE run_id = ? ORDER BY idx");
  Stmt upd(db,
           "UPDATE runs SET steps_total=?, steps_measured=?, step_time_s=?, tokens_per_s=?, tflops_per_gpu=?, "
           "mfu=?, mfu_spread=?, peak_memory_gib=?, predicted_mfu=? WHERE id=?");
  for (const auto& [id, pred_text] : runs) {
    std::vector<StepMetric> v;
    steps.reset();
    steps.bind(1, id);
    while (steps.next()) {
      StepMetric m;
      m.step = static_cast<int>(steps.i64(0));
      m.step_time_s = steps.f64(1);
      m.tokens_per_s = steps.f64(2);
      m.tflops_per_gpu = steps.f64(3);
      m.mfu = steps.f64(4);
      m.peak_memory_gib = steps.f64(5);
      v.push_back(m);
    }
    auto pred = nlohmann::json::parse(pred_text, nullptr, false);
    RunSummary s = summarize(v, pred.is_discarded() ? nlohmann::json::object() : pred);
    upd.reset();
    upd.bind(1, int64_t(s.steps_total)).bind(2, int64_t(s.steps_measured)).bind(3, s.step_time_s);
    upd.bind(4, s.tokens_per_s).bind(5, s.tflops_per_gpu).bind(6, s.mfu).bind(7, s.mfu_spread);
    upd.bind(8, s.peak_memory_gib).bind(9, s.predicted_mfu).bind(10, id);
    upd.next();
  }
}

}  // namespace

void migrate_schema(sqlite3* db, int from_version) {
  if (from_version < 1) sqlite::exec_checked(db, kSchema1, "creating schema 1");
  if (from_version < 2) {
    sqlite::exec_checked(db, kSchema2, "migrating to schema 2");
    backfill_summaries_v2(db);
  }
  if (from_version < 3) sqlite::exec_checked(db, kSchema3, "migrating to schema 3");
  if (from_version < 4) sqlite::exec_checked(db, kSchema4, "migrating to schema 4");
  sqlite::exec_checked(db, "PRAGMA application_id = " + std::to_string(kRunsApplicationId), "marking the file");
  sqlite::exec_checked(db, "PRAGMA user_version = " + std::to_string(kRunsSchemaVersion), "setting the schema version");
}

}  // namespace mplan::runs
