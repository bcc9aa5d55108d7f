#include "loadlab/controller/history.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <stdexcept>

#include "history_schema.hpp"
#include "loadlab/controller/compare.hpp"
#include "loadlab/proto/json.hpp"
#include "loadlab/shared/json_input.hpp"
#include "loadlab/shared/logging.hpp"
#include "loadlab/v1/agent.pb.h"
#include "loadlab/v1/result.pb.h"
#include "sqlite.hpp"

namespace loadlab::controller {

namespace {

// compare's metrics (metric_names(); their direction is compare's) as columns of
// `repetitions`.
struct MetricColumn {
  HistoryMetric metric;
  const char* column;  // an SQL expression over the repetitions table `p`
};

const std::vector<MetricColumn>& metric_columns() {
  static const std::vector<MetricColumn> columns = [] {
    const std::pair<const char*, const char*> sql[] = {
        {"qps", "p.qps"},
        {"p50_ms", "p.p50_us / 1000.0"},
        {"p90_ms", "p.p90_us / 1000.0"},
        {"p99_ms", "p.p99_us / 1000.0"},
        {"server_cpu_pct", "p.server_cpu_pct"},
        {"server_rss_kb", "p.server_rss_kb_peak"},
        {"client_cpu_pct", "p.client_cpu_pct"},
    };
    std::vector<MetricColumn> out;
    for (auto& [name, column] : sql) out.push_back({{name, metric_higher_is_better(name)}, column});
    return out;
  }();
  return columns;
}

const MetricColumn& column_of(const std::string& name) {
  metric_higher_is_better(name);  // an unknown name: InputError naming --metric and the allowed ones
  for (auto& c : metric_columns())
    if (c.metric.name == name) return c;
  throw std::logic_error("compare's metric " + name + " has no history column");  // the test covers all
}

// A string member of a JSON object, "" when absent or null; InputError when of another type.
std::string text(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return "";
  if (!j[key].is_string()) throw InputError(where + "/" + key, "must be a string");
  return j[key].get<std::string>();
}

bool flag(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_boolean() && j[key].get<bool>();
}

std::string json_list(const google::protobuf::RepeatedPtrField<std::string>& items) {
  return nlohmann::json(std::vector<std::string>(items.begin(), items.end())).dump();
}

bool listed(const v1::Repetition& r, const char* figure) {
  return std::find(r.unavailable().begin(), r.unavailable().end(), figure) != r.unavailable().end();
}

// The figure, or NULL where the load client could not give it (Repetition.unavailable).
std::optional<double> figure(const v1::Repetition& r, const char* name, double value) {
  if (listed(r, name)) return std::nullopt;
  return value;
}

// What identifies a run and what describes it: result.json without its cells.
struct RunHeader {
  std::string run_folder, result_path, started_at, finished_at, scenario, sha256, commit, overrides;
  bool dirty = false, tree_dirty = false;
  std::string version;
};

RunHeader header_of(const nlohmann::json& result, const std::string& result_path) {
  if (!result.is_object() || !result.contains("cells") || !result["cells"].is_array())
    throw InputError("/cells", "not a loadlab result.json (no cells array)");
  RunHeader h;
  std::error_code ec;
  auto abs = std::filesystem::weakly_canonical(std::filesystem::absolute(result_path), ec);
  h.result_path = (ec ? std::filesystem::absolute(result_path) : abs).string();
  h.run_folder = std::filesystem::path(h.result_path).parent_path().string();
  h.started_at = text(result, "started_at", "");
  if (h.started_at.empty()) throw InputError("/started_at", "missing: not a loadlab result.json");
  h.finished_at = text(result, "finished_at", "");
  const auto& scenario = result.contains("scenario") ? result["scenario"] : nlohmann::json();
  h.scenario = text(scenario, "name", "/scenario");
  if (h.scenario.empty()) throw InputError("/scenario/name", "missing: not a loadlab result.json");
  const auto& file = result.contains("scenario_file") ? result["scenario_file"] : nlohmann::json();
  h.sha256 = text(file, "sha256", "/scenario_file");
  const auto& git = file.is_object() && file.contains("git") ? file["git"] : nlohmann::json();
  h.commit = text(git, "commit", "/scenario_file/git");
  h.dirty = flag(git, "dirty");
  h.tree_dirty = flag(git, "tree_dirty");
  h.overrides = result.contains("overrides") ? result["overrides"].dump() : "[]";
  h.version = text(result, "loadlab_version", "");
  return h;
}

std::vector<v1::CellResult> cells_of(const nlohmann::json& result) {
  std::vector<v1::CellResult> cells;
  const auto& all = result["cells"];
  for (size_t i = 0; i < all.size(); ++i) {
    cells.emplace_back();
    try {
      proto::from_json(all[i].dump(), &cells.back());
    } catch (const InputError& e) {
      throw InputError("/cells/" + std::to_string(i), "not a loadlab.v1.CellResult (" + e.message() +
                                                          "); a result.json of another loadlab version?");
    }
  }
  return cells;
}

// result.json's agents, each with its AgentInfo (default when it was unreachable).
std::vector<std::pair<nlohmann::json, v1::AgentInfo>> agents_of(const nlohmann::json& result) {
  std::vector<std::pair<nlohmann::json, v1::AgentInfo>> agents;
  if (!result.contains("agents") || !result["agents"].is_array()) return agents;
  for (size_t i = 0; i < result["agents"].size(); ++i) {
    const auto& a = result["agents"][i];
    agents.emplace_back(a, v1::AgentInfo());
    if (!a.is_object() || !a.contains("describe") || !a["describe"].is_object()) continue;
    try {
      proto::from_json(a["describe"].dump(), &agents.back().second);
    } catch (const InputError& e) {
      throw InputError("/agents/" + std::to_string(i) + "/describe", e.message());
    }
  }
  return agents;
}

// The run's row: inserted (id 0) or updated in place; returns its id.
int64_t store_run(sqlite3* db, const std::string& file, const RunHeader& h, int64_t id) {
  sqlite::Statement run(
      db, file,
      id ? "UPDATE runs SET run_folder = ?1, result_path = ?2, started_at = ?3, finished_at = ?4, "
           "scenario = ?5, scenario_sha256 = ?6, git_commit = ?7, git_dirty = ?8, "
           "git_tree_dirty = ?9, overrides = ?10, loadlab_version = ?11 WHERE id = ?12"
         : "INSERT INTO runs (run_folder, result_path, started_at, finished_at, scenario, "
           "scenario_sha256, git_commit, git_dirty, git_tree_dirty, overrides, loadlab_version) "
           "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
      "store the run");
  run.bind(1, h.run_folder).bind(2, h.result_path).bind(3, h.started_at);
  h.finished_at.empty() ? run.bind_null(4) : run.bind(4, h.finished_at);
  run.bind(5, h.scenario).bind(6, h.sha256);
  h.commit.empty() ? run.bind_null(7) : run.bind(7, h.commit);
  run.bind(8, int64_t{h.dirty}).bind(9, int64_t{h.tree_dirty}).bind(10, h.overrides).bind(11, h.version);
  if (id) run.bind(12, id);
  run.run();
  return id ? id : sqlite3_last_insert_rowid(db);
}

void store_agents(sqlite3* db, const std::string& file, int64_t run_id,
                  const std::vector<std::pair<nlohmann::json, v1::AgentInfo>>& agents) {
  sqlite::Statement agent(
      db, file,
      "INSERT OR REPLACE INTO run_agents (run_id, name, address, roles, hostname, cores, "
      "cpu_model, memory_bytes, kernel, version, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      "store the run's agents");
  for (size_t i = 0; i < agents.size(); ++i) {
    const auto& [a, info] = agents[i];
    std::string where = "/agents/" + std::to_string(i);
    agent.bind(1, run_id).bind(2, text(a, "name", where)).bind(3, text(a, "address", where));
    agent.bind(4, a.is_object() && a.contains("roles") ? a["roles"].dump() : std::string("[]"));
    if (a.is_object() && a.contains("describe") && a["describe"].is_object()) {
      agent.bind(5, info.hostname()).bind(6, static_cast<int64_t>(info.cores())).bind(7, info.cpu_model());
      agent.bind(8, static_cast<int64_t>(info.memory_bytes()))
          .bind(9, info.kernel())
          .bind(10, info.version());
    } else {
      for (int col = 5; col <= 10; ++col) agent.bind_null(col);
    }
    agent.bind(11, text(a, "error", where)).run();
  }
}

void store_cells(sqlite3* db, const std::string& file, int64_t run_id,
                 const std::vector<v1::CellResult>& cells) {
  sqlite::Statement cell(db, file, "INSERT INTO cells (run_id, key, ok, error, flags) VALUES (?, ?, ?, ?, ?)",
                         "store a cell");
  sqlite::Statement rep(
      db, file,
      "INSERT INTO repetitions (cell_id, idx, qps, p50_us, p90_us, p99_us, p999_us, max_us, "
      "errors, requests, server_cpu_pct, server_rss_kb_peak, client_cpu_pct, client_rss_kb_peak, "
      "unavailable) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      "store a repetition");
  for (const auto& c : cells) {
    cell.bind(1, run_id).bind(2, c.cell().key()).bind(3, int64_t{c.ok()}).bind(4, c.error());
    cell.bind(5, json_list(c.flags())).run();
    int64_t cell_id = sqlite3_last_insert_rowid(db);
    for (int i = 0; i < c.repetitions_size(); ++i) {
      const auto& r = c.repetitions(i);
      const auto& l = r.latency();
      rep.bind(1, cell_id).bind(2, int64_t{i}).bind(3, figure(r, "qps", r.qps()));
      rep.bind(4, figure(r, "latency.p50_us", l.p50_us())).bind(5, figure(r, "latency.p90_us", l.p90_us()));
      rep.bind(6, figure(r, "latency.p99_us", l.p99_us())).bind(7, figure(r, "latency.p999_us", l.p999_us()));
      rep.bind(8, figure(r, "latency.max_us", l.max_us()));
      rep.bind(9, static_cast<int64_t>(r.errors())).bind(10, static_cast<int64_t>(r.requests()));
      rep.bind(11, r.server().cpu_pct()).bind(12, static_cast<int64_t>(r.server().rss_kb_peak()));
      rep.bind(13, r.client().cpu_pct()).bind(14, static_cast<int64_t>(r.client().rss_kb_peak()));
      rep.bind(15, json_list(r.unavailable())).run();
    }
  }
}

}  // namespace

const HistoryMetric& history_metric(const std::string& name) { return column_of(name).metric; }

double CellPoint::median() const {
  if (values.empty()) return NAN;
  auto v = values;
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
}

History History::open(const std::string& path, Mode mode) {
  if (mode == Mode::kExisting && !std::filesystem::exists(path))
    throw InputError("FILE", "no history database here (`loadlab run --history FILE` creates one)")
        .in_file(path);
  sqlite3* db = nullptr;
  int flags = SQLITE_OPEN_READWRITE | (mode == Mode::kCreate ? SQLITE_OPEN_CREATE : 0);
  int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
  History h(db, path);  // closes `db` whatever happens next
  if (rc != SQLITE_OK) sqlite::fail(db, path, "open the database", rc);
  // Nightly jobs of several scenarios may append at once: wait for the lock, not fail.
  sqlite3_busy_timeout(db, 30000);
  sqlite::exec(db, path, "PRAGMA foreign_keys = ON", "enable foreign keys");
  migrate_history(db, path);
  return h;
}

History::History(History&& other) noexcept : db_(other.db_), path_(std::move(other.path_)) {
  other.db_ = nullptr;
}

History::~History() { sqlite3_close_v2(db_); }

AppendResult History::append_run(const nlohmann::json& result, const std::string& result_path) {
  RunHeader h = header_of(result, result_path);
  auto cells = cells_of(result);
  auto agents = agents_of(result);
  sqlite::Transaction t(db_, path_, "store run " + h.run_folder);
  AppendResult out;
  sqlite::Statement find(
      db_, path_,
      "SELECT id, coalesce(finished_at, ''), (SELECT count(*) FROM cells WHERE run_id = runs.id) "
      "FROM runs WHERE run_folder = ? AND started_at = ?",
      "look for the run");
  find.bind(1, h.run_folder).bind(2, h.started_at);
  if (find.step()) {
    out.run_id = find.integer(0);
    if (find.text(1) == h.finished_at && find.integer(2) == static_cast<int64_t>(cells.size())) {
      out.outcome = AppendOutcome::kUnchanged;
      return out;  // rolls back an empty transaction
    }
    out.outcome = AppendOutcome::kUpdated;
    for (const char* sql : {"DELETE FROM cells WHERE run_id = ?", "DELETE FROM run_agents WHERE run_id = ?"})
      sqlite::Statement(db_, path_, sql, "remove the run's old rows").bind(1, out.run_id).run();
  }
  out.run_id = store_run(db_, path_, h, out.outcome == AppendOutcome::kUpdated ? out.run_id : 0);
  store_agents(db_, path_, out.run_id, agents);
  store_cells(db_, path_, out.run_id, cells);
  t.commit();
  return out;
}

std::vector<HistoryRun> History::runs(const std::string& scenario) const {
  sqlite::Statement s(
      db_, path_,
      "SELECT r.id, r.run_folder, r.result_path, r.started_at, coalesce(r.finished_at, ''), "
      "r.scenario, r.scenario_sha256, coalesce(r.git_commit, ''), r.git_dirty, r.loadlab_version, "
      "(SELECT count(*) FROM cells c WHERE c.run_id = r.id AND c.ok), "
      "(SELECT count(*) FROM cells c WHERE c.run_id = r.id AND NOT c.ok) "
      "FROM runs r WHERE ?1 = '' OR r.scenario = ?1 ORDER BY r.started_at, r.id",
      "list the runs");
  s.bind(1, scenario);
  std::vector<HistoryRun> out;
  while (s.step())
    out.push_back({s.integer(0), s.text(1), s.text(2), s.text(3), s.text(4), s.text(5), s.text(6), s.text(7),
                   s.integer(8) != 0, s.text(9), s.integer(10), s.integer(11)});
  return out;
}

std::vector<std::pair<std::string, std::string>> History::cells() const {
  sqlite::Statement s(db_, path_,
                      "SELECT DISTINCT r.scenario, c.key FROM cells c JOIN runs r ON r.id = c.run_id "
                      "ORDER BY r.scenario, c.key",
                      "list the cells");
  std::vector<std::pair<std::string, std::string>> out;
  while (s.step()) out.emplace_back(s.text(0), s.text(1));
  return out;
}

std::vector<CellPoint> History::series(const std::string& scenario, const std::string& cell_key,
                                       const HistoryMetric& metric) const {
  // The column expression comes from our own table, never from the caller's text.
  std::string sql =
      std::string("SELECT r.id, r.started_at, coalesce(r.git_commit, ''), r.git_dirty, c.ok, ") +
      column_of(metric.name).column +
      " FROM runs r JOIN cells c ON c.run_id = r.id LEFT JOIN repetitions p ON p.cell_id = c.id "
      "WHERE r.scenario = ? AND c.key = ? ORDER BY r.started_at, r.id, p.idx";
  sqlite::Statement s(db_, path_, sql.c_str(), "read cell " + cell_key + "'s " + metric.name);
  s.bind(1, scenario).bind(2, cell_key);
  std::vector<CellPoint> out;
  while (s.step()) {
    if (out.empty() || out.back().run_id != s.integer(0))
      out.push_back({s.integer(0), s.text(1), s.text(2), s.integer(3) != 0, s.integer(4) != 0, {}});
    if (!s.is_null(5) && std::isfinite(s.real(5))) out.back().values.push_back(s.real(5));
  }
  return out;
}

std::optional<std::string> History::last_good_run(const std::string& scenario) const {
  sqlite::Statement s(db_, path_,
                      "SELECT r.result_path FROM runs r WHERE r.scenario = ? AND r.finished_at IS NOT NULL "
                      "AND EXISTS (SELECT 1 FROM cells c WHERE c.run_id = r.id) "
                      "AND NOT EXISTS (SELECT 1 FROM cells c WHERE c.run_id = r.id AND NOT c.ok) "
                      "ORDER BY r.started_at DESC, r.id DESC LIMIT 1",
                      "find the last good run of " + scenario);
  s.bind(1, scenario);
  if (!s.step()) return std::nullopt;
  return s.text(0);
}

AppendResult append_run_file(const std::string& db_path, const std::string& run_folder_or_result_json) {
  std::string file = run_folder_or_result_json;
  if (std::filesystem::is_directory(file)) file = (std::filesystem::path(file) / "result.json").string();
  nlohmann::json result;
  try {
    result = read_json_file(file);
  } catch (const InputError& e) {
    throw e.in_file(file);
  }
  History h = History::open(db_path, History::Mode::kCreate);
  AppendResult r;
  try {
    r = h.append_run(result, file);
  } catch (const InputError& e) {
    throw e.file().empty() ? e.in_file(file) : e;
  }
  const char* what = r.outcome == AppendOutcome::kAdded     ? "added to"
                     : r.outcome == AppendOutcome::kUpdated ? "updated in"
                                                            : "already in";
  component_logger("history")->info("run {} {} {} (id {})", file, what, db_path, r.run_id);
  return r;
}

std::optional<std::string> last_good_run(const std::string& db_path, const std::string& scenario) {
  return History::open(db_path, History::Mode::kExisting).last_good_run(scenario);
}

}  // namespace loadlab::controller
