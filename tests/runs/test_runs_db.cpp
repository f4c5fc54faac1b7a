// Runs database: round trip, tags, summaries, migration from schema 1 and from an empty file,
// refusal (and no change) of newer, foreign, garbage and corrupt files, and concurrent writers in
// several processes losing no rows.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cstdio>

#include <cmath>
#include <filesystem>
#include <map>

#include "runs/runs_db.h"
#include "runs_test_util.h"

using mplan::runs::RunRecord;
using mplan::runs::RunsDb;
using mplan::runs::StepMetric;
using nlohmann::json;

namespace {

json small_plan(int tp = 1) {
  return {{"schema", "mplan.plan/1"},
          {"model", {{"name", "tiny"}, {"num_layers", 2}, {"hidden_size", 64}, {"num_attention_heads", 4}, {"vocab_size", 256}}},
          {"cluster", {{"name", "c"}, {"gpu", {{"name", "G"}}}}},
          {"training", {{"global_batch_size", 8}, {"seq_length", 32}, {"precision", "bf16"}}},
          {"parallel", {{"world_size", 2}, {"tp", tp}}},
          {"meta", {{"by", "test"}}}};
}

RunRecord make_run(const std::string& date, double mfu, int steps = 12, int tp = 1) {
  RunRecord r;
  r.plan = small_plan(tp);
  r.source = "mplan";
  r.host = "host-a";
  r.software = {{"blas", "openblas 0.3.21"}};
  r.git_commit = "abc123";
  r.started_at = date;
  for (int i = 1; i <= steps; ++i) {
    StepMetric m;
    m.step = i;
    m.loss = 5.0 - 0.1 * i;
    m.step_time_s = 1.0 / mfu;
    m.tokens_per_s = 256 * mfu;
    m.tflops_per_gpu = 100 * mfu;
    m.mfu = i <= 2 ? mfu / 2 : mfu + 0.001 * (i % 3);  // slow warm-up steps
    m.peak_memory_gib = 10 + i;
    m.warmup = i <= 2;
    r.steps.push_back(m);
  }
  r.ops = {{"qkv_gemm", 0.01, 0.009, 4}, {"attn_core", 0.02, 0.0, 4}};
  r.prediction = {{"mfu", mfu * 1.1}, {"step_time_s", 0.9 / mfu}};
  r.tags = {"nightly"};
  return r;
}

std::unique_ptr<RunsDb> open_ok(const std::string& path) {
  auto db = RunsDb::open(path);
  EXPECT_TRUE(db.ok()) << (db.ok() ? "" : db.error().message());
  return db.ok() ? std::move(db).value() : nullptr;
}

// Opening `path` is refused with a message containing `what`, and the file keeps its bytes.
void expect_refused_untouched(const std::string& path, const std::string& what) {
  const std::string before = runs_test::read_bytes(path);
  auto db = RunsDb::open(path);
  ASSERT_FALSE(db.ok());
  EXPECT_NE(db.error().message().find(what), std::string::npos) << db.error().message();
  EXPECT_EQ(runs_test::read_bytes(path), before);
}

int64_t scalar(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* st = nullptr;
  int64_t v = -1;
  if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
    v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

std::string text_scalar(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* st = nullptr;
  std::string v;
  if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
    v = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

void exec(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
  EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

// Schema 1 exactly as the first mplan wrote it (kept here, independent of runs/schema.cpp).
const char* kSchema1Sql = R"sql(
    CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, plan_key TEXT NOT NULL, plan_json TEXT NOT NULL,
      source TEXT NOT NULL, host TEXT NOT NULL DEFAULT '', software_json TEXT NOT NULL DEFAULT '{}',
      git_commit TEXT NOT NULL DEFAULT '', started_at TEXT NOT NULL DEFAULT '',
      prediction_json TEXT NOT NULL DEFAULT '{}',
      created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')));
    CREATE INDEX runs_by_plan ON runs(plan_key, started_at);
    CREATE TABLE steps (run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, idx INTEGER NOT NULL,
      step INTEGER NOT NULL, loss REAL NOT NULL DEFAULT 0, step_time_s REAL NOT NULL,
      tokens_per_s REAL NOT NULL DEFAULT 0, tflops_per_gpu REAL NOT NULL DEFAULT 0, mfu REAL NOT NULL DEFAULT 0,
      peak_memory_gib REAL NOT NULL DEFAULT 0, PRIMARY KEY (run_id, idx)) WITHOUT ROWID;
    CREATE TABLE ops (run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, idx INTEGER NOT NULL,
      op TEXT NOT NULL, measured_s REAL NOT NULL DEFAULT 0, predicted_s REAL NOT NULL DEFAULT 0,
      calls INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (run_id, idx)) WITHOUT ROWID;
    CREATE TABLE tags (run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, tag TEXT NOT NULL,
      PRIMARY KEY (run_id, tag)) WITHOUT ROWID;
    CREATE INDEX tags_by_tag ON tags(tag);
    PRAGMA application_id = 1836084338;
)sql";

// Schema 2's additions, as mplan wrote them (a copy on purpose: old files must keep migrating even if
// runs/schema.cpp is edited).
const char* kSchema2Sql = R"sql(
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

// Run 1 of the database that `sql` (an older schema, as mplan wrote it) made at `path`, read by this
// mplan, which migrates the file on opening it.
void read_old_run(const std::string& path, const std::string& sql, RunRecord& run) {
  exec(path, sql.c_str());
  auto db = open_ok(path);
  ASSERT_TRUE(db);
  auto r = db->get_run(1);
  ASSERT_TRUE(r.ok()) << r.error().message();
  run = *r;
}

}  // namespace

TEST(RunsDb, RoundTripWithSummaryTagsAndOrder) {
  std::string path = runs_test::temp_dir() + "/runs.db";
  auto db = open_ok(path);
  ASSERT_TRUE(db);
  auto id1 = db->add_run(make_run("2024-05-02T10:00:00Z", 0.40));
  auto id2 = db->add_run(make_run("2024-05-01T10:00:00Z", 0.30, 12, 2));
  ASSERT_TRUE(id1.ok() && id2.ok());
  EXPECT_NE(id1.value(), id2.value());

  auto r = db->get_run(id1.value());
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->source, "mplan");
  EXPECT_EQ(r->host, "host-a");
  EXPECT_EQ(r->git_commit, "abc123");
  EXPECT_EQ(r->software["blas"], "openblas 0.3.21");
  EXPECT_EQ(r->plan["meta"]["by"], "test");
  EXPECT_EQ(r->steps.size(), 12u);
  EXPECT_TRUE(r->steps[0].warmup);
  EXPECT_FALSE(r->steps[5].warmup);
  EXPECT_EQ(r->ops.size(), 2u);
  EXPECT_EQ(r->ops[0].op, "qkv_gemm");
  EXPECT_EQ(r->ops[0].calls, 4);
  EXPECT_EQ(r->tags, std::vector<std::string>{"nightly"});
  EXPECT_EQ(r->plan_key, mplan::runs::plan_key(small_plan()));
  // Summary: median over the 10 measured steps, ignoring the two slow warm-up steps.
  EXPECT_EQ(r->summary.steps_total, 12);
  EXPECT_EQ(r->summary.steps_measured, 10);
  EXPECT_NEAR(r->summary.mfu, 0.401, 1e-9);
  EXPECT_NEAR(r->summary.peak_memory_gib, 22, 1e-9);
  EXPECT_NEAR(r->summary.predicted_mfu, 0.44, 1e-9);

  auto all = db->list_runs();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].id, id1.value());  // newest first by started_at
  EXPECT_TRUE((*all)[0].steps.empty());
  EXPECT_NEAR((*all)[0].summary.mfu, 0.401, 1e-9);
  auto only = db->list_runs(mplan::runs::plan_key(small_plan(2)));
  ASSERT_TRUE(only.ok());
  ASSERT_EQ(only->size(), 1u);
  EXPECT_EQ((*only)[0].id, id2.value());

  ASSERT_TRUE(db->tag_run(id2.value(), "baseline").ok());
  ASSERT_TRUE(db->tag_run(id2.value(), "baseline").ok());  // idempotent
  EXPECT_EQ(db->get_run(id2.value())->tags, (std::vector<std::string>{"baseline", "nightly"}));
  ASSERT_TRUE(db->untag_run(id2.value(), "nightly").ok());
  EXPECT_EQ(db->get_run(id2.value())->tags, std::vector<std::string>{"baseline"});
  auto bad = db->tag_run(999, "x");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("no run with id 999"), std::string::npos);
  EXPECT_FALSE(db->get_run(999).ok());
  EXPECT_FALSE(db->tag_run(id1.value(), "").ok());
}

