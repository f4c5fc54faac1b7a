// The SQLite wrapper (see sqlite_db.h).
#include "core/sqlite_db.h"

#include <unistd.h>

#include <chrono>
#include <thread>

namespace mplan::sqlite {

void check(sqlite3* db, int rc, const char* what) {
  if (rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE) return;
  std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  throw SqlError{rc & 0xff, std::string(what) + ": " + msg};
}

namespace {

int exec_rc(sqlite3* db, const std::string& sql, std::string& msg) {
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) msg = err ? err : sqlite3_errstr(rc);
  sqlite3_free(err);
  return rc;
}

}  // namespace

std::string exec(sqlite3* db, const std::string& sql) {
  std::string msg;
  exec_rc(db, sql, msg);
  return msg;
}

void exec_checked(sqlite3* db, const std::string& sql, const char* what) {
  std::string msg;
  int rc = exec_rc(db, sql, msg);
  if (rc != SQLITE_OK) throw SqlError{rc & 0xff, std::string(what) + ": " + msg};
}

int enable_wal(sqlite3* db, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (int attempt = 0;; ++attempt) {
    sqlite3_stmt* s = nullptr;
    int rc = sqlite3_prepare_v2(db, "PRAGMA journal_mode = WAL", -1, &s, nullptr);
    if (rc == SQLITE_OK) rc = sqlite3_step(s);
    sqlite3_finalize(s);
    if (rc == SQLITE_ROW || rc == SQLITE_DONE) return SQLITE_OK;
    if (!is_busy(rc) || std::chrono::steady_clock::now() > deadline) return rc;
    std::this_thread::sleep_for(std::chrono::milliseconds(1 + (attempt * 7 + ::getpid()) % 10));
  }
}

Statement::Statement(sqlite3* db, std::string_view sql, OnError on_error) : db_(db), on_error_(on_error) {
  int rc = sqlite3_prepare_v2(db_, sql.data(), int(sql.size()), &s_, nullptr);
  if (rc != SQLITE_OK) {
    error_ = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    if (s_) sqlite3_finalize(s_);
    s_ = nullptr;
    if (on_error_ == OnError::raise) throw SqlError{rc & 0xff, "preparing a statement: " + error_};
  }
}

int Statement::step() {
  int rc = sqlite3_step(s_);
  if (on_error_ == OnError::raise) check(db_, rc, "executing a statement");
  return rc;
}

std::string Statement::text(int col) const {
  const unsigned char* t = sqlite3_column_text(s_, col);
  if (!t) return {};
  return std::string(reinterpret_cast<const char*>(t), size_t(sqlite3_column_bytes(s_, col)));
}

Transaction::Transaction(sqlite3* db, Kind kind, OnError on_error) : db_(db), kind_(kind), on_error_(on_error) {
  const char* begin = kind_ == Kind::write ? "BEGIN IMMEDIATE" : "BEGIN";
  if (on_error_ == OnError::raise)
    exec_checked(db_, begin, kind_ == Kind::write ? "starting a write transaction" : "starting a read transaction");
  else
    error_ = exec(db_, begin);
  open_ = error_.empty();
}

Transaction::~Transaction() {
  if (open_) sqlite3_exec(db_, kind_ == Kind::write ? "ROLLBACK" : "COMMIT", nullptr, nullptr, nullptr);
}

std::string Transaction::commit() {
  if (!open_) return error_.empty() ? "transaction not open" : error_;
  if (on_error_ == OnError::raise) {
    exec_checked(db_, "COMMIT", "committing");
    open_ = false;
    return "";
  }
  std::string e = exec(db_, "COMMIT");
  if (e.empty()) open_ = false;
  return e;
}

}  // namespace mplan::sqlite
