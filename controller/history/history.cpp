#include "history/history.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <stdexcept>
#include <string_view>

#include "history/history_schema.hpp"
#include "history/sqlite.hpp"
#include "judge/compare.hpp"
#include "loadlab/proto/json.hpp"
#include "loadlab/shared/json_input.hpp"
#include "loadlab/shared/logging.hpp"
#include "loadlab/shared/sha256.hpp"
#include "loadlab/v1/agent.pb.h"
#include "loadlab/v1/result.pb.h"
#include "results/quality_flags.hpp"

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
        {"capacity", "p.capacity"},
        {"instructions", "p.instructions"},
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

// A repetition's flags as the history keeps them (a JSON list) name a busy machine. A list that
// does not parse names none.
bool busy_flagged(const std::string& json_flags) {
  const auto flags = nlohmann::json::parse(json_flags, nullptr, false);
  if (!flags.is_array()) return false;
  return std::any_of(flags.begin(), flags.end(), [](const nlohmann::json& f) {
    return f.is_string() && flag_kind(f.get<std::string>()) == QualityFlag::kBusyMachine;
  });
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
  std::string regression = "{}";  // the scenario's "regression" object
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
  if (scenario.is_object() && scenario.contains("regression")) h.regression = scenario["regression"].dump();
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
           "git_tree_dirty = ?9, overrides = ?10, loadlab_version = ?11, regression = ?13 WHERE id = ?12"
         : "INSERT INTO runs (run_folder, result_path, started_at, finished_at, scenario, "
           "scenario_sha256, git_commit, git_dirty, git_tree_dirty, overrides, loadlab_version, regression) "
           "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?13)",
      "store the run");
  run.bind(1, h.run_folder).bind(2, h.result_path).bind(3, h.started_at);
  h.finished_at.empty() ? run.bind_null(4) : run.bind(4, h.finished_at);
  run.bind(5, h.scenario).bind(6, h.sha256);
  h.commit.empty() ? run.bind_null(7) : run.bind(7, h.commit);
  run.bind(8, int64_t{h.dirty}).bind(9, int64_t{h.tree_dirty}).bind(10, h.overrides).bind(11, h.version);
  run.bind(13, h.regression);
  if (id) run.bind(12, id);
  run.run();
  return id ? id : sqlite3_last_insert_rowid(db);
}

void store_agents(sqlite3* db, const std::string& file, int64_t run_id,
                  const std::vector<std::pair<nlohmann::json, v1::AgentInfo>>& agents) {
  sqlite::Statement agent(
      db, file,
      "INSERT OR REPLACE INTO run_agents (run_id, name, address, roles, hostname, cores, "
      "cpu_model, memory_bytes, kernel, version, error, fingerprint, allowed_cpus, cpu_binding) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
    agent.bind(11, text(a, "error", where));
    agent.bind(12, info.has_fingerprint() ? fingerprint_text(info.fingerprint()) : std::string());
    agent.bind(13, info.allowed_cpus()).bind(14, info.cpu_binding()).run();
  }
}

// The cell's knobs as its settings digest takes them: CellConfig's JSON, but for the fields it
// gained after histories kept digests (arrivals, seed, pace_granularity_us), which are left out at their
// default. A new field would otherwise change every cell's digest, and each cell's next night
// would read as changed settings against all its earlier ones.
std::string config_text(const v1::CellConfig& config) {
  std::string text = proto::to_json(config);
  // How its instructions are counted is no setting of its other figures (the probes run apart,
  // the counters cost nothing): it separates only the nights of the metric `instructions`
  // (History::nights), and is left out here whatever its value.
  static const std::regex instructions(R"(,"instructions":"[a-z]*")");
  text = std::regex_replace(text, instructions, "");
  for (std::string_view added : {R"("arrivals":"")", R"("seed":"0")", R"("pace_granularity_us":0)"}) {
    auto at = text.find(added);
    // The whole value: `"pace_granularity_us":0` is not the start of `...:0.5`.
    while (at != std::string::npos && at + added.size() < text.size() && text[at + added.size()] != ',' &&
           text[at + added.size()] != '}')
      at = text.find(added, at + 1);
    if (at == std::string::npos) continue;
    if (at > 0 && text[at - 1] == ',')
      text.erase(at - 1, added.size() + 1);  // ,"arrivals":""
    else if (at + added.size() < text.size() && text[at + added.size()] == ',')
      text.erase(at, added.size() + 1);  // "arrivals":"",
    else
      text.erase(at, added.size());
  }
  return text;
}

