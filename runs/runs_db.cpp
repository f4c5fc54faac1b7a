// RunsDb over SQLite: validation of existing files before any write, WAL, busy timeout, migrations,
// and one write transaction per add_run / tag change.
#include "runs/runs_db.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>

#include "runs/schema.h"
#include "runs/sqlite_util.h"

namespace mplan::runs {

using nlohmann::json;

namespace {

// Concurrent writers (several `mplan train` ranks or imports) wait this long for the write lock.
constexpr int kBusyTimeoutMs = 60000;
// Files up to this size get PRAGMA quick_check on open (~1 s per 75 MB); larger ones report damage
// when a read reaches it (SQLITE_CORRUPT), still before any write to the damaged pages.
constexpr long long kIntegrityCheckMaxBytes = 64ll << 20;

// JSON text for storage; invalid UTF-8 in user-given strings is replaced, never thrown.
std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json parse_or(const std::string& text, const json& fallback) {
  auto j = json::parse(text, nullptr, false);
  return j.is_discarded() ? fallback : j;
}

std::string check_finite(const StepMetric& m) {
  struct F {
    const char* name;
    std::optional<double> v;
  };
  for (F f : {F{"loss", m.loss}, F{"step_time_s", m.step_time_s}, F{"tokens_per_s", m.tokens_per_s},
              F{"tflops_per_gpu", m.tflops_per_gpu}, F{"mfu", m.mfu}, F{"peak_memory_gib", m.peak_memory_gib},
              F{"reported_tflops_per_gpu", m.reported_tflops_per_gpu},
              F{"reported_tokens_per_s_per_gpu", m.reported_tokens_per_s_per_gpu}})
    if (f.v && !std::isfinite(*f.v))
      return "step " + std::to_string(m.step) + ": " + f.name + " is not a finite number (leave it absent instead)";
  if (m.step_time_s < 0) return "step " + std::to_string(m.step) + ": step_time_s is negative";
  // physical limits: no training step lasts 11 days, no GPU holds an exabyte
  if (m.step_time_s > 1e6)
    return "step " + std::to_string(m.step) + ": step_time_s = " + std::to_string(m.step_time_s) +
           " s is more than 11 days per step; not a measurement (check the log's elapsed time units)";
  if (m.peak_memory_gib.value_or(0) > 1e6 || m.tokens_per_s > 1e15 || m.tflops_per_gpu > 1e6 ||
      m.reported_tflops_per_gpu.value_or(0) > 1e6)
    return "step " + std::to_string(m.step) + ": a throughput or memory value is beyond any real machine";
  return "";
}

}  // namespace

bool valid_run_status(const std::string& s) { return s == "completed" || s == "aborted" || s == "diverged" || s == "failed"; }

namespace {

std::vector<std::string> check_run(const RunRecord& run) {
  std::vector<std::string> problems;
  if (!run.plan.is_object()) problems.push_back("run.plan: expected the mplan.plan/1 JSON object");
  if (run.source.empty()) problems.push_back("run.source: empty; expected mplan, megatron-log or csv");
  if (!valid_run_status(run.status))
    problems.push_back("run.status: '" + run.status + "'; expected completed, aborted, diverged or failed");
  for (const auto& m : run.steps)
    if (auto e = check_finite(m); !e.empty()) problems.push_back("run." + e);
  for (const auto& o : run.ops)
    if (o.op.empty() || !std::isfinite(o.measured_s) || !std::isfinite(o.predicted_s))
      problems.push_back("run.ops: op '" + o.op + "' needs a name and finite times");
  for (const auto& t : run.tags)
    if (t.empty()) problems.push_back("run.tags: a tag is empty");
  return problems;
}

class SqliteRunsDb final : public RunsDb {
 public:
  SqliteRunsDb(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}
  ~SqliteRunsDb() override { sqlite3_close_v2(db_); }

  const std::string& path() const override { return path_; }

  Expected<int64_t> add_run(const RunRecord& run) override {
    auto ids = add_runs({run});
    if (!ids) return ids.error();
    return ids.value().front();
  }