TEST(RunsDb, PlanKeyIgnoresMetaAndProvenance) {
  json a = small_plan(), b = small_plan();
  b["meta"] = {{"other", 1}};
  b["model"]["source"] = "somewhere";
  EXPECT_EQ(mplan::runs::plan_key(a), mplan::runs::plan_key(b));
  EXPECT_NE(mplan::runs::plan_key(a), mplan::runs::plan_key(small_plan(2)));
  EXPECT_EQ(mplan::runs::plan_key(a).rfind("tiny-", 0), 0u);
}

TEST(RunsDb, RejectsBadRecordsWithoutWriting) {
  std::string path = runs_test::temp_dir() + "/runs.db";
  auto db = open_ok(path);
  RunRecord r = make_run("2024-01-01T00:00:00Z", 0.4);
  r.steps[3].mfu = std::nan("");
  auto id = db->add_run(r);
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.error().message().find("step 4: mfu is not a finite number"), std::string::npos);
  r = make_run("2024-01-01T00:00:00Z", 0.4);
  r.plan = json::array();
  EXPECT_FALSE(db->add_run(r).ok());
  EXPECT_EQ(db->list_runs()->size(), 0u);
}

TEST(RunsDb, CreatesSchemaInEmptyExistingFile) {
  std::string path = runs_test::temp_dir() + "/empty.db";
  runs_test::write_bytes(path, "");
  auto db = open_ok(path);
  ASSERT_TRUE(db);
  EXPECT_TRUE(db->add_run(make_run("2024-01-01T00:00:00Z", 0.4)).ok());
  db.reset();
  EXPECT_EQ(scalar(path, "PRAGMA user_version"), mplan::runs::kRunsSchemaVersion);
  EXPECT_EQ(scalar(path, "PRAGMA application_id"), 0x6d706c72);
  EXPECT_EQ(scalar(path, "SELECT count(*) FROM runs"), 1);
}

