// Thin RAII helpers over the SQLite C API for the runs database. Failures throw SqlError, which the
// RunsDb methods catch at their boundary and turn into Error values naming the database file.
#pragma once
#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>

namespace mplan::runs {

struct SqlError {
  int code = 0;  // primary SQLite result code (SQLITE_BUSY, SQLITE_CORRUPT, ...)
  std::string message;
};

// Throws SqlError with the connection's message when rc is not one of the ok codes.
void sql_check(sqlite3* db, int rc, const char* what);
// Runs one or more statements without results.
void sql_exec(sqlite3* db, const std::string& sql, const char* what);

class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql);
  ~Stmt();
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& bind(int i, int64_t v);
  Stmt& bind(int i, double v);
  Stmt& bind(int i, const std::string& v);
  Stmt& bind(int i, const std::optional<double>& v);  // NULL when absent
  // Steps once: true while a row is available, false when done.
  bool step();
  void reset();  // ready for new bindings

  int64_t int64(int col) const { return sqlite3_column_int64(s_, col); }
  double real(int col) const { return sqlite3_column_double(s_, col); }
  std::string text(int col) const;
  bool is_null(int col) const { return sqlite3_column_type(s_, col) == SQLITE_NULL; }
  std::optional<double> opt_real(int col) const {
    return is_null(col) ? std::nullopt : std::optional<double>(real(col));
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
  const char* sql_;
};

// A write transaction (BEGIN IMMEDIATE, so concurrent writers queue on the busy timeout instead of
// failing on lock upgrade). Rolls back unless commit() was called.
class WriteTxn {
 public:
  explicit WriteTxn(sqlite3* db);
  ~WriteTxn();
  void commit();

 private:
  sqlite3* db_;
  bool done_ = false;
};

// A read transaction: one consistent snapshot for several SELECTs.
class ReadTxn {
 public:
  explicit ReadTxn(sqlite3* db);
  ~ReadTxn();

 private:
  sqlite3* db_;
};

}  // namespace mplan::runs
