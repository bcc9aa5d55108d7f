#include "history/history_schema.hpp"

#include "history/history.hpp"
#include "history/sqlite.hpp"
#include "loadlab/shared/input_error.hpp"
#include "loadlab/shared/logging.hpp"

namespace loadlab::controller {

namespace {

struct Migration {
  int to;
  const char* what;
  const char* sql;
};

// Version 1: runs, cells and each repetition's figures.
const char* kToV1 = R"sql(
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  run_folder TEXT NOT NULL,
  result_path TEXT NOT NULL,
  started_at TEXT NOT NULL,
  finished_at TEXT,
  scenario TEXT NOT NULL,
  scenario_sha256 TEXT NOT NULL DEFAULT '',
  git_commit TEXT,
  git_dirty INTEGER NOT NULL DEFAULT 0,
  loadlab_version TEXT NOT NULL DEFAULT '',
  UNIQUE (run_folder, started_at));
CREATE INDEX runs_by_scenario ON runs (scenario, started_at);
CREATE TABLE cells (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  ok INTEGER NOT NULL,
  error TEXT NOT NULL DEFAULT '',
  flags TEXT NOT NULL DEFAULT '[]',
  UNIQUE (run_id, key));
CREATE INDEX cells_by_key ON cells (key);
CREATE TABLE repetitions (
  cell_id INTEGER NOT NULL REFERENCES cells (id) ON DELETE CASCADE,
  idx INTEGER NOT NULL,
  qps REAL, p50_us REAL, p90_us REAL, p99_us REAL, p999_us REAL, max_us REAL,
  errors INTEGER, requests INTEGER,
  server_cpu_pct REAL, server_rss_kb_peak INTEGER, client_cpu_pct REAL, client_rss_kb_peak INTEGER,
  PRIMARY KEY (cell_id, idx));
)sql";

// Version 2: where a run ran (its agents), how (--set overrides, the whole work tree's git
// state), and which figures its client could not give.
const char* kToV2 = R"sql(
ALTER TABLE runs ADD COLUMN git_tree_dirty INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN overrides TEXT NOT NULL DEFAULT '[]';
ALTER TABLE repetitions ADD COLUMN unavailable TEXT NOT NULL DEFAULT '[]';
CREATE TABLE run_agents (
  run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  address TEXT NOT NULL DEFAULT '',
  roles TEXT NOT NULL DEFAULT '[]',
  hostname TEXT, cores INTEGER, cpu_model TEXT, memory_bytes INTEGER, kernel TEXT, version TEXT,
  error TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (run_id, name));
)sql";

// Version 3: what the nightly verdicts need. Each agent's machine fingerprint and CPUs, the
// agents a cell ran on and a digest of its settings (nights are compared like with like), each
// repetition's phase (a confirmation measured at the end of the run, or not), steal, CPUs and
// target build; the scenario's regression settings; the verdicts a run gave, and the levels
// accepted by hand.
const char* kToV3 = R"sql(
ALTER TABLE runs ADD COLUMN regression TEXT NOT NULL DEFAULT '{}';
ALTER TABLE run_agents ADD COLUMN fingerprint TEXT NOT NULL DEFAULT '';
ALTER TABLE run_agents ADD COLUMN allowed_cpus TEXT NOT NULL DEFAULT '';
ALTER TABLE run_agents ADD COLUMN cpu_binding TEXT NOT NULL DEFAULT '';
ALTER TABLE cells ADD COLUMN agents TEXT NOT NULL DEFAULT '[]';
ALTER TABLE cells ADD COLUMN settings TEXT NOT NULL DEFAULT '';
CREATE TABLE repetitions_v3 (
  cell_id INTEGER NOT NULL REFERENCES cells (id) ON DELETE CASCADE,
  phase TEXT NOT NULL DEFAULT 'measure',
  idx INTEGER NOT NULL,
  qps REAL, p50_us REAL, p90_us REAL, p99_us REAL, p999_us REAL, max_us REAL,
  errors INTEGER, requests INTEGER,
  server_cpu_pct REAL, server_rss_kb_peak INTEGER, client_cpu_pct REAL, client_rss_kb_peak INTEGER,
  unavailable TEXT NOT NULL DEFAULT '[]',
  steal_pct REAL,
  wait_pct REAL,
  flags TEXT NOT NULL DEFAULT '[]',
  server_cpus TEXT NOT NULL DEFAULT '',
  client_cpus TEXT NOT NULL DEFAULT '',
  target_build TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (cell_id, phase, idx));