TEST(RunsDb, MigratesSchema1KeepingRunsAndBackfillingSummaries) {
  std::string path = runs_test::temp_dir() + "/v1.db";
  RunRecord r;
  ASSERT_NO_FATAL_FAILURE(read_old_run(path, std::string(kSchema1Sql) + R"sql(
    PRAGMA user_version = 1;
    INSERT INTO runs (plan_key, plan_json, source, started_at, prediction_json)
      VALUES ('tiny-old', '{"model":{"name":"tiny"}}', 'megatron-log', '2023-01-01T00:00:00Z', '{"mfu":0.5}');
    INSERT INTO steps (run_id, idx, step, step_time_s, mfu, peak_memory_gib) VALUES
      (1, 0, 10, 2.0, 0.30, 40), (1, 1, 20, 1.5, 0.40, 41), (1, 2, 30, 1.5, 0.41, 42);
    INSERT INTO tags VALUES (1, 'baseline');
  )sql",
                                       r));
  EXPECT_EQ(r.plan_key, "tiny-old");
  EXPECT_EQ(r.tags, std::vector<std::string>{"baseline"});
  ASSERT_EQ(r.steps.size(), 3u);
  EXPECT_FALSE(r.steps[0].warmup);  // schema 1 had no flags: every step counts
  EXPECT_EQ(r.summary.steps_measured, 3);
  EXPECT_NEAR(r.summary.mfu, 0.40, 1e-12);
  EXPECT_NEAR(r.summary.peak_memory_gib, 42, 1e-12);
  EXPECT_NEAR(r.summary.predicted_mfu, 0.5, 1e-12);
  EXPECT_TRUE(r.source_file.empty());
  EXPECT_FALSE(r.steps[0].loss);  // schema 1's placeholder 0 became NULL in schema 3
  EXPECT_NEAR(*r.steps[0].peak_memory_gib, 40, 1e-12);
  auto db = open_ok(path);
  ASSERT_TRUE(db);
  EXPECT_TRUE(db->add_run(make_run("2024-01-01T00:00:00Z", 0.4)).ok());
  db.reset();
  EXPECT_EQ(scalar(path, "PRAGMA user_version"), mplan::runs::kRunsSchemaVersion);
  auto again = open_ok(path);  // reopening a current file is a no-op
  ASSERT_TRUE(again);
  EXPECT_EQ(again->list_runs()->size(), 2u);
}

