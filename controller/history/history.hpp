#pragma once
// The history of runs: a SQLite database that nightly jobs append each finished run to
// (`loadlab run --history FILE`), read back for trends and change points (`loadlab
// history`). docs/history.md describes the schema. The schema is versioned (PRAGMA
// user_version) and an older database is migrated when opened.
//
// Errors: a file that is missing (when it must exist), not a SQLite database, or a history
// of a newer loadlab is InputError (exit status 2); any other SQLite error (locked past the
// busy timeout, disk full) is std::runtime_error naming the file and what was being done.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "judge/verdict.hpp"

struct sqlite3;

namespace loadlab::controller {

// One metric as the history reads it; the names are compare's (metric_names()).
struct HistoryMetric {
  std::string name;
  bool higher_is_better = false;
};
// The metric named `name`; InputError on "--metric" naming the allowed ones otherwise.
const HistoryMetric& history_metric(const std::string& name);

// One stored run, as `loadlab history FILE` lists it.
struct HistoryRun {
  int64_t id = 0;
  std::string run_folder, result_path;
  std::string started_at, finished_at;  // UTC, as in result.json; finished_at "" if it did not finish
  std::string scenario, scenario_sha256;
  std::string git_commit;  // "" outside a git work tree
  bool git_dirty = false;  // the scenario file differed from git_commit
  std::string loadlab_version;
  int64_t cells_ok = 0, cells_failed = 0;
};

// One run's figures of one cell for one metric.
struct CellPoint {
  int64_t run_id = 0;
  std::string started_at, git_commit;
  bool git_dirty = false;
  bool ok = false;                       // the cell finished
  std::vector<double> values;            // per repetition; figures the client could not give left out
  std::optional<double> median() const;  // the lower median (as compare's); none without values
  std::string target_commit;             // a target built from a commit: its sha; "" otherwise
};

enum class AppendOutcome { kAdded, kUpdated, kUnchanged };

struct AppendResult {
  int64_t run_id = 0;
  // kUpdated: the same run (folder and started_at) was there with other figures, e.g.
  // before a --resume finished it; its rows are replaced. kUnchanged: it was there as is.
  AppendOutcome outcome = AppendOutcome::kAdded;
};

class History {
 public:
  static constexpr int kSchemaVersion = 7;
  enum class Mode { kCreate, kExisting };

  // Opens the database at `path` (kExisting: InputError when there is none) and migrates
  // it to kSchemaVersion, in one transaction.
  static History open(const std::string& path, Mode mode);
  History(History&& other) noexcept;
  History& operator=(History&&) = delete;
  History(const History&) = delete;
  ~History();

  // Stores a run's result.json (its document `result`, read from `result_path`) in one
  // transaction. The run's identity is its folder (result_path's, made absolute) and its
  // started_at, so appending it again never duplicates it. InputError for a document that
  // is not a loadlab result (path: its JSON pointer).
  AppendResult append_run(const nlohmann::json& result, const std::string& result_path);

  // Runs, oldest first (by started_at); only `scenario`'s when it is not empty.
  std::vector<HistoryRun> runs(const std::string& scenario = "") const;
  // Every (scenario, cell key) that has figures, sorted.
  std::vector<std::pair<std::string, std::string>> cells() const;
  // The cell's figures per run, oldest run first; empty when the cell is unknown.
  std::vector<CellPoint> series(const std::string& scenario, const std::string& cell_key,
                                const HistoryMetric& metric) const;
  // The result.json of the newest finished run of `scenario` whose cells are all ok.
  std::optional<std::string> last_good_run(const std::string& scenario) const;

  // The newest judged night of `scenario` whose cells of `target` (built from a commit) all
  // finished and that no verdict called a regression (or only cells of a level accepted at that
  // night or before it), and the commit `target` ran: regression.ab_last_good's A.
  struct GoodCommit {
    int64_t run_id = 0;
    std::string started_at, sha;
  };
  std::optional<GoodCommit> last_good_commit(const std::string& scenario, const std::string& target) const;

  // A cell's nights for the verdict (verdict.hpp), oldest first: each run's figures of
  // `metric`, its confirmations, the fingerprint of the machines the cell ran on and of its
  // settings, its steal and target build. Runs from `except_folder` (tonight's, appended
  // before) are left out.
  struct CellNights {
    std::vector<Night> nights;
    std::vector<int64_t> run_ids;         // of each night
    std::vector<AcceptedLevel> accepted;  // the levels accepted by hand, as indices of `nights`
  };
  CellNights nights(const std::string& scenario, const std::string& cell_key, const HistoryMetric& metric,
                    const std::string& except_folder = "") const;
  // `loadlab history accept`: the cell (or every cell, "all") of `scenario` starts a new level
  // at run `run_id`, from now on. InputError naming --run or the cell for one that is not
  // there. Returns the scenario the run belongs to.
  std::string accept(const std::string& cell_key, int64_t run_id, const std::string& note);
  // The "regression" object of the newest run of `scenario` ({} when it had none).
  nlohmann::json regression(const std::string& scenario) const;
  // Keeps what a run's verdicts said, cell by cell (a run's row must exist).
  void store_verdicts(int64_t run_id, const v1::Verdicts& verdicts);

  const std::string& path() const { return path_; }

 private:
  History(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  void migrate();
  sqlite3* db_;
  std::string path_;
};

// For `loadlab run --history FILE`: appends a run folder's result.json (or the result.json
// given) to the database at `db_path`, creating it if needed.
AppendResult append_run_file(const std::string& db_path, const std::string& run_folder_or_result_json);

// For `--baseline history:last-good`: History::last_good_run of the database at `db_path`
// (which must exist).
std::optional<std::string> last_good_run(const std::string& db_path, const std::string& scenario);

}  // namespace loadlab::controller