  Expected<std::vector<int64_t>> add_runs(const std::vector<RunRecord>& runs) override {
    std::vector<std::string> problems;
    for (size_t i = 0; i < runs.size(); ++i)
      for (auto& p : check_run(runs[i])) problems.push_back(runs.size() > 1 ? "run " + std::to_string(i + 1) + ": " + p : p);
    if (!problems.empty()) return Error(problems);
    try {
      WriteTxn txn(db_);
      std::vector<int64_t> ids;
      ids.reserve(runs.size());
      for (const auto& r : runs) ids.push_back(insert_run(r));
      txn.commit();
      return ids;
    } catch (const SqlError& e) {
      return fail("adding a run", e);
    }
  }

  Expected<RunRecord> get_run(int64_t id) override {
    try {
      ReadTxn txn(db_);
      std::string sql = std::string(kRunColumns) + " WHERE id = ?";
      Stmt q(db_, sql.c_str());
      q.bind(1, id);
      if (!q.next()) return Error(no_such_run(id));
      RunRecord r = read_run(q);
      Stmt st(db_,
              "SELECT step, loss, step_time_s, tokens_per_s, tflops_per_gpu, mfu, peak_memory_gib, warmup, "
              "reported_tflops_per_gpu, skipped, reported_tokens_per_s_per_gpu FROM steps WHERE run_id = ? "
              "ORDER BY idx");
      st.bind(1, id);
      while (st.next()) {
        StepMetric m;
        m.step = static_cast<int>(st.i64(0));
        m.loss = st.opt_f64(1);
        m.step_time_s = st.f64(2);
        m.tokens_per_s = st.f64(3);
        m.tflops_per_gpu = st.f64(4);
        m.mfu = st.f64(5);
        m.peak_memory_gib = st.opt_f64(6);
        m.warmup = st.i64(7) != 0;
        m.reported_tflops_per_gpu = st.opt_f64(8);
        m.skipped = st.i64(9) != 0;
        m.reported_tokens_per_s_per_gpu = st.opt_f64(10);
        r.steps.push_back(m);
      }
      Stmt op(db_, "SELECT op, measured_s, predicted_s, calls FROM ops WHERE run_id = ? ORDER BY idx");
      op.bind(1, id);
      while (op.next()) r.ops.push_back({op.text(0), op.f64(1), op.f64(2), op.i64(3)});
      auto tags = read_tags(id);
      r.tags = tags[id];
      return r;
    } catch (const SqlError& e) {
      return fail("reading run " + std::to_string(id), e);
    }
  }

  Expected<std::vector<RunRecord>> list_runs(const std::string& key) override {
    try {
      ReadTxn txn(db_);
      std::string sql =
          std::string(kRunColumns) + (key.empty() ? "" : " WHERE plan_key = ?") + " ORDER BY started_at DESC, id DESC";
      Stmt q(db_, sql.c_str());
      if (!key.empty()) q.bind(1, key);
      std::vector<RunRecord> out;
      while (q.next()) out.push_back(read_run(q));
      auto tags = read_tags(-1);
      for (auto& r : out)
        if (auto it = tags.find(r.id); it != tags.end()) r.tags = it->second;
      return out;
    } catch (const SqlError& e) {
      return fail("listing runs", e);
    }
  }

  Status tag_run(int64_t id, const std::string& tag) override { return change_tag(id, tag, true); }
  Status untag_run(int64_t id, const std::string& tag) override { return change_tag(id, tag, false); }

 private:
  static constexpr const char* kRunColumns =
      "SELECT id, plan_key, plan_json, source, host, software_json, git_commit, started_at, prediction_json, "
      "source_file, warnings_json, steps_total, steps_measured, step_time_s, tokens_per_s, tflops_per_gpu, mfu, "
      "mfu_spread, peak_memory_gib, predicted_mfu, source_job, status FROM runs";