// Schema 2 as mplan wrote it before absent values were NULL: its 0 placeholders become NULL, the
// new columns take their defaults, summaries and tags stay.
TEST(RunsDb, MigratesSchema2ZerosToNull) {
  std::string path = runs_test::temp_dir() + "/v2.db";
  RunRecord r;
  ASSERT_NO_FATAL_FAILURE(read_old_run(path, std::string(kSchema1Sql) + kSchema2Sql + R"sql(
    PRAGMA user_version = 2;
    INSERT INTO runs (plan_key, plan_json, source, started_at, steps_total, steps_measured, mfu)
      VALUES ('tiny-v2', '{"model":{"name":"tiny"}}', 'megatron-log', '2024-01-01T00:00:00Z', 2, 1, 0.4);
    INSERT INTO steps (run_id, idx, step, loss, step_time_s, mfu, peak_memory_gib, warmup, reported_tflops_per_gpu)
      VALUES (1, 0, 10, 0, 2.0, 0.3, 0, 1, 0), (1, 1, 20, 4.5, 1.5, 0.4, 50, 0, 410);
    INSERT INTO tags VALUES (1, 'golden');
  )sql",
                                       r));
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_FALSE(r.steps[0].loss);
  EXPECT_FALSE(r.steps[0].peak_memory_gib);
  EXPECT_FALSE(r.steps[0].reported_tflops_per_gpu);
  EXPECT_TRUE(r.steps[0].warmup);
  EXPECT_FALSE(r.steps[1].skipped);
  EXPECT_DOUBLE_EQ(*r.steps[1].loss, 4.5);
  EXPECT_DOUBLE_EQ(*r.steps[1].reported_tflops_per_gpu, 410);
  EXPECT_EQ(r.source_job, 0);
  EXPECT_NEAR(r.summary.mfu, 0.4, 1e-12);
  EXPECT_EQ(r.tags, std::vector<std::string>{"golden"});
  EXPECT_EQ(scalar(path, "PRAGMA user_version"), mplan::runs::kRunsSchemaVersion);  // through 3 and later
  EXPECT_EQ(scalar(path, "SELECT count(*) FROM steps WHERE loss IS NULL"), 1);
}

TEST(RunsDb, AbsentValuesAndSkippedStepsRoundTrip) {
  std::string path = runs_test::temp_dir() + "/runs.db";
  auto db = open_ok(path);
  RunRecord r = make_run("2024-01-01T00:00:00Z", 0.4);
  r.steps[4].loss.reset();
  r.steps[4].peak_memory_gib.reset();
  r.steps[5].skipped = true;
  r.steps[5].mfu = 0.9;  // a skipped interval does not count
  r.steps[6].reported_tflops_per_gpu = 250.0;
  r.steps[6].reported_tokens_per_s_per_gpu = 3100.0;
  r.source_job = 2;
  auto id = db->add_run(r);
  ASSERT_TRUE(id.ok()) << id.error().message();
  auto back = db->get_run(id.value());
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->steps[4].loss);
  EXPECT_FALSE(back->steps[4].peak_memory_gib);
  EXPECT_TRUE(back->steps[5].skipped);
  EXPECT_DOUBLE_EQ(*back->steps[6].reported_tflops_per_gpu, 250.0);
  EXPECT_DOUBLE_EQ(*back->steps[6].reported_tokens_per_s_per_gpu, 3100.0);
  EXPECT_FALSE(back->steps[7].reported_tflops_per_gpu);
  EXPECT_EQ(back->source_job, 2);
  EXPECT_EQ(back->summary.steps_measured, 9);
  EXPECT_NEAR(back->summary.mfu, 0.401, 1e-9);
  // A non-finite value is refused (absent values are written as absent, not NaN).
  r.steps[3].loss = std::nan("");
  auto bad = db->add_run(r);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("loss is not a finite number"), std::string::npos);
}

TEST(RunsDb, AddRunsIsAllOrNothing) {
  std::string path = runs_test::temp_dir() + "/runs.db";
  auto db = open_ok(path);
  RunRecord good = make_run("2024-01-01T00:00:00Z", 0.4), bad = good;
  bad.steps[0].step_time_s = std::nan("");
  auto ids = db->add_runs({good, bad});
  ASSERT_FALSE(ids.ok());
  EXPECT_NE(ids.error().message().find("run 2: run.step 1"), std::string::npos) << ids.error().message();
  EXPECT_EQ(db->list_runs()->size(), 0u);
  auto two = db->add_runs({good, good});
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->size(), 2u);
  EXPECT_EQ(db->list_runs()->size(), 2u);
}

TEST(RunsDb, NewerSchemaIsRefusedAndUntouched) {
  std::string path = runs_test::temp_dir() + "/newer.db";
  {
    auto db = open_ok(path);
    ASSERT_TRUE(db->add_run(make_run("2024-01-01T00:00:00Z", 0.4)).ok());
  }
  exec(path, "PRAGMA journal_mode=DELETE; PRAGMA user_version = 99;");
  expect_refused_untouched(path, "newer mplan (schema 99");
}