// What a cell's figures depend on besides the machines and the target's build: its knobs, the
// scenario's load, its target's definition, the placement and the repetitions. Nights whose
// digests differ are not compared (the verdict says the settings changed).
std::string settings_digest(const nlohmann::json& result, const v1::CellResult& c) {
  const nlohmann::json none;
  const auto& scenario = result.contains("scenario") ? result["scenario"] : none;
  auto part = [&](const char* key) {
    return scenario.is_object() && scenario.contains(key) ? scenario[key].dump() : std::string("null");
  };
  std::string target = "null";
  if (scenario.is_object() && scenario.contains("targets") && scenario["targets"].is_array())
    for (auto& t : scenario["targets"])
      if (t.is_object() && t.contains("name") && t["name"] == c.cell().target()) target = t.dump();
  // An open loop's qps counts what the window served once the rate is not held (Repetition.
  // slot_qps): its nights from before that definition are another series.
  const std::string qps_definition = c.cell().rate() > 0 ? "\nqps=window-completions" : "";
  return sha256_text(config_text(c.cell()) + "\n" + part("load") + "\n" + target + "\n" + part("placement") +
                     "\n" + part("repetitions") + qps_definition)
      .substr(0, 16);
}

// The agents a cell's repetitions ran on (target and load), sorted, as a JSON list.
std::string cell_agents(const v1::CellResult& c) {
  std::set<std::string> names;
  for (auto* reps : {&c.repetitions(), &c.confirmations()})
    for (auto& r : *reps) {
      if (!r.target_agent().empty()) names.insert(r.target_agent());
      for (auto& p : r.load_parts())
        if (!p.agent().empty()) names.insert(p.agent());
    }
  return nlohmann::json(std::vector<std::string>(names.begin(), names.end())).dump();
}

// How long the cell's processes waited for a CPU over the window (Usage.wait_pct): the target's
// and every load agent's, summed; unknown when one side could not say.
std::optional<double> wait_pct(const v1::Repetition& r) {
  if (!r.server().has_wait_pct()) return std::nullopt;
  double sum = r.server().wait_pct();
  for (auto& p : r.load_parts()) {
    if (!p.client().has_wait_pct()) return std::nullopt;
    sum += p.client().wait_pct();
  }
  return sum;
}

std::string load_cpus(const v1::Repetition& r) {
  std::string out;
  for (auto& p : r.load_parts())
    if (!p.client().cpus().empty() && out.find(p.client().cpus()) == std::string::npos)
      out += (out.empty() ? "" : "+") + p.client().cpus();
  return out;
}

