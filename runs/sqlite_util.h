// The runs database over the shared SQLite wrapper (core/sqlite_db.h) in raise mode: every failure
// throws SqlError, which the RunsDb methods catch at their boundary and turn into Error values
// naming the database file.
#pragma once
#include <string_view>

#include "core/sqlite_db.h"

namespace mplan::runs {

using sqlite::SqlError;

// A prepared statement whose failures throw.
class Stmt : public sqlite::Statement {
 public:
  Stmt(sqlite3* db, std::string_view sql) : Statement(db, sql, sqlite::OnError::raise) {}
};

// A write transaction (BEGIN IMMEDIATE); rolls back unless commit() was called.
class WriteTxn : public sqlite::Transaction {
 public:
  explicit WriteTxn(sqlite3* db) : Transaction(db, Kind::write, sqlite::OnError::raise) {}
};

// A read transaction: one consistent snapshot for several SELECTs.
class ReadTxn : public sqlite::Transaction {
 public:
  explicit ReadTxn(sqlite3* db) : Transaction(db, Kind::read, sqlite::OnError::raise) {}
};

}  // namespace mplan::runs