TEST(RunsDb, ForeignSqliteFileIsRefusedAndUntouched) {
  std::string path = runs_test::temp_dir() + "/foreign.db";
  exec(path, "CREATE TABLE photos (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO photos VALUES (1, 'cat');");
  expect_refused_untouched(path, "another program");
  expect_refused_untouched(path, "untouched");
  EXPECT_EQ(scalar(path, "SELECT count(*) FROM photos"), 1);
}

TEST(RunsDb, OpenExistingRequiresTheFile) {
  std::string dir = runs_test::temp_dir();
  auto missing = RunsDb::open_existing(dir + "/missing.db");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("no such file"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir + "/missing.db"));
  auto d = RunsDb::open(dir);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message().find("is a directory"), std::string::npos);
  ASSERT_TRUE(RunsDb::open(dir + "/new.db").ok());
  EXPECT_TRUE(RunsDb::open_existing(dir + "/new.db").ok());
}

TEST(RunsDb, NonDatabaseFileIsRefusedAndUntouched) {
  std::string path = runs_test::temp_dir() + "/notes.txt";
  runs_test::write_bytes(path, "step,mfu\n1,0.4\n");
  expect_refused_untouched(path, "not an SQLite database");
  EXPECT_EQ(runs_test::read_bytes(path), "step,mfu\n1,0.4\n");
}

TEST(RunsDb, CorruptDatabaseIsRefusedAndUntouched) {
  std::string path = runs_test::temp_dir() + "/corrupt.db";
  {
    auto db = open_ok(path);
    for (int i = 0; i < 20; ++i) ASSERT_TRUE(db->add_run(make_run("2024-01-01T00:00:00Z", 0.4, 200)).ok());
  }
  exec(path, "PRAGMA journal_mode=DELETE;");
  std::string bytes = runs_test::read_bytes(path);
  ASSERT_GT(bytes.size(), 8u * 4096);
  for (size_t i = 4096; i < bytes.size(); i += 97) bytes[i] = static_cast<char>(0xA5);  // every page after the first
  runs_test::write_bytes(path, bytes);
  expect_refused_untouched(path, "damaged");
}

TEST(RunsDb, ConcurrentWritersInSeveralProcessesLoseNothing) {
  std::string path = runs_test::temp_dir() + "/shared.db";
  constexpr int kProcs = 4, kRunsEach = 25, kSteps = 20;
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  std::vector<pid_t> kids;
  for (int p = 0; p < kProcs; ++p) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(go[1]);
      char c;
      if (read(go[0], &c, 1) != 0) _exit(3);  // wait until the parent closes the pipe: all start together
      auto db = RunsDb::open(path);           // the first ones race to create the schema
      if (!db.ok()) {
        std::fprintf(stderr, "proc %d: open: %s\n", p, db.error().message().c_str());
        _exit(1);
      }
      for (int i = 0; i < kRunsEach; ++i) {
        RunRecord r = make_run("2024-01-01T00:00:" + std::to_string(10 + i) + "Z", 0.3 + 0.01 * p, kSteps);
        r.host = "proc-" + std::to_string(p);
        auto added = db.value()->add_run(r);
        if (!added.ok()) {
          std::fprintf(stderr, "proc %d: add_run: %s\n", p, added.error().message().c_str());
          _exit(2);
        }
      }
      _exit(0);
    }
    kids.push_back(pid);
  }
  close(go[0]);
  close(go[1]);
  for (pid_t k : kids) {
    int st = 0;
    ASSERT_EQ(waitpid(k, &st, 0), k);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "child exit " << WEXITSTATUS(st);
  }
  auto db = open_ok(path);
  ASSERT_TRUE(db);
  auto all = db->list_runs();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), size_t(kProcs * kRunsEach));
  std::map<std::string, int> per_host;
  for (const auto& r : *all) {
    ++per_host[r.host];
    EXPECT_EQ(r.summary.steps_total, kSteps);
  }
  for (int p = 0; p < kProcs; ++p) EXPECT_EQ(per_host["proc-" + std::to_string(p)], kRunsEach);
  db.reset();
  EXPECT_EQ(scalar(path, "SELECT count(*) FROM steps"), int64_t(kProcs) * kRunsEach * kSteps);
  EXPECT_EQ(text_scalar(path, "PRAGMA journal_mode"), "wal");
}
