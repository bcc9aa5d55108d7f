#pragma once
// A thin layer over SQLite's C API for the history: prepared statements that finalize
// themselves, transactions that roll back unless committed, and one way to fail that names
// the database file and what was being done ("history runs.db: store cell beast/d0/t1:
// database is locked").
#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>

namespace loadlab::controller::sqlite {

// Throws for SQLite status `rc` of `db`: InputError when the file cannot be opened or is not
// a database (or a damaged one), std::runtime_error otherwise.
[[noreturn]] void fail(sqlite3* db, const std::string& file, const std::string& purpose, int rc);

// Runs one or more statements without results.
void exec(sqlite3* db, const std::string& file, const std::string& sql, const std::string& purpose);

class Statement {
 public:
  Statement(sqlite3* db, const std::string& file, const char* sql, std::string purpose);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Parameters are numbered from 1, as in SQLite.
  Statement& bind(int i, const std::string& v);
  Statement& bind(int i, int64_t v);
  Statement& bind(int i, double v);
  Statement& bind(int i, std::optional<double> v);  // nullopt: NULL
  Statement& bind_null(int i);
  // The next row: true when there is one, false when done.
  bool step();
  // Steps to the end (a statement without rows), then resets for the next binding.
  void run();
  void reset();

  // Columns are numbered from 0, as in SQLite.
  bool is_null(int col) const;
  int64_t integer(int col) const;
  double real(int col) const;
  std::string text(int col) const;  // "" for NULL

 private:
  sqlite3* db_;
  std::string file_;
  std::string purpose_;
  sqlite3_stmt* stmt_ = nullptr;
};

// BEGIN IMMEDIATE (the write lock first, so two appenders wait for each other instead of
// failing at their first write); rolled back unless commit() was called.
class Transaction {
 public:
  Transaction(sqlite3* db, const std::string& file, const std::string& purpose);
  ~Transaction();
  void commit();

 private:
  sqlite3* db_;
  std::string file_;
  std::string purpose_;
  bool done_ = false;
};

}  // namespace loadlab::controller::sqlite
