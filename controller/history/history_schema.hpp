#pragma once
// The history database's schema, one migration per version (PRAGMA user_version = the
// version a database is at). A migration is never edited once released: a new version
// adds a new one, so every older database reaches the current schema by the same steps.
#include <sqlite3.h>

#include <string>

namespace loadlab::controller {

// Brings the database to History::kSchemaVersion in one transaction (none when it is
// there already). InputError for a database of a newer loadlab, or one with tables but no
// version (some other program's).
void migrate_history(sqlite3* db, const std::string& file);

}  // namespace loadlab::controller
