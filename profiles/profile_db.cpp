// Profile database: opening with checks that never touch a file we cannot use, migrations, and
// row reading/writing (see profile_db.h).
#include "profiles/profile_db.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <utility>

#include "core/strict_json.h"
#include "core/time_format.h"

namespace mplan::profiles {

using nlohmann::json;

namespace {

constexpr int kBusyTimeoutMs = 10000;

std::string untouched(const std::string& path) { return " The file " + path + " was not changed."; }

// What a read-only look at an existing file found.
struct Inspection {
  int version = 0;
  bool empty = false;  // a valid SQLite file without tables, or a 0-byte file: initialise it
};

using sqlite::is_busy;

Error locked_error(const std::string& path) {
  return Error(path + ": the profile database is locked by another process (waited " + std::to_string(kBusyTimeoutMs / 1000) +
               " s); wait for that process to finish, or give another --db file." + untouched(path));
}

Error corrupt_error(const std::string& path, const std::string& why) {
  return Error(path + ": not a readable SQLite database (" + why +
               "); give a new --db file, or rescue the old one with `sqlite3 " + path + " .recover`." + untouched(path));
}

Error foreign_error(const std::string& path, const std::string& why) {
  return Error(path + ": an SQLite database, but not an mplan profile database (" + why +
               "); give a new file name to --db, or an existing mplan profile database." + untouched(path));
}

Expected<Inspection> inspect_existing(const std::string& path, off_t size) {
  Inspection r;
  if (size == 0) {
    r.empty = true;
    return r;
  }
  {
    std::ifstream in(path, std::ios::binary);
    if (!in)
      return Error("cannot read " + path + ": " + std::strerror(errno) + "; check its permissions, or give another --db file.");
    char hdr[16] = {};
    in.read(hdr, sizeof hdr);
    if (in.gcount() < 16 || std::memcmp(hdr, "SQLite format 3", 16) != 0)
      return corrupt_error(path, "the file does not start with the SQLite header: corrupt, or another kind of file");
  }
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
  Connection c(raw);
  if (rc != SQLITE_OK) return corrupt_error(path, c.errmsg());
  sqlite3_busy_timeout(c.get(), kBusyTimeoutMs);
  auto scalar = [&](const char* sql, std::string& out) -> int {
    Statement s(c, sql);
    if (!s.ok()) return c.errcode();
    int step = s.step();
    if (step == SQLITE_ROW) out = s.text(0);
    return step == SQLITE_ROW || step == SQLITE_DONE ? SQLITE_OK : c.errcode();
  };
  std::string version, tables, app, check;
  rc = scalar("PRAGMA user_version", version);
  if (rc == SQLITE_OK) rc = scalar("SELECT count(*) FROM sqlite_master", tables);
  if (is_busy(rc)) return locked_error(path);
  if (rc != SQLITE_OK) return corrupt_error(path, c.errmsg());
  r.version = std::atoi(version.c_str());
  if (r.version == 0 && std::atoi(tables.c_str()) == 0) {
    r.empty = true;
    return r;
  }
  rc = scalar("SELECT value FROM meta WHERE key = 'application'", app);
  if (is_busy(rc)) return locked_error(path);
  if (rc != SQLITE_OK || app != kApplication)
    return foreign_error(path, rc != SQLITE_OK ? "it has no mplan meta table" : "its application marker is '" + app + "'");
  if (r.version > kSchemaVersion)
    return Error(path + ": written by a newer mplan (profile schema version " + std::to_string(r.version) +
                 "; this mplan reads up to version " + std::to_string(kSchemaVersion) +
                 "); use that newer mplan, or give another --db file." + untouched(path));
  rc = scalar("PRAGMA quick_check", check);
  if (is_busy(rc)) return locked_error(path);
  if (rc != SQLITE_OK || check != "ok") return corrupt_error(path, rc != SQLITE_OK ? c.errmsg() : "integrity check: " + check);
  return r;
}

Status apply_migrations(const Connection& c, const std::string& path, int target) {
  Transaction tx(c);
  if (!tx.error().empty()) {
    if (is_busy(c.errcode())) return locked_error(path);
    return Error(path + ": cannot start a transaction: " + tx.error());
  }
  Statement v(c, "PRAGMA user_version");
  int current = v.ok() && v.step() == SQLITE_ROW ? int(v.i64(0)) : 0;
  const auto& migs = schema_migrations();
  for (int i = current; i < target; ++i) {
    std::string e = c.exec(migs[size_t(i)]);
    if (!e.empty())
      return Error(path + ": schema migration " + std::to_string(i) + " -> " + std::to_string(i + 1) + " failed: " + e);
  }
  if (current < target) {
    std::string e = c.exec("PRAGMA user_version = " + std::to_string(target));
    if (!e.empty()) return Error(path + ": cannot set the schema version: " + e);
  }
  std::string e = tx.commit();
  if (!e.empty()) return is_busy(c.errcode()) ? Status(locked_error(path)) : Status(Error(path + ": commit failed: " + e));
  return {};
}

Expected<Connection> connect(const std::string& path, int flags) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  Connection c(raw);
  if (rc != SQLITE_OK)
    return Error("cannot open " + path + ": " + c.errmsg() +
                 "; check the directory exists and is writable, or give another --db file.");
  sqlite3_busy_timeout(c.get(), kBusyTimeoutMs);
  sqlite3_extended_result_codes(c.get(), 1);
  return c;
}

Status write_error(const Connection& c, const std::string& path, const std::string& what) {
  if (is_busy(c.errcode())) return locked_error(path);
  return Error(path + ": " + what + ": " + c.errmsg());
}

// A JSON column, or `fallback` when the text is not JSON or (for an object fallback) not an object:
// a damaged or hand-edited row must not reach code that iterates an object's keys.
json parse_json_or(const std::string& text, json fallback) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || (fallback.is_object() && !j.is_object())) return fallback;
  return j;
}

