// The one SQLite wrapper of mplan (the profile database and the runs database): RAII connection,
// prepared statements with typed bind/column helpers, transactions, and the WAL switch with its
// busy retry. Library `mplan_sqlite` (core/CMakeLists.txt): only the parts that store data link it.
//
// Errors are reported in one of two ways, chosen per statement / transaction:
//   OnError::report  failures are return values (rc, "" or a message); the caller decides;
//   OnError::raise   every failure throws SqlError{primary code, "<what>: <SQLite's message>"}.
#pragma once
#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace mplan::sqlite {

struct SqlError {
  int code = 0;  // primary SQLite result code (SQLITE_BUSY, SQLITE_CORRUPT, ...)
  std::string message;
};

enum class OnError { report, raise };

// True for SQLITE_BUSY / SQLITE_LOCKED (primary or extended codes).
inline bool is_busy(int rc) { return (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED; }

// Throws SqlError naming `what` unless rc is SQLITE_OK, SQLITE_ROW or SQLITE_DONE.
void check(sqlite3* db, int rc, const char* what);
// Runs one or more statements without results: "" on success, else SQLite's message.
std::string exec(sqlite3* db, const std::string& sql);
// The same, throwing SqlError naming `what` on failure.
void exec_checked(sqlite3* db, const std::string& sql, const char* what);

// Switches the database to WAL. Taking the exclusive lock this needs is answered SQLITE_BUSY at once
// (without the busy handler) while another connection holds a shared lock, e.g. several processes
// opening a new file together: retries with a short jittered sleep until `timeout_ms` has passed.
// SQLITE_OK or the last failing code.
int enable_wal(sqlite3* db, int timeout_ms);

class Connection {
 public:
  Connection() = default;
  explicit Connection(sqlite3* h) : h_(h) {}
  Connection(Connection&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Connection& operator=(Connection&& o) noexcept {
    if (this != &o) {
      close();
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection() { close(); }

  sqlite3* get() const { return h_; }
  explicit operator bool() const { return h_ != nullptr; }
  void close() {
    if (h_) sqlite3_close_v2(h_);
    h_ = nullptr;
  }
  std::string errmsg() const { return h_ ? sqlite3_errmsg(h_) : "no connection"; }
  int errcode() const { return h_ ? sqlite3_extended_errcode(h_) : SQLITE_MISUSE; }
  std::string exec(const std::string& sql) const { return sqlite::exec(h_, sql); }

 private:
  sqlite3* h_ = nullptr;
};

class Statement {
 public:
  Statement(sqlite3* db, std::string_view sql, OnError on_error = OnError::report);
  Statement(const Connection& c, std::string_view sql, OnError on_error = OnError::report) : Statement(c.get(), sql, on_error) {}
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement() {
    if (s_) sqlite3_finalize(s_);
  }
  bool ok() const { return s_ != nullptr; }
  const std::string& error() const { return error_; }  // why preparing failed (report mode)

  Statement& bind(int i, int64_t v) { return checked(sqlite3_bind_int64(s_, i, v), "binding a value"); }
  Statement& bind(int i, int v) { return bind(i, int64_t(v)); }
  Statement& bind(int i, double v) { return checked(sqlite3_bind_double(s_, i, v), "binding a value"); }
  Statement& bind(int i, const std::string& v) {
    return checked(sqlite3_bind_text(s_, i, v.data(), int(v.size()), SQLITE_TRANSIENT), "binding a value");
  }
  Statement& bind(int i, const std::optional<double>& v) { return v ? bind(i, *v) : bind_null(i); }
  Statement& bind_null(int i) { return checked(sqlite3_bind_null(s_, i), "binding a value"); }
  // Binds NULL for 0 (shape columns that do not apply to an op).
  Statement& bind_opt(int i, int64_t v) { return v ? bind(i, v) : bind_null(i); }

  // One step: SQLITE_ROW, SQLITE_DONE or an error code (raise mode: errors throw).
  int step();
  // One step: true while a row is available, false when done (or, in report mode, on an error).
  bool next() { return step() == SQLITE_ROW; }
  void reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }

  int64_t i64(int col) const { return sqlite3_column_int64(s_, col); }
  double f64(int col) const { return sqlite3_column_double(s_, col); }
  std::string text(int col) const;
  bool is_null(int col) const { return sqlite3_column_type(s_, col) == SQLITE_NULL; }
  std::optional<double> opt_f64(int col) const { return is_null(col) ? std::nullopt : std::optional<double>(f64(col)); }

 private:
  Statement& checked(int rc, const char* what) {
    if (on_error_ == OnError::raise) check(db_, rc, what);
    return *this;
  }
  sqlite3* db_ = nullptr;
  sqlite3_stmt* s_ = nullptr;
  OnError on_error_;
  std::string error_;
};

// write: BEGIN IMMEDIATE (takes the write lock up front, so concurrent writers wait on the busy
// timeout instead of deadlocking on a lock upgrade), ROLLBACK unless commit() succeeded.
// read: BEGIN ... COMMIT, one consistent snapshot for several SELECTs.
class Transaction {
 public:
  enum class Kind { write, read };
  explicit Transaction(sqlite3* db, Kind kind = Kind::write, OnError on_error = OnError::report);
  explicit Transaction(const Connection& c, Kind kind = Kind::write, OnError on_error = OnError::report)
      : Transaction(c.get(), kind, on_error) {}
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  const std::string& error() const { return error_; }  // "" when BEGIN succeeded
  // "" on success, else SQLite's message (raise mode: throws).
  std::string commit();

 private:
  sqlite3* db_;
  Kind kind_;
  OnError on_error_;
  bool open_ = false;
  std::string error_;
};

}  // namespace mplan::sqlite
