// SQLite helpers: statements, checked execution, transactions.
#include "runs/sqlite_util.h"

namespace mplan::runs {

void sql_check(sqlite3* db, int rc, const char* what) {
  if (rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE) return;
  std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  throw SqlError{rc & 0xff, std::string(what) + ": " + msg};
}

void sql_exec(sqlite3* db, const std::string& sql, const char* what) {
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    throw SqlError{rc & 0xff, std::string(what) + ": " + msg};
  }
}

Stmt::Stmt(sqlite3* db, const char* sql) : db_(db), sql_(sql) {
  sql_check(db_, sqlite3_prepare_v2(db_, sql, -1, &s_, nullptr), "preparing a statement");
}

Stmt::~Stmt() { sqlite3_finalize(s_); }

Stmt& Stmt::bind(int i, int64_t v) {
  sql_check(db_, sqlite3_bind_int64(s_, i, v), "binding a value");
  return *this;
}

Stmt& Stmt::bind(int i, double v) {
  sql_check(db_, sqlite3_bind_double(s_, i, v), "binding a value");
  return *this;
}

Stmt& Stmt::bind(int i, const std::optional<double>& v) {
  if (v) return bind(i, *v);
  sql_check(db_, sqlite3_bind_null(s_, i), "binding a value");
  return *this;
}

Stmt& Stmt::bind(int i, const std::string& v) {
  sql_check(db_, sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT),
            "binding a value");
  return *this;
}

bool Stmt::step() {
  int rc = sqlite3_step(s_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  sql_check(db_, rc, "executing a statement");
  return false;
}

void Stmt::reset() {
  sqlite3_reset(s_);
  sqlite3_clear_bindings(s_);
}

std::string Stmt::text(int col) const {
  const unsigned char* t = sqlite3_column_text(s_, col);
  if (!t) return {};
  return std::string(reinterpret_cast<const char*>(t), static_cast<size_t>(sqlite3_column_bytes(s_, col)));
}

WriteTxn::WriteTxn(sqlite3* db) : db_(db) { sql_exec(db_, "BEGIN IMMEDIATE", "starting a write transaction"); }

WriteTxn::~WriteTxn() {
  if (!done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

void WriteTxn::commit() {
  sql_exec(db_, "COMMIT", "committing");
  done_ = true;
}

ReadTxn::ReadTxn(sqlite3* db) : db_(db) { sql_exec(db_, "BEGIN", "starting a read transaction"); }

ReadTxn::~ReadTxn() { sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr); }

}  // namespace mplan::runs