const char* kKernelColumns =
    "device_id, session_id, op, pass, dtype, m, n, k, groups, batch, heads, q_len, kv_len, head_dim, causal, "
    "flops, bytes, reps, median_us, p10_us, p90_us, impl, source";
const char* kCollectiveColumns =
    "device_id, session_id, op, group_size, members_per_node, domains, bytes, dtype, reps, median_us, p10_us, p90_us, "
    "algbw_gbps, busbw_gbps, transport, impl, source";

}  // namespace

Expected<ProfileDb> ProfileDb::open(const std::string& path, OpenMode mode) {
  const bool memory = path == ":memory:";
  struct stat st {};
  const bool exists = !memory && ::stat(path.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) return Error(path + " is a directory; give a file name to --db.");
  if (exists && !S_ISREG(st.st_mode))
    return Error(path + " is not a regular file (a device, FIFO or socket); give a file name to --db.");
  if (!exists && !memory && mode == OpenMode::read_only)
    return Error(path + ": no such profile database; run `mplan profile --db " + path + "` first, or check the path.");
  Inspection ins;
  if (exists) {
    auto r = inspect_existing(path, st.st_size);
    if (!r) return r.error();
    ins = *r;
  } else {
    ins.empty = true;
  }
  if (mode == OpenMode::read_only) {
    if (ins.empty) return Error(path + ": an empty database, not a profile; run `mplan profile --db " + path + "` first.");
    if (ins.version < kSchemaVersion)
      return Error(path + ": profile schema version " + std::to_string(ins.version) + " is older than this mplan's (" +
                   std::to_string(kSchemaVersion) + "); open it once read-write (e.g. `mplan calibrate --db " + path +
                   "`) to migrate it.");
    auto c = connect(path, SQLITE_OPEN_READONLY);
    if (!c) return c.error();
    return ProfileDb(std::move(c).value(), path);
  }
  auto c = connect(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  if (!c) return c.error();
  Connection conn = std::move(c).value();
  if (!memory) {
    // WAL (sqlite::enable_wal retries the exclusive lock it needs until the busy timeout)
    if (int rc = sqlite::enable_wal(conn.get(), kBusyTimeoutMs); rc != SQLITE_OK)
      return is_busy(rc) ? locked_error(path) : Status(write_error(conn, path, "cannot switch to WAL")).error();
  }
  std::string e = conn.exec("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;");
  if (!e.empty()) return Error(path + ": " + e);
  if (auto s = apply_migrations(conn, path, kSchemaVersion); !s) return s.error();
  return ProfileDb(std::move(conn), path);
}

Status create_database_at_version(const std::string& path, int version) {
  auto c = connect(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  if (!c) return c.error();
  return apply_migrations(*c, path, version);
}

int ProfileDb::schema_version() const {
  Statement s(db_, "PRAGMA user_version");
  return s.ok() && s.step() == SQLITE_ROW ? int(s.i64(0)) : -1;
}

Expected<int64_t> ProfileDb::add_device(const Device& d) {
  Transaction tx(db_);
  if (!tx.error().empty()) return write_error(db_, path_, "cannot start a transaction").error();
  Statement s(db_,
              "INSERT INTO devices(kind, name, host, peak_tflops, hbm_gbps, memory_gib, sm_count, driver, libraries, "
              "created_at, source, cluster) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)");
  if (!s.ok()) return Error(path_ + ": " + s.error());
  s.bind(1, d.kind).bind(2, d.name).bind(3, d.host).bind(4, dump_json(json(d.peak_tflops))).bind(5, d.hbm_gbps);
  s.bind(6, d.memory_gib).bind(7, d.sm_count).bind(8, d.driver).bind(9, dump_json(d.libraries));
  s.bind(10, d.created_at.empty() ? utc_now_iso() : d.created_at).bind(11, d.source).bind(12, d.cluster);
  if (s.step() != SQLITE_DONE) return write_error(db_, path_, "cannot add the device").error();
  int64_t id = sqlite3_last_insert_rowid(db_.get());
  if (auto e = tx.commit(); !e.empty()) return write_error(db_, path_, "commit failed").error();
  return id;
}

Status ProfileDb::update_device(const Device& d) {
  Transaction tx(db_);
  if (!tx.error().empty()) return write_error(db_, path_, "cannot start a transaction");
  Statement s(db_,
              "UPDATE devices SET kind=?, name=?, host=?, peak_tflops=?, hbm_gbps=?, memory_gib=?, sm_count=?, driver=?, "
              "libraries=?, source=?, cluster=? WHERE id=?");
  if (!s.ok()) return Error(path_ + ": " + s.error());
  s.bind(1, d.kind).bind(2, d.name).bind(3, d.host).bind(4, dump_json(json(d.peak_tflops))).bind(5, d.hbm_gbps);
  s.bind(6, d.memory_gib).bind(7, d.sm_count).bind(8, d.driver).bind(9, dump_json(d.libraries)).bind(10, d.source);
  s.bind(11, d.cluster).bind(12, d.id);
  if (s.step() != SQLITE_DONE) return write_error(db_, path_, "cannot update the device");
  if (auto e = tx.commit(); !e.empty()) return write_error(db_, path_, "commit failed");
  return {};
}

Expected<int64_t> ProfileDb::begin_session(int64_t device_id, const std::string& kind, const std::string& command) {
  Transaction tx(db_);
  if (!tx.error().empty()) return write_error(db_, path_, "cannot start a transaction").error();
  Statement s(db_, "INSERT INTO sessions(device_id, kind, command, started_at, status) VALUES (?,?,?,?,'running')");
  if (!s.ok()) return Error(path_ + ": " + s.error());
  s.bind(1, device_id).bind(2, kind).bind(3, command).bind(4, utc_now_iso());
  if (s.step() != SQLITE_DONE) return write_error(db_, path_, "cannot start a session").error();
  int64_t id = sqlite3_last_insert_rowid(db_.get());
  if (auto e = tx.commit(); !e.empty()) return write_error(db_, path_, "commit failed").error();
  return id;
}

Status ProfileDb::finish_session(int64_t session_id, const std::string& status) {
  Transaction tx(db_);
  if (!tx.error().empty()) return write_error(db_, path_, "cannot start a transaction");
  Statement s(db_, "UPDATE sessions SET status=?, finished_at=? WHERE id=?");
  s.bind(1, status).bind(2, utc_now_iso()).bind(3, session_id);
  if (s.step() != SQLITE_DONE) return write_error(db_, path_, "cannot finish the session");
  if (auto e = tx.commit(); !e.empty()) return write_error(db_, path_, "commit failed");
  return {};
}

Status ProfileDb::insert_kernels(const std::vector<KernelRow>& rows) {
  Transaction tx(db_);
  if (!tx.error().empty()) return write_error(db_, path_, "cannot start a transaction");
  Statement s(db_,
              std::string("INSERT INTO kernels(") + kKernelColumns + ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  if (!s.ok()) return Error(path_ + ": " + s.error());
  for (const auto& r : rows) {
    s.reset();
    s.bind(1, r.device_id).bind_opt(2, r.session_id).bind(3, r.op).bind(4, r.pass).bind(5, r.dtype);
    s.bind_opt(6, r.m).bind_opt(7, r.n).bind_opt(8, r.k).bind_opt(9, r.groups);
    s.bind_opt(10, r.batch).bind_opt(11, r.heads).bind_opt(12, r.q_len).bind_opt(13, r.kv_len).bind_opt(14, r.head_dim);
    if (r.heads)
      s.bind(15, int64_t(r.causal ? 1 : 0));
    else
      s.bind_null(15);
    s.bind(16, r.flops).bind(17, r.bytes).bind(18, r.reps).bind(19, r.median_us).bind(20, r.p10_us).bind(21, r.p90_us);
    s.bind(22, r.impl).bind(23, r.source);
    if (s.step() != SQLITE_DONE) return write_error(db_, path_, "cannot insert kernel row " + r.op);
  }
  if (auto e = tx.commit(); !e.empty()) return write_error(db_, path_, "commit failed");
  return {};
}

Status ProfileDb::insert_collectives(const std::vector<CollectiveRow>& rows) {
  Transaction tx(db_);
  if (!tx.error().empty()) return write_error(db_, path_, "cannot start a transaction");
  Statement s(db_, std::string("INSERT INTO collectives(") + kCollectiveColumns + ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  if (!s.ok()) return Error(path_ + ": " + s.error());
  for (const auto& r : rows) {
    s.reset();
    s.bind(1, r.device_id).bind_opt(2, r.session_id).bind(3, r.op).bind(4, r.group_size).bind(5, r.members_per_node);
    s.bind(6, r.domains).bind(7, r.bytes).bind(8, r.dtype).bind(9, r.reps).bind(10, r.median_us).bind(11, r.p10_us);
    s.bind(12, r.p90_us).bind(13, r.algbw_gbps).bind(14, r.busbw_gbps).bind(15, r.transport).bind(16, r.impl);
    s.bind(17, r.source);
    if (s.step() != SQLITE_DONE) return write_error(db_, path_, "cannot insert collective row " + r.op);
  }
  if (auto e = tx.commit(); !e.empty()) return write_error(db_, path_, "commit failed");
  return {};
}

Expected<int64_t> ProfileDb::add_calibration(const CalibrationRecord& c) {
  Transaction tx(db_);
  if (!tx.error().empty()) return write_error(db_, path_, "cannot start a transaction").error();
  Statement s(db_, "INSERT INTO calibrations(device_id, created_at, params, fit, rows_used) VALUES (?,?,?,?,?)");
  s.bind(1, c.device_id).bind(2, c.created_at.empty() ? utc_now_iso() : c.created_at).bind(3, dump_json(c.params));
  s.bind(4, dump_json(c.fit)).bind(5, dump_json(c.rows_used));
  if (s.step() != SQLITE_DONE) return write_error(db_, path_, "cannot store the calibration").error();
  int64_t id = sqlite3_last_insert_rowid(db_.get());
  if (auto e = tx.commit(); !e.empty()) return write_error(db_, path_, "commit failed").error();
  return id;
}

namespace {

// Every row of the query `s`, each read by `read`; the error names `what` the rows are.
template <class Row>
Expected<std::vector<Row>> read_rows(const Connection& db, const std::string& path, Statement& s, const char* what,
                                     Row (*read)(const Statement&)) {
  if (!s.ok()) return Error(path + ": " + s.error());
  std::vector<Row> out;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) out.push_back(read(s));
  if (rc != SQLITE_DONE) return Status(write_error(db, path, std::string("cannot read ") + what)).error();
  return out;
}

Device device_row(const Statement& s) {
  Device d;
  d.id = s.i64(0);
  d.kind = s.text(1);
  d.name = s.text(2);
  d.host = s.text(3);
  json pk = parse_json_or(s.text(4), json::object());
  for (auto it = pk.begin(); it != pk.end(); ++it)
    if (it.value().is_number()) d.peak_tflops[it.key()] = it.value().get<double>();
  d.hbm_gbps = s.f64(5);
  d.memory_gib = s.f64(6);
  d.sm_count = int(s.i64(7));
  d.driver = s.text(8);
  d.libraries = parse_json_or(s.text(9), json::object());
  d.created_at = s.text(10);
  d.source = s.text(11);
  d.cluster = s.text(12);
  return d;
}

Session session_row(const Statement& s) { return {s.i64(0), s.i64(1), s.text(2), s.text(3), s.text(4), s.text(5), s.text(6)}; }

KernelRow kernel_row(const Statement& s) {
  KernelRow r;
  r.id = s.i64(0);
  r.device_id = s.i64(1);
  r.session_id = s.i64(2);
  r.op = s.text(3);
  r.pass = s.text(4);
  r.dtype = s.text(5);
  r.m = s.i64(6), r.n = s.i64(7), r.k = s.i64(8), r.groups = s.i64(9);
  r.batch = s.i64(10), r.heads = s.i64(11), r.q_len = s.i64(12), r.kv_len = s.i64(13), r.head_dim = s.i64(14);
  r.causal = s.i64(15) != 0;
  r.flops = s.f64(16);
  r.bytes = s.f64(17);
  r.reps = int(s.i64(18));
  r.median_us = s.f64(19), r.p10_us = s.f64(20), r.p90_us = s.f64(21);
  r.impl = s.text(22);
  r.source = s.text(23);
  return r;
}

CollectiveRow collective_row(const Statement& s) {
  CollectiveRow r;
  r.id = s.i64(0);
  r.device_id = s.i64(1);
  r.session_id = s.i64(2);
  r.op = s.text(3);
  r.group_size = int(s.i64(4));
  r.members_per_node = int(s.i64(5));
  r.domains = int(s.i64(6));
  r.bytes = s.i64(7);
  r.dtype = s.text(8);
  r.reps = int(s.i64(9));
  r.median_us = s.f64(10), r.p10_us = s.f64(11), r.p90_us = s.f64(12);
  r.algbw_gbps = s.f64(13), r.busbw_gbps = s.f64(14);
  r.transport = s.text(15);
  r.impl = s.text(16);
  r.source = s.text(17);
  return r;
}

CalibrationRecord calibration_row(const Statement& s) {
  return {s.i64(0),
          s.i64(1),
          s.text(2),
          parse_json_or(s.text(3), json()),
          parse_json_or(s.text(4), json()),
          parse_json_or(s.text(5), json())};
}

}  // namespace

Expected<std::vector<Device>> ProfileDb::devices() const {
  Statement s(db_,
              "SELECT id, kind, name, host, peak_tflops, hbm_gbps, memory_gib, sm_count, driver, libraries, created_at, "
              "source, cluster FROM devices ORDER BY id");
  return read_rows(db_, path_, s, "devices", device_row);
}

Expected<std::vector<Session>> ProfileDb::sessions() const {
  Statement s(db_,
              "SELECT id, device_id, kind, command, started_at, coalesce(finished_at, ''), status FROM sessions ORDER BY id");
  return read_rows(db_, path_, s, "sessions", session_row);
}

Expected<std::vector<KernelRow>> ProfileDb::kernels(int64_t device_id) const {
  Statement s(db_, std::string("SELECT id, ") + kKernelColumns + " FROM kernels WHERE ?1 = 0 OR device_id = ?1 ORDER BY id");
  if (s.ok()) s.bind(1, device_id);
  return read_rows(db_, path_, s, "kernels", kernel_row);
}

Expected<std::vector<CollectiveRow>> ProfileDb::collectives(int64_t device_id) const {
  Statement s(db_,
              std::string("SELECT id, ") + kCollectiveColumns + " FROM collectives WHERE ?1 = 0 OR device_id = ?1 ORDER BY id");
  if (s.ok()) s.bind(1, device_id);
  return read_rows(db_, path_, s, "collectives", collective_row);
}

Expected<std::vector<CalibrationRecord>> ProfileDb::calibrations() const {
  Statement s(db_, "SELECT id, device_id, created_at, params, fit, rows_used FROM calibrations ORDER BY id");
  return read_rows(db_, path_, s, "calibrations", calibration_row);
}

Expected<DeviceProfile> ProfileDb::device_profile(int64_t device_id) const {
  auto devs = devices();
  if (!devs) return devs.error();
  auto d = std::find_if(devs->begin(), devs->end(), [&](const Device& x) { return x.id == device_id; });
  if (d == devs->end()) return Error(path_ + ": no device " + std::to_string(device_id));
  auto ks = kernels(device_id);
  if (!ks) return ks.error();
  auto cs = collectives(device_id);
  if (!cs) return cs.error();
  return DeviceProfile{*d, std::move(ks).value(), std::move(cs).value()};
}

Expected<int64_t> ProfileDb::import_device(const ProfileDb& from, int64_t device_id, const std::string& command) {
  auto found = from.device_profile(device_id);
  if (!found) return found.error();
  DeviceProfile src = std::move(found).value();
  auto id = add_device(src.device);
  if (!id) return id;
  auto sess = begin_session(*id, "import", command);
  if (!sess) return sess.error();
  for (auto& r : src.kernels) r.device_id = *id, r.session_id = *sess;
  for (auto& r : src.collectives) r.device_id = *id, r.session_id = *sess;
  if (auto s = insert_kernels(src.kernels); !s) return s.error();
  if (auto s = insert_collectives(src.collectives); !s) return s.error();
  if (auto s = finish_session(*sess, "complete"); !s) return s.error();
  return id;
}

}  // namespace mplan::profiles