void store_cells(sqlite3* db, const std::string& file, int64_t run_id, const nlohmann::json& result,
                 const std::vector<v1::CellResult>& cells) {
  sqlite::Statement cell(
      db, file,
      "INSERT INTO cells (run_id, key, ok, error, flags, agents, settings) VALUES (?, ?, ?, ?, ?, ?, ?)",
      "store a cell");
  sqlite::Statement rep(
      db, file,
      "INSERT INTO repetitions (cell_id, phase, idx, qps, p50_us, p90_us, p99_us, p999_us, max_us, "
      "errors, requests, server_cpu_pct, server_rss_kb_peak, client_cpu_pct, client_rss_kb_peak, "
      "unavailable, steal_pct, server_cpus, client_cpus, target_build, wait_pct, flags, other_pct, capacity, "
      "instructions, instructions_method, target_commit) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      "store a repetition");
  for (const auto& c : cells) {
    cell.bind(1, run_id).bind(2, c.cell().key()).bind(3, int64_t{c.ok()}).bind(4, c.error());
    cell.bind(5, json_list(c.flags())).bind(6, cell_agents(c)).bind(7, settings_digest(result, c)).run();
    int64_t cell_id = sqlite3_last_insert_rowid(db);
    for (auto [phase, reps] :
         {std::pair{"measure", &c.repetitions()}, std::pair{"confirm", &c.confirmations()}})
      for (int i = 0; i < reps->size(); ++i) {
        const auto& r = (*reps)[i];
        const auto& l = r.latency();
        rep.bind(1, cell_id)
            .bind(2, std::string(phase))
            .bind(3, int64_t{i})
            .bind(4, figure(r, "qps", r.qps()));
        rep.bind(5, figure(r, "latency.p50_us", l.p50_us())).bind(6, figure(r, "latency.p90_us", l.p90_us()));
        rep.bind(7, figure(r, "latency.p99_us", l.p99_us()))
            .bind(8, figure(r, "latency.p999_us", l.p999_us()));
        rep.bind(9, figure(r, "latency.max_us", l.max_us()));
        rep.bind(10, static_cast<int64_t>(r.errors())).bind(11, static_cast<int64_t>(r.requests()));
        rep.bind(12, r.server().cpu_pct()).bind(13, static_cast<int64_t>(r.server().rss_kb_peak()));
        rep.bind(14, r.client().cpu_pct()).bind(15, static_cast<int64_t>(r.client().rss_kb_peak()));
        rep.bind(16, json_list(r.unavailable()));
        // The steal of the cell's CPUs: the larger side's (pinned apart, each sees its own CPUs;
        // not pinned, both see the whole machine).
        rep.bind(17, std::max(r.server().steal_pct(), r.client().steal_pct()));
        rep.bind(18, r.server().cpus()).bind(19, load_cpus(r)).bind(20, r.target_build());
        rep.bind(21, wait_pct(r)).bind(22, json_list(r.flags())).bind(23, other_work_pct(r));
        if (r.capacity() > 0)
          rep.bind(24, r.capacity());
        else
          rep.bind_null(24);  // not a capacity search's
        if (r.has_instructions_per_request())
          rep.bind(25, r.instructions_per_request());
        else
          rep.bind_null(25);
        rep.bind(26, c.cell().instructions()).bind(27, r.target_commit());
        rep.run();
      }
  }
}

// Each agent's fingerprint, per run of `scenario`: (run id, agent name) → fingerprint.
std::map<std::pair<int64_t, std::string>, std::string> agent_fingerprints(sqlite3* db,
                                                                          const std::string& file,
                                                                          const std::string& scenario) {
  std::map<std::pair<int64_t, std::string>, std::string> fingerprints;
  sqlite::Statement f(
      db, file,
      "SELECT a.run_id, a.name, a.fingerprint FROM run_agents a JOIN runs r ON r.id = a.run_id "
      "WHERE r.scenario = ?",
      "read the agents' fingerprints");
  f.bind(1, scenario);
  while (f.step()) fingerprints[{f.integer(0), f.text(1)}] = f.text(2);
  return fingerprints;
}

// The night of run `run` from the first row of its cell: when it started, whether the cell
// finished, and the fingerprint of the machines it ran on and of its settings.
Night night_of_row(const sqlite::Statement& s, int64_t run,
                   std::map<std::pair<int64_t, std::string>, std::string>& fingerprints) {
  Night n;
  n.run_id = run;
  n.started_at = s.text(1);
  n.ok = s.integer(2) != 0;
  std::vector<std::string> agents;
  try {
    agents = nlohmann::json::parse(s.text(3)).get<std::vector<std::string>>();
  } catch (const std::exception&) {
  }
  for (auto& a : agents) n.fingerprint += a + "|" + fingerprints[{run, a}] + "\n";
  n.fingerprint += "cell|settings=" + s.text(4);
  return n;
}

// The levels accepted for a cell (or for all of the scenario's), as indices of its `nights`.
std::vector<AcceptedLevel> accepted_levels(sqlite3* db, const std::string& file, const std::string& scenario,
                                           const std::string& cell_key, const History::CellNights& nights) {
  std::vector<AcceptedLevel> out;
  sqlite::Statement l(
      db, file,
      "SELECT l.run_id, r.started_at, l.accepted_at FROM levels l JOIN runs r ON r.id = l.run_id "
      "WHERE l.scenario = ? AND (l.key = ? OR l.key = '*') ORDER BY l.accepted_at, l.id",
      "read the accepted levels of " + cell_key);
  l.bind(1, scenario).bind(2, cell_key);
  while (l.step()) {
    AcceptedLevel a;
    const std::string start = l.text(1), accepted_at = l.text(2);
    a.start = nights.nights.size();
    a.effective_from = nights.nights.size();
    const int64_t start_run = l.integer(0);
    // The level starts at the accepted run itself (or the first night after it, for a cell that
    // run did not have); it applies to the nights that started from the acceptance on (times
    // are whole seconds: a night of the same second counts it).
    for (size_t i = 0; i < nights.nights.size(); ++i)
      if (nights.run_ids[i] == start_run) a.start = i;
    for (size_t i = 0; i < nights.nights.size() && a.start == nights.nights.size(); ++i)
      if (nights.nights[i].started_at > start) a.start = i;
    for (size_t i = 0; i < nights.nights.size(); ++i)
      if (nights.nights[i].started_at >= accepted_at) {
        a.effective_from = i;
        break;
      }
    out.push_back(a);
  }
  return out;
}

}  // namespace

