#include "history/sqlite.hpp"

#include <stdexcept>

#include "loadlab/shared/input_error.hpp"

namespace loadlab::controller::sqlite {

void fail(sqlite3* db, const std::string& file, const std::string& purpose, int rc) {
  std::string reason = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  int primary = rc & 0xff;
  if (primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT)
    throw InputError("FILE",
                     "not a loadlab history database (SQLite: " + reason + ", while: " + purpose + ")")
        .in_file(file);
  // A path that cannot be a database file (a folder, a missing parent folder, no permission).
  if (primary == SQLITE_CANTOPEN)
    throw InputError("FILE", "cannot open it as a database (SQLite: " + reason + ")").in_file(file);
  throw std::runtime_error("history " + file + ": " + purpose + ": " + reason);
}

void exec(sqlite3* db, const std::string& file, const std::string& sql, const std::string& purpose) {
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) fail(db, file, purpose, rc);
}

Statement::Statement(sqlite3* db, const std::string& file, const char* sql, std::string purpose)
    : db_(db), file_(file), purpose_(std::move(purpose)) {
  int rc = sqlite3_prepare_v2(db_, sql, -1, &stmt_, nullptr);
  if (rc != SQLITE_OK) fail(db_, file_, purpose_, rc);
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement& Statement::bind(int i, const std::string& v) {
  int rc = sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  if (rc != SQLITE_OK) fail(db_, file_, purpose_, rc);
  return *this;
}

Statement& Statement::bind(int i, int64_t v) {
  int rc = sqlite3_bind_int64(stmt_, i, v);
  if (rc != SQLITE_OK) fail(db_, file_, purpose_, rc);
  return *this;
}

Statement& Statement::bind(int i, double v) {
  int rc = sqlite3_bind_double(stmt_, i, v);
  if (rc != SQLITE_OK) fail(db_, file_, purpose_, rc);
  return *this;
}

Statement& Statement::bind(int i, std::optional<double> v) { return v ? bind(i, *v) : bind_null(i); }

Statement& Statement::bind_null(int i) {
  int rc = sqlite3_bind_null(stmt_, i);
  if (rc != SQLITE_OK) fail(db_, file_, purpose_, rc);
  return *this;
}

bool Statement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  fail(db_, file_, purpose_, rc);
}

void Statement::run() {
  while (step()) {
  }
  reset();
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

bool Statement::is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
int64_t Statement::integer(int col) const { return sqlite3_column_int64(stmt_, col); }
double Statement::real(int col) const { return sqlite3_column_double(stmt_, col); }
std::string Statement::text(int col) const {
  auto p = sqlite3_column_text(stmt_, col);
  return p ? std::string(reinterpret_cast<const char*>(p),
                         static_cast<size_t>(sqlite3_column_bytes(stmt_, col)))
           : std::string();
}

Transaction::Transaction(sqlite3* db, const std::string& file, const std::string& purpose)
    : db_(db), file_(file), purpose_(purpose) {
  exec(db_, file_, "BEGIN IMMEDIATE", "begin a transaction to " + purpose_);
}

Transaction::~Transaction() {
  if (!done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  exec(db_, file_, "COMMIT", "commit: " + purpose_);
  done_ = true;
}

}  // namespace loadlab::controller::sqlite
