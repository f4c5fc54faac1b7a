// SQLite RAII helpers (see sqlite_handle.h).
#include "profiles/sqlite_handle.h"

namespace mplan::profiles {

std::string Connection::exec(const std::string& sql) const {
  char* err = nullptr;
  int rc = sqlite3_exec(h_, sql.c_str(), nullptr, nullptr, &err);
  if (rc == SQLITE_OK) return "";
  std::string msg = err ? err : sqlite3_errstr(rc);
  sqlite3_free(err);
  return msg;
}

Statement::Statement(const Connection& c, const std::string& sql) {
  if (sqlite3_prepare_v2(c.get(), sql.c_str(), int(sql.size()), &s_, nullptr) != SQLITE_OK) {
    error_ = c.errmsg();
    if (s_) sqlite3_finalize(s_);
    s_ = nullptr;
  }
}

Transaction::Transaction(const Connection& c) : c_(c) {
  error_ = c_.exec("BEGIN IMMEDIATE");
  open_ = error_.empty();
}

Transaction::~Transaction() {
  if (open_) c_.exec("ROLLBACK");
}

std::string Transaction::commit() {
  if (!open_) return error_.empty() ? "transaction not open" : error_;
  std::string e = c_.exec("COMMIT");
  if (e.empty()) open_ = false;
  return e;
}

}  // namespace mplan::profiles