const HistoryMetric& history_metric(const std::string& name) { return column_of(name).metric; }

std::optional<double> CellPoint::median() const { return night_figure(values); }

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
      "SELECT id, coalesce(finished_at, ''), (SELECT count(*) FROM cells WHERE run_id = runs.id), "
      "(SELECT count(*) FROM repetitions p JOIN cells c ON c.id = p.cell_id WHERE c.run_id = runs.id), "
      "(SELECT coalesce(sum(p.qps), 0) FROM repetitions p JOIN cells c ON c.id = p.cell_id "
      "WHERE c.run_id = runs.id) "
      "FROM runs WHERE run_folder = ? AND started_at = ?",
      "look for the run");
  find.bind(1, h.run_folder).bind(2, h.started_at);
  if (find.step()) {
    out.run_id = find.integer(0);
    // The same repetitions: as many, with the same QPS (a cell measured again has as many).
    int64_t repetitions = 0;
    double qps = 0;
    for (auto& c : cells)
      for (auto* reps : {&c.repetitions(), &c.confirmations()}) {
        repetitions += reps->size();
        for (auto& r : *reps) qps += r.qps();
      }
    if (find.text(1) == h.finished_at && find.integer(2) == static_cast<int64_t>(cells.size()) &&
        find.integer(3) == repetitions && std::abs(find.real(4) - qps) <= 1e-9 * std::max(1.0, qps)) {
      out.outcome = AppendOutcome::kUnchanged;
      return out;  // rolls back an empty transaction
    }
    out.outcome = AppendOutcome::kUpdated;
    for (const char* sql : {"DELETE FROM cells WHERE run_id = ?", "DELETE FROM run_agents WHERE run_id = ?"})
      sqlite::Statement(db_, path_, sql, "remove the run's old rows").bind(1, out.run_id).run();
  }
  out.run_id = store_run(db_, path_, h, out.outcome == AppendOutcome::kUpdated ? out.run_id : 0);
  store_agents(db_, path_, out.run_id, agents);
  store_cells(db_, path_, out.run_id, result, cells);
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
      ", coalesce(p.target_commit, '')"
      " FROM runs r JOIN cells c ON c.run_id = r.id LEFT JOIN repetitions p ON p.cell_id = c.id "
      "WHERE r.scenario = ? AND c.key = ? ORDER BY r.started_at, r.id, p.idx";
  sqlite::Statement s(db_, path_, sql.c_str(), "read cell " + cell_key + "'s " + metric.name);
  s.bind(1, scenario).bind(2, cell_key);
  std::vector<CellPoint> out;
  while (s.step()) {
    if (out.empty() || out.back().run_id != s.integer(0))
      out.push_back({s.integer(0), s.text(1), s.text(2), s.integer(3) != 0, s.integer(4) != 0, {}});
    if (!s.is_null(5) && std::isfinite(s.real(5))) out.back().values.push_back(s.real(5));
    if (out.back().target_commit.empty()) out.back().target_commit = s.text(6);
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

std::optional<History::GoodCommit> History::last_good_commit(const std::string& scenario,
                                                             const std::string& target) const {
  sqlite::Statement s(
      db_, path_,
      "SELECT r.id, r.started_at, p.target_commit FROM runs r JOIN cells c ON c.run_id = r.id "
      "JOIN repetitions p ON p.cell_id = c.id WHERE r.scenario = ?1 AND r.finished_at IS NOT NULL "
      "AND (c.key = ?2 OR substr(c.key, 1, length(?2) + 1) = ?2 || '/') AND p.target_commit != '' "
      "AND EXISTS (SELECT 1 FROM verdicts v WHERE v.run_id = r.id) "
      // none of the target's cells failed
      "AND NOT EXISTS (SELECT 1 FROM cells f WHERE f.run_id = r.id AND NOT f.ok "
      "  AND (f.key = ?2 OR substr(f.key, 1, length(?2) + 1) = ?2 || '/')) "
      // no regression, but one of a level accepted at this run or before it
      "AND NOT EXISTS (SELECT 1 FROM verdicts v WHERE v.run_id = r.id AND v.verdict = 'regression' "
      "  AND NOT EXISTS (SELECT 1 FROM levels l JOIN runs lr ON lr.id = l.run_id WHERE l.scenario = "
      "r.scenario "
      "    AND (l.key = v.key OR l.key = '*') AND (lr.started_at, lr.id) <= (r.started_at, r.id))) "
      "ORDER BY r.started_at DESC, r.id DESC LIMIT 1",
      "find the last good night of " + scenario + "'s target " + target);
  s.bind(1, scenario).bind(2, target);
  if (!s.step()) return std::nullopt;
  return GoodCommit{s.integer(0), s.text(1), s.text(2)};
}

History::CellNights History::nights(const std::string& scenario, const std::string& cell_key,
                                    const HistoryMetric& metric, const std::string& except_folder) const {
  // Each agent's fingerprint, per run.
  auto fingerprints = agent_fingerprints(db_, path_, scenario);
  std::string sql =
      std::string(
          "SELECT r.id, r.started_at, c.ok, c.agents, c.settings, coalesce(p.phase, ''), p.steal_pct, "
          "coalesce(p.target_build, ''), r.run_folder, p.wait_pct, coalesce(p.flags, '[]'), p.other_pct, ") +
      column_of(metric.name).column +
      ", coalesce(p.instructions_method, '')"
      " FROM runs r JOIN cells c ON c.run_id = r.id LEFT JOIN repetitions p ON p.cell_id = c.id "
      "WHERE r.scenario = ? AND c.key = ? ORDER BY r.started_at, r.id, p.phase DESC, p.idx";
  sqlite::Statement s(db_, path_, sql.c_str(), "read cell " + cell_key + "'s nights");
  s.bind(1, scenario).bind(2, cell_key);
  CellNights out;
  std::vector<std::vector<double>> steals, waits, confirm_waits, others, confirm_others;
  while (s.step()) {
    if (!except_folder.empty() && s.text(8) == except_folder) continue;
    const int64_t run = s.integer(0);
    if (out.run_ids.empty() || out.run_ids.back() != run) {
      out.nights.push_back(night_of_row(s, run, fingerprints));
      // Instructions counted one way are never judged against those counted another way.
      if (metric.name == "instructions") out.nights.back().fingerprint += "|instructions=" + s.text(13);
      out.run_ids.push_back(run);
      steals.emplace_back();
      waits.emplace_back();
      confirm_waits.emplace_back();
      others.emplace_back();
      confirm_others.emplace_back();
    }
    Night& n = out.nights.back();
    const bool confirm = s.text(5) == "confirm";
    if (!s.is_null(12) && std::isfinite(s.real(12)))
      (confirm ? n.confirmation : n.values).push_back(s.real(12));
    if (s.text(5).empty()) continue;  // a failed cell without repetitions
    const bool busy = busy_flagged(s.text(10));
    (confirm ? n.confirm_busy_reps : n.busy_reps) += busy;
    if (!s.is_null(9)) (confirm ? confirm_waits : waits).back().push_back(s.real(9));
    if (!s.is_null(11)) (confirm ? confirm_others : others).back().push_back(s.real(11));
    if (!confirm) {
      if (!s.is_null(6)) steals.back().push_back(s.real(6));
      if (n.target_build.empty()) n.target_build = s.text(7);
    }
  }
  for (size_t i = 0; i < out.nights.size(); ++i) {  // each the median repetition's
    out.nights[i].steal_pct = night_figure(steals[i]).value_or(0);
    out.nights[i].wait_pct = night_figure(waits[i]);
    out.nights[i].confirm_wait_pct = night_figure(confirm_waits[i]);
    out.nights[i].other_pct = night_figure(others[i]);
    out.nights[i].confirm_other_pct = night_figure(confirm_others[i]);
  }
  out.accepted = accepted_levels(db_, path_, scenario, cell_key, out);
  return out;
}

nlohmann::json History::regression(const std::string& scenario) const {
  sqlite::Statement s(
      db_, path_, "SELECT regression FROM runs WHERE scenario = ? ORDER BY started_at DESC, id DESC LIMIT 1",
      "read the regression settings of " + scenario);
  s.bind(1, scenario);
  if (!s.step()) return nlohmann::json::object();
  try {
    return nlohmann::json::parse(s.text(0));
  } catch (const std::exception&) {
    return nlohmann::json::object();
  }
}

std::string History::accept(const std::string& cell_key, int64_t run_id, const std::string& note) {
  sqlite::Transaction t(db_, path_, "accept a level");
  sqlite::Statement run(db_, path_, "SELECT scenario FROM runs WHERE id = ?", "find run");
  run.bind(1, run_id);
  if (!run.step())
    throw InputError("--run", "no run " + std::to_string(run_id) + " in " + path_ + " (`loadlab history " +
                                  path_ + "` lists them)");
  const std::string scenario = run.text(0);
  if (cell_key != "all") {
    sqlite::Statement cell(db_, path_, "SELECT ok FROM cells WHERE run_id = ? AND key = ?", "find the cell");
    cell.bind(1, run_id).bind(2, cell_key);
    if (!cell.step())
      throw InputError("CELL", "run " + std::to_string(run_id) + " (" + scenario + ") has no cell \"" +
                                   cell_key + "\"; give a cell key of that run, or all");
    if (cell.integer(0) == 0)
      throw InputError("--run", "cell " + cell_key + " failed in run " + std::to_string(run_id) +
                                    ": a level starts at a night that measured it");
  }
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char at[32];
  std::strftime(at, sizeof at, "%Y-%m-%dT%H:%M:%SZ", &tm);
  sqlite::Statement add(
      db_, path_, "INSERT INTO levels (scenario, key, run_id, accepted_at, note) VALUES (?, ?, ?, ?, ?)",
      "accept a level");
  add.bind(1, scenario).bind(2, cell_key == "all" ? std::string("*") : cell_key).bind(3, run_id);
  add.bind(4, std::string(at)).bind(5, note).run();
  t.commit();
  return scenario;
}

void History::store_verdicts(int64_t run_id, const v1::Verdicts& verdicts) {
  sqlite::Transaction t(db_, path_, "store the verdicts of run " + std::to_string(run_id));
  sqlite::Statement v(
      db_, path_,
      "INSERT OR REPLACE INTO verdicts (run_id, key, metric, verdict, reason, value, baseline, "
      "change_pct, mdc_pct, nights) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      "store a verdict");
  auto figure = [](bool has, double x) { return has ? std::optional<double>(x) : std::nullopt; };
  for (auto& c : verdicts.cells()) {
    v.bind(1, run_id).bind(2, c.key()).bind(3, verdicts.metric()).bind(4, c.verdict()).bind(5, c.reason());
    v.bind(6, figure(c.has_value(), c.value())).bind(7, figure(c.has_baseline(), c.baseline()));
    v.bind(8, figure(c.has_change_pct(), c.change_pct())).bind(9, figure(c.has_mdc_pct(), c.mdc_pct()));
    v.bind(10, static_cast<int64_t>(c.nights())).run();
  }
  t.commit();
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
