// Thin RAII over the SQLite C API for the profile database: a connection, prepared statements with
// typed bind/column helpers, and a transaction guard that rolls back unless committed.
#pragma once
#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace mplan::profiles {

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
  // Runs one or more statements without results; "" on success, else SQLite's message.
  std::string exec(const std::string& sql) const;

 private:
  sqlite3* h_ = nullptr;
};

class Statement {
 public:
  Statement(const Connection& c, const std::string& sql);
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement() {
    if (s_) sqlite3_finalize(s_);
  }
  bool ok() const { return s_ != nullptr; }
  const std::string& error() const { return error_; }

  Statement& bind(int i, int64_t v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  Statement& bind(int i, int v) { return bind(i, int64_t(v)); }
  Statement& bind(int i, double v) {
    sqlite3_bind_double(s_, i, v);
    return *this;
  }
  Statement& bind(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.c_str(), int(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Statement& bind_null(int i) {
    sqlite3_bind_null(s_, i);
    return *this;
  }
  // Binds NULL for 0 (shape columns that do not apply to an op).
  Statement& bind_opt(int i, int64_t v) { return v ? bind(i, v) : bind_null(i); }

  // SQLITE_ROW, SQLITE_DONE or an error code.
  int step() { return sqlite3_step(s_); }
  void reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }

  int64_t i64(int col) const { return sqlite3_column_int64(s_, col); }
  double f64(int col) const { return sqlite3_column_double(s_, col); }
  std::string text(int col) const {
    auto* p = sqlite3_column_text(s_, col);
    return p ? reinterpret_cast<const char*>(p) : "";
  }
  bool is_null(int col) const { return sqlite3_column_type(s_, col) == SQLITE_NULL; }

 private:
  sqlite3_stmt* s_ = nullptr;
  std::string error_;
};

// BEGIN IMMEDIATE on construction (takes the write lock up front, so concurrent writers wait on the
// busy timeout instead of deadlocking on a lock upgrade); ROLLBACK unless commit() succeeded.
class Transaction {
 public:
  explicit Transaction(const Connection& c);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  const std::string& error() const { return error_; }  // "" when BEGIN succeeded
  std::string commit();

 private:
  const Connection& c_;
  bool open_ = false;
  std::string error_;
};

}  // namespace mplan::profiles