INSERT INTO repetitions_v3 (cell_id, idx, qps, p50_us, p90_us, p99_us, p999_us, max_us, errors, requests,
  server_cpu_pct, server_rss_kb_peak, client_cpu_pct, client_rss_kb_peak, unavailable)
  SELECT cell_id, idx, qps, p50_us, p90_us, p99_us, p999_us, max_us, errors, requests,
  server_cpu_pct, server_rss_kb_peak, client_cpu_pct, client_rss_kb_peak, unavailable FROM repetitions;
DROP TABLE repetitions;
ALTER TABLE repetitions_v3 RENAME TO repetitions;
CREATE TABLE verdicts (
  run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  metric TEXT NOT NULL,
  verdict TEXT NOT NULL,
  reason TEXT NOT NULL DEFAULT '',
  value REAL, baseline REAL, change_pct REAL, mdc_pct REAL, nights INTEGER,
  PRIMARY KEY (run_id, key, metric));
CREATE TABLE levels (
  id INTEGER PRIMARY KEY,
  scenario TEXT NOT NULL,
  key TEXT NOT NULL,
  run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  accepted_at TEXT NOT NULL,
  note TEXT NOT NULL DEFAULT '');
CREATE INDEX levels_by_cell ON levels (scenario, key);
)sql";

// Version 4: each repetition's other work on the cell's CPUs (flags.hpp, other_work_pct), so a
// night is compared with its baseline nights' level of it. Older rows have none.
const char* kToV4 = R"sql(
ALTER TABLE repetitions ADD COLUMN other_pct REAL;
)sql";

// Version 5: a capacity search's repetition's capacity (docs/capacity.md), the metric
// `capacity`. Other rows have none.
const char* kToV5 = R"sql(
ALTER TABLE repetitions ADD COLUMN capacity REAL;
)sql";

// Version 6: instructions per request (a scenario's `instructions`, the metric `instructions`)
// and how they were counted ("callgrind", "counters"; nights of one method are judged only
// against nights of the same). Older rows have none.
const char* kToV6 = R"sql(
ALTER TABLE repetitions ADD COLUMN instructions REAL;
ALTER TABLE repetitions ADD COLUMN instructions_method TEXT NOT NULL DEFAULT '';
)sql";

// Version 7: the commit of a target built from one (a scenario target's `commit`), so that a
// change between nights names the commits on both sides. Older rows have none.
const char* kToV7 = R"sql(
ALTER TABLE repetitions ADD COLUMN target_commit TEXT NOT NULL DEFAULT '';
)sql";

const Migration kMigrations[] = {
    {1, "create the schema (version 1)", kToV1},
    {2, "migrate to version 2 (agents, overrides, n/a figures)", kToV2},
    {3, "migrate to version 3 (fingerprints, confirmations, verdicts, accepted levels)", kToV3},
    {4, "migrate to version 4 (other work on a cell's CPUs)", kToV4},
    {5, "migrate to version 5 (a capacity search's capacity)", kToV5},
    {6, "migrate to version 6 (instructions per request)", kToV6},
    {7, "migrate to version 7 (the commit of a target built from one)", kToV7},
};
static_assert(sizeof kMigrations / sizeof kMigrations[0] == History::kSchemaVersion,
              "one migration per schema version");

int user_version(sqlite3* db, const std::string& file) {
  sqlite::Statement s(db, file, "PRAGMA user_version", "read the schema version");
  s.step();
  return static_cast<int>(s.integer(0));
}

}  // namespace

void migrate_history(sqlite3* db, const std::string& file) {
  if (user_version(db, file) == History::kSchemaVersion) return;
  // Under the write lock, read again: another process may have migrated it meanwhile.
  sqlite::Transaction t(db, file, "migrate the schema");
  int version = user_version(db, file);
  if (version > History::kSchemaVersion)
    throw InputError("FILE", "history schema version " + std::to_string(version) +
                                 " is newer than this loadlab's (" + std::to_string(History::kSchemaVersion) +
                                 "); use a newer loadlab")
        .in_file(file);
  if (version == 0) {
    sqlite::Statement tables(db, file, "SELECT count(*) FROM sqlite_master", "look for tables");
    tables.step();
    if (tables.integer(0) > 0)
      throw InputError("FILE", "not a loadlab history database (it has tables but no schema version)")
          .in_file(file);
  }
  int from = version;
  for (const auto& m : kMigrations) {
    if (m.to <= version) continue;
    sqlite::exec(db, file, m.sql, m.what);
    sqlite::exec(db, file, "PRAGMA user_version = " + std::to_string(m.to), m.what);
    version = m.to;
  }
  t.commit();
  if (from > 0)
    component_logger("history")->info("{}: schema migrated from version {} to {}", file, from, version);
}

}  // namespace loadlab::controller