  // Inserts one run with its steps, ops and tags inside the caller's write transaction.
  int64_t insert_run(const RunRecord& run) {
    std::string key = run.plan_key.empty() ? plan_key(run.plan) : run.plan_key;
    RunSummary s = summarize(run.steps, run.prediction);
    Stmt ins(db_,
             "INSERT INTO runs (plan_key, plan_json, source, host, software_json, git_commit, started_at, "
             "prediction_json, source_file, warnings_json, steps_total, steps_measured, step_time_s, "
             "tokens_per_s, tflops_per_gpu, mfu, mfu_spread, peak_memory_gib, predicted_mfu, source_job, status) "
             "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    ins.bind(1, key).bind(2, dump(run.plan)).bind(3, run.source).bind(4, run.host);
    ins.bind(5, dump(run.software.is_null() ? json::object() : run.software)).bind(6, run.git_commit);
    ins.bind(7, run.started_at).bind(8, dump(run.prediction.is_null() ? json::object() : run.prediction));
    ins.bind(9, run.source_file).bind(10, dump(json(run.warnings)));
    ins.bind(11, int64_t(s.steps_total)).bind(12, int64_t(s.steps_measured)).bind(13, s.step_time_s);
    ins.bind(14, s.tokens_per_s).bind(15, s.tflops_per_gpu).bind(16, s.mfu).bind(17, s.mfu_spread);
    ins.bind(18, s.peak_memory_gib).bind(19, s.predicted_mfu).bind(20, int64_t(run.source_job)).bind(21, run.status);
    ins.next();
    int64_t id = sqlite3_last_insert_rowid(db_);
    Stmt st(db_,
            "INSERT INTO steps (run_id, idx, step, loss, step_time_s, tokens_per_s, tflops_per_gpu, mfu, "
            "peak_memory_gib, warmup, reported_tflops_per_gpu, skipped, reported_tokens_per_s_per_gpu) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)");
    for (size_t i = 0; i < run.steps.size(); ++i) {
      const StepMetric& m = run.steps[i];
      st.reset();
      st.bind(1, id).bind(2, int64_t(i)).bind(3, int64_t(m.step)).bind(4, m.loss).bind(5, m.step_time_s);
      st.bind(6, m.tokens_per_s).bind(7, m.tflops_per_gpu).bind(8, m.mfu).bind(9, m.peak_memory_gib);
      st.bind(10, int64_t(m.warmup ? 1 : 0)).bind(11, m.reported_tflops_per_gpu);
      st.bind(12, int64_t(m.skipped ? 1 : 0)).bind(13, m.reported_tokens_per_s_per_gpu);
      st.next();
    }
    Stmt op(db_, "INSERT INTO ops (run_id, idx, op, measured_s, predicted_s, calls) VALUES (?,?,?,?,?,?)");
    for (size_t i = 0; i < run.ops.size(); ++i) {
      const OpTiming& o = run.ops[i];
      op.reset();
      op.bind(1, id).bind(2, int64_t(i)).bind(3, o.op).bind(4, o.measured_s).bind(5, o.predicted_s);
      op.bind(6, o.calls);
      op.next();
    }
    Stmt tg(db_, "INSERT OR IGNORE INTO tags (run_id, tag) VALUES (?,?)");
    for (const auto& t : run.tags) {
      tg.reset();
      tg.bind(1, id).bind(2, t);
      tg.next();
    }
    return id;
  }

  static RunRecord read_run(const Stmt& q) {
    RunRecord r;
    r.id = q.i64(0);
    r.plan_key = q.text(1);
    r.plan = parse_or(q.text(2), json::object());
    r.source = q.text(3);
    r.host = q.text(4);
    r.software = parse_or(q.text(5), json::object());
    r.git_commit = q.text(6);
    r.started_at = q.text(7);
    r.prediction = parse_or(q.text(8), json::object());
    r.source_file = q.text(9);
    json w = parse_or(q.text(10), json::array());
    if (w.is_array())
      for (const auto& s : w)
        if (s.is_string()) r.warnings.push_back(s.get<std::string>());
    RunSummary& s = r.summary;
    s.steps_total = static_cast<int>(q.i64(11));
    s.steps_measured = static_cast<int>(q.i64(12));
    s.step_time_s = q.f64(13);
    s.tokens_per_s = q.f64(14);
    s.tflops_per_gpu = q.f64(15);
    s.mfu = q.f64(16);
    s.mfu_spread = q.f64(17);
    s.peak_memory_gib = q.f64(18);
    s.predicted_mfu = q.f64(19);
    r.source_job = static_cast<int>(q.i64(20));
    r.status = q.text(21);
    return r;
  }

  // Tags of one run (id >= 0) or of all runs (id < 0), sorted.
  std::map<int64_t, std::vector<std::string>> read_tags(int64_t id) {
    std::map<int64_t, std::vector<std::string>> out;
    Stmt q(db_, id >= 0 ? "SELECT run_id, tag FROM tags WHERE run_id = ? ORDER BY tag"
                        : "SELECT run_id, tag FROM tags ORDER BY run_id, tag");
    if (id >= 0) q.bind(1, id);
    while (q.next()) out[q.i64(0)].push_back(q.text(1));
    return out;
  }

  Status change_tag(int64_t id, const std::string& tag, bool add) {
    if (tag.empty()) return Error("tag: empty; give a name such as 'baseline'");
    try {
      WriteTxn txn(db_);
      Stmt exists(db_, "SELECT 1 FROM runs WHERE id = ?");
      exists.bind(1, id);
      if (!exists.next()) return Error(no_such_run(id));
      Stmt q(db_,
             add ? "INSERT OR IGNORE INTO tags (run_id, tag) VALUES (?,?)" : "DELETE FROM tags WHERE run_id = ? AND tag = ?");
      q.bind(1, id).bind(2, tag);
      q.next();
      txn.commit();
      return {};
    } catch (const SqlError& e) {
      return fail(add ? "tagging a run" : "removing a tag", e);
    }
  }

  std::string no_such_run(int64_t id) const {
    return "runs database " + path_ + ": no run with id " + std::to_string(id) + " (see 'mplan runs list --db " + path_ + "')";
  }

  Error fail(const std::string& what, const SqlError& e) const {
    std::string hint;
    if (e.code == SQLITE_BUSY || e.code == SQLITE_LOCKED)
      hint = "; another process held the write lock for over " + std::to_string(kBusyTimeoutMs / 1000) + " s";
    else if (e.code == SQLITE_CORRUPT || e.code == SQLITE_NOTADB)
      hint = "; the file is damaged: restore it from a backup";
    else if (e.code == SQLITE_READONLY || e.code == SQLITE_CANTOPEN || e.code == SQLITE_IOERR)
      hint = "; check that the file and its directory are writable";
    return Error("runs database " + path_ + ": " + what + " failed: " + e.message + hint);
  }

  std::string path_;
  sqlite3* db_;
};

bool file_size(const std::string& path, long long& size, bool& is_dir) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  size = static_cast<long long>(st.st_size);
  is_dir = S_ISDIR(st.st_mode);
  return true;
}

// What an existing file holds, read without writing anything.
struct Probe {
  int32_t app_id = 0;
  int user_version = 0;
  int64_t objects = 0;
};

Probe probe(sqlite3* db, bool check_integrity) {
  Probe p;
  {
    Stmt q(db, "PRAGMA application_id");
    if (q.next()) p.app_id = static_cast<int32_t>(q.i64(0));
  }
  {
    Stmt q(db, "PRAGMA user_version");
    if (q.next()) p.user_version = static_cast<int>(q.i64(0));
  }
  {
    Stmt q(db, "SELECT count(*) FROM sqlite_master");
    if (q.next()) p.objects = q.i64(0);
  }
  if (check_integrity) {
    Stmt q(db, "PRAGMA quick_check");
    if (q.next() && q.text(0) != "ok") throw SqlError{SQLITE_CORRUPT, "integrity check: " + q.text(0)};
  }
  return p;
}

}  // namespace

Expected<std::unique_ptr<RunsDb>> RunsDb::open(const std::string& path) {
  const std::string leave =
      "; mplan left the file untouched. Pass --db a new file name or a runs database "
      "written by mplan.";
  if (path.empty()) return Error("runs database: empty path; pass --db FILE (created when missing)");
  long long size = 0;
  bool is_dir = false;
  bool exists = file_size(path, size, is_dir);
  if (is_dir) return Error("runs database " + path + ": is a directory; pass --db a file name such as runs.db");
  struct stat st {};
  if (exists && ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    return Error("runs database " + path +
                 ": not a regular file (a device, FIFO or socket); pass --db a file name "
                 "such as runs.db");
  if (exists && size > 0) {
    char header[16] = {};
    std::ifstream in(path, std::ios::binary);
    if (!in) return Error("runs database " + path + ": cannot read the file; check its permissions");
    in.read(header, sizeof header);
    if (in.gcount() < 16 || std::memcmp(header, "SQLite format 3", 16) != 0)
      return Error("runs database " + path + ": not an SQLite database (a foreign or corrupt file)" + leave);
  }
  sqlite3* raw = nullptr;
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  auto db = std::make_unique<SqliteRunsDb>(path, raw);  // closes `raw` on every exit
  if (rc != SQLITE_OK)
    return Error("runs database " + path + ": cannot open: " + (raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)) +
                 "; check that the directory exists and is writable");
  sqlite3_busy_timeout(raw, kBusyTimeoutMs);
  sqlite3_extended_result_codes(raw, 0);
  // 1. Look before writing anything: foreign, newer or damaged files stay as they are.
  Probe p;
  try {
    ReadTxn snapshot(raw);  // one consistent view: another process may be creating the schema right now
    p = probe(raw, exists && size > 0 && size <= kIntegrityCheckMaxBytes);
  } catch (const SqlError& e) {
    if (e.code == SQLITE_BUSY)
      return Error("runs database " + path + ": locked by another process for over " + std::to_string(kBusyTimeoutMs / 1000) +
                   " s; try again");
    return Error("runs database " + path + ": damaged or not a database (" + e.message + ")" + leave);
  }
  bool ours = p.app_id == kRunsApplicationId;
  bool empty = p.app_id == 0 && p.user_version == 0 && p.objects == 0;
  if (!ours && !empty)
    return Error("runs database " + path + ": an SQLite database of another program (application_id " + std::to_string(p.app_id) +
                 ", " + std::to_string(p.objects) + " schema objects)" + leave);
  if (ours && p.user_version > kRunsSchemaVersion)
    return Error("runs database " + path + ": written by a newer mplan (schema " + std::to_string(p.user_version) +
                 ", this mplan reads up to " + std::to_string(kRunsSchemaVersion) +
                 "); mplan left the file untouched. Use a newer mplan or another --db file.");
  // 2. Ours or empty: WAL, durability, foreign keys, then migrate under the write lock.
  try {
    sqlite::exec_checked(raw, "PRAGMA foreign_keys = ON", "enabling foreign keys");
    sqlite::check(raw, sqlite::enable_wal(raw, kBusyTimeoutMs), "switching to WAL");
    sqlite::exec_checked(raw, "PRAGMA synchronous = FULL", "setting durability");
    if (!ours || p.user_version < kRunsSchemaVersion) {
      WriteTxn txn(raw);
      Probe now = probe(raw, false);  // another process may have migrated meanwhile
      if (now.app_id == kRunsApplicationId && now.user_version > kRunsSchemaVersion)
        return Error("runs database " + path + ": migrated to a newer schema by another process");
      bool now_ours = now.app_id == kRunsApplicationId;
      if (!now_ours && now.objects > 0)
        return Error("runs database " + path + ": another program created tables in it meanwhile" + leave);
      if (!now_ours || now.user_version < kRunsSchemaVersion) migrate_schema(raw, now_ours ? now.user_version : 0);
      txn.commit();
    }
  } catch (const SqlError& e) {
    return Error("runs database " + path + ": preparing the schema failed: " + e.message);
  }
  return std::unique_ptr<RunsDb>(std::move(db));
}

Expected<std::unique_ptr<RunsDb>> RunsDb::open_existing(const std::string& path) {
  long long size = 0;
  bool is_dir = false;
  if (!path.empty() && !file_size(path, size, is_dir))
    return Error("runs database " + path +
                 ": no such file; check --db (runs are added with 'mplan runs import' "
                 "or 'mplan train')");
  return open(path);
}

}  // namespace mplan::runs
