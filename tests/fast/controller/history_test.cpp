// The history database: what a run leaves in it, that a run is stored once, migrations
// from older schemas, and the errors a user sees for a wrong file.
#include "history/history.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "input_error_of.hpp"
#include "judge/compare.hpp"
#include "loadlab/shared/json_input.hpp"
#include "synthetic_result.hpp"

namespace loadlab::controller {
namespace {

using testing::input_error_of;
using testing::synthetic_result;
using testing::SyntheticCell;

class HistoryTest : public ::testing::Test {
 protected:
  HistoryTest() {
    char tmpl[] = "/tmp/loadlab-history-XXXXXX";
    dir_ = mkdtemp(tmpl);
    db_ = (dir_ / "history.db").string();
  }
  ~HistoryTest() override { std::filesystem::remove_all(dir_); }

  // A run folder with its result.json; returns the result.json's path.
  std::string run_folder(const std::string& name, const nlohmann::json& result) {
    std::filesystem::create_directories(dir_ / name);
    auto path = dir_ / name / "result.json";
    std::ofstream(path) << result.dump(2);
    return path.string();
  }

  // One value of an SQL query straight from the file, as text.
  std::string query(const std::string& sql) {
    sqlite3* db = nullptr;
    sqlite3_open(db_.c_str(), &db);
    sqlite3_stmt* s = nullptr;
    std::string out = "<error>";
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK) {
      out = "<none>";
      if (sqlite3_step(s) == SQLITE_ROW)
        out = sqlite3_column_type(s, 0) == SQLITE_NULL
                  ? "NULL"
                  : reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    }
    sqlite3_finalize(s);
    sqlite3_close(db);
    return out;
  }

  std::filesystem::path dir_;
  std::string db_;
};

// A night bench/verdicts.sh recorded before CellConfig had arrivals and seed (2026-12-03; its
// repetitions cut to one, their histograms and series dropped), and the settings digests that
// release stored for its cells. A field added since changes none of them at its default, or
// every cell's next night would read as changed settings against all its earlier ones; a
// cell that uses it has settings of its own.
TEST_F(HistoryTest, SettingsDigestsStayWhatEarlierReleasesStored) {
  std::ifstream in(std::string(LOADLAB_SOURCE_DIR) + "/tests/data/history/before-arrivals.json");
  const auto night = nlohmann::json::parse(in);
  ASSERT_EQ(append_run_file(db_, run_folder("before", night)).outcome, AppendOutcome::kAdded);
  const std::pair<const char*, const char*> stored[] = {{"server/d0/t1", "c759414ce85ae438"},
                                                        {"server/d0/t4", "2ee5557d4f283783"},
                                                        {"server/d2/t1", "95e5f7e070f7a26c"},
                                                        {"server/d2/t4", "28b88ef60b3cdf8c"}};
  for (auto [key, digest] : stored)
    EXPECT_EQ(query(std::string("SELECT settings FROM cells WHERE key = '") + key + "'"), digest) << key;
  auto poisson = night;
  poisson["started_at"] = "2026-12-04T00:00:00Z";
  poisson["cells"][0]["cell"]["arrivals"] = "poisson";
  poisson["cells"][0]["cell"]["seed"] = "5";
  ASSERT_EQ(append_run_file(db_, run_folder("poisson", poisson)).outcome, AppendOutcome::kAdded);
  EXPECT_EQ(query("SELECT count(DISTINCT settings) FROM cells WHERE key = 'server/d0/t1'"), "2");
  EXPECT_EQ(query("SELECT count(DISTINCT settings) FROM cells WHERE key = 'server/d0/t4'"), "1");
  auto granular = night;
  granular["started_at"] = "2026-12-05T00:00:00Z";
  granular["cells"][1]["cell"]["pace_granularity_us"] = 1000;
  ASSERT_EQ(granular["cells"][1]["cell"]["key"], "server/d0/t4");
  ASSERT_EQ(append_run_file(db_, run_folder("granular", granular)).outcome, AppendOutcome::kAdded);
  EXPECT_EQ(query("SELECT count(DISTINCT settings) FROM cells WHERE key = 'server/d0/t4'"), "2");
  EXPECT_EQ(query("SELECT count(DISTINCT settings) FROM cells WHERE key = 'server/d2/t1'"), "1");
  // A profiled cell (perf costs CPU) is not the same settings as the unprofiled one.
  auto profiled = night;
  profiled["started_at"] = "2026-12-06T00:00:00Z";
  profiled["cells"][2]["cell"]["profile"] = {{"frequency_hz", 999}, {"call_graph", "fp"}};
  ASSERT_EQ(profiled["cells"][2]["cell"]["key"], "server/d2/t1");
  ASSERT_EQ(append_run_file(db_, run_folder("profiled", profiled)).outcome, AppendOutcome::kAdded);
  EXPECT_EQ(query("SELECT count(DISTINCT settings) FROM cells WHERE key = 'server/d2/t1'"), "2");
  EXPECT_EQ(query("SELECT count(DISTINCT settings) FROM cells WHERE key = 'server/d2/t4'"), "1");
}

TEST_F(HistoryTest, ARunIsStoredWithItsProvenanceAndEveryRepetition) {
  auto file = run_folder("night-1",
                         synthetic_result("hello", "2024-05-01T02:00:00Z", "abc123",
                                          {{"beast/d0/t1", {1000, 1100, 900}}, {"beast/d5/t1", {}, false}}));
  auto r = append_run_file(db_, dir_ / "night-1");  // the folder, as `loadlab run --history` gives it
  EXPECT_EQ(r.outcome, AppendOutcome::kAdded);

  auto h = History::open(db_, History::Mode::kExisting);
  auto runs = h.runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].scenario, "hello");
  EXPECT_EQ(runs[0].git_commit, "abc123");
  EXPECT_EQ(runs[0].result_path, file);
  EXPECT_EQ(runs[0].run_folder, (dir_ / "night-1").string());
  EXPECT_EQ(runs[0].finished_at, "2024-05-01T03:00:00Z");
  EXPECT_EQ(runs[0].scenario_sha256, std::string(64, 'a'));
  EXPECT_EQ(runs[0].cells_ok, 1);
  EXPECT_EQ(runs[0].cells_failed, 1);

  auto qps = h.series("hello", "beast/d0/t1", history_metric("qps"));
  ASSERT_EQ(qps.size(), 1u);
  EXPECT_EQ(qps[0].values, (std::vector<double>{1000, 1100, 900}));
  EXPECT_EQ(qps[0].median(), 1000);
  auto p99 = h.series("hello", "beast/d0/t1", history_metric("p99_ms"));
  EXPECT_EQ(p99[0].values, (std::vector<double>{2, 2, 2}));
  auto failed = h.series("hello", "beast/d5/t1", history_metric("qps"));
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_FALSE(failed[0].ok);
  EXPECT_FALSE(failed[0].median());

  EXPECT_EQ(
      query("SELECT hostname || '/' || cores || '/' || cpu_model || '/' || memory_bytes FROM run_agents"),
      "lab-1/8/Test CPU 3000/17179869184");
  EXPECT_EQ(query("SELECT overrides FROM runs"), R"(["load.total_requests=1000"])");
  EXPECT_EQ(query("SELECT git_tree_dirty FROM runs"), "1");
  EXPECT_EQ(query("SELECT error FROM cells WHERE NOT ok"), "measure: the target stopped answering");
  EXPECT_EQ(query("SELECT count(*) FROM repetitions"), "3");
  EXPECT_EQ(query("SELECT p999_us || ' ' || max_us || ' ' || requests || ' ' || server_rss_kb_peak FROM "
                  "repetitions WHERE idx = 1"),
            "4000.0 8000.0 11000 9000");
  EXPECT_EQ(query("PRAGMA user_version"), std::to_string(History::kSchemaVersion));
}

TEST_F(HistoryTest, FiguresTheClientCouldNotGiveAreNullAndLeftOutOfSeries) {
  auto result = synthetic_result("hello", "2024-05-01T02:00:00Z", "abc", {{"wrk/d0/t1", {1000, 1200}}});
  for (auto& rep : result["cells"][0]["repetitions"]) rep["unavailable"] = {"latency.p99_us", "histogram"};
  auto h = History::open(db_, History::Mode::kCreate);
  h.append_run(result, run_folder("n", result));
  EXPECT_EQ(query("SELECT p99_us FROM repetitions"), "NULL");
  EXPECT_EQ(query("SELECT unavailable FROM repetitions"), R"(["latency.p99_us","histogram"])");
  auto p99 = h.series("hello", "wrk/d0/t1", history_metric("p99_ms"));
  ASSERT_EQ(p99.size(), 1u);
  EXPECT_TRUE(p99[0].ok);
  EXPECT_TRUE(p99[0].values.empty());
  EXPECT_EQ(h.series("hello", "wrk/d0/t1", history_metric("qps"))[0].values.size(), 2u);
}

TEST_F(HistoryTest, TheSameRunAppendedTwiceIsStoredOnceAndAResumedOneIsUpdated) {
  auto unfinished = synthetic_result("hello", "2024-05-01T02:00:00Z", "abc", {{"a", {1000}}}, false);
  auto file = run_folder("n1", unfinished);
  auto first = append_run_file(db_, file);
  auto again = append_run_file(db_, file);
  EXPECT_EQ(again.outcome, AppendOutcome::kUnchanged);
  EXPECT_EQ(again.run_id, first.run_id);
  EXPECT_EQ(query("SELECT count(*) FROM runs"), "1");

  // `loadlab run --resume` finished it: same folder and started_at, more cells.
  run_folder("n1", synthetic_result("hello", "2024-05-01T02:00:00Z", "abc", {{"a", {1000}}, {"b", {2000}}}));
  auto resumed = append_run_file(db_, file);
  EXPECT_EQ(resumed.outcome, AppendOutcome::kUpdated);
  EXPECT_EQ(resumed.run_id, first.run_id);
  EXPECT_EQ(query("SELECT count(*) FROM runs"), "1");
  EXPECT_EQ(query("SELECT count(*) FROM cells"), "2");
  EXPECT_EQ(query("SELECT count(*) FROM repetitions"), "2");
  EXPECT_EQ(query("SELECT count(*) FROM run_agents"), "1");
  EXPECT_EQ(query("SELECT finished_at FROM runs"), "2024-05-01T03:00:00Z");
}

TEST_F(HistoryTest, LastGoodRunIsTheNewestFinishedRunWithEveryCellOk) {
  EXPECT_EQ(input_error_of([&] { last_good_run(db_, "hello"); }),
            "FILE: no history database here "
            "(`loadlab run --history FILE` creates one)");
  auto good1 = run_folder("n1", synthetic_result("hello", "2024-05-01T02:00:00Z", "c1", {{"a", {1000}}}));
  auto good2 = run_folder("n2", synthetic_result("hello", "2024-05-02T02:00:00Z", "c2", {{"a", {1000}}}));
  auto failed = run_folder("n3", synthetic_result("hello", "2024-05-03T02:00:00Z", "c3", {{"a", {}, false}}));
  auto unfinished =
      run_folder("n4", synthetic_result("hello", "2024-05-04T02:00:00Z", "c4", {{"a", {1}}}, false));
  auto other = run_folder("n5", synthetic_result("other", "2024-05-05T02:00:00Z", "c5", {{"a", {1}}}));
  // Appended out of order: the newest is by started_at, not by when it was stored.
  for (auto& f : {good2, failed, good1, unfinished, other}) append_run_file(db_, f);
  EXPECT_EQ(last_good_run(db_, "hello"), good2);
  EXPECT_EQ(last_good_run(db_, "other"), other);
  EXPECT_EQ(last_good_run(db_, "nobody"), std::nullopt);
}

// The schema as version 1 created it, frozen here: what a database of that version holds.
const char* kSchemaV1 = R"sql(
CREATE TABLE runs (id INTEGER PRIMARY KEY, run_folder TEXT NOT NULL, result_path TEXT NOT NULL,
  started_at TEXT NOT NULL, finished_at TEXT, scenario TEXT NOT NULL,
  scenario_sha256 TEXT NOT NULL DEFAULT '', git_commit TEXT, git_dirty INTEGER NOT NULL DEFAULT 0,
  loadlab_version TEXT NOT NULL DEFAULT '', UNIQUE (run_folder, started_at));
CREATE INDEX runs_by_scenario ON runs (scenario, started_at);
CREATE TABLE cells (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  key TEXT NOT NULL, ok INTEGER NOT NULL, error TEXT NOT NULL DEFAULT '', flags TEXT NOT NULL DEFAULT '[]',
  UNIQUE (run_id, key));
CREATE INDEX cells_by_key ON cells (key);
CREATE TABLE repetitions (cell_id INTEGER NOT NULL REFERENCES cells (id) ON DELETE CASCADE,
  idx INTEGER NOT NULL, qps REAL, p50_us REAL, p90_us REAL, p99_us REAL, p999_us REAL, max_us REAL,
  errors INTEGER, requests INTEGER, server_cpu_pct REAL, server_rss_kb_peak INTEGER, client_cpu_pct REAL,
  client_rss_kb_peak INTEGER, PRIMARY KEY (cell_id, idx));
INSERT INTO runs VALUES (1, '/runs/n1', '/runs/n1/result.json', '2024-04-01T02:00:00Z', '2024-04-01T03:00:00Z',
  'hello', 'ff', 'c0ffee', 0, '0.0.9');
INSERT INTO cells VALUES (1, 1, 'beast/d0/t1', 1, '', '[]');
INSERT INTO repetitions VALUES (1, 0, 950, 100, 200, 300, 400, 500, 0, 9500, 120, 8000, 70, 4000);
INSERT INTO repetitions VALUES (1, 1, 1050, 100, 200, 300, 400, 500, 0, 10500, 120, 8000, 70, 4000);
PRAGMA user_version = 1;
)sql";

TEST_F(HistoryTest, AVersionOneDatabaseIsMigratedAndKeepsItsRuns) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, kSchemaV1, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);

  auto h = History::open(db_, History::Mode::kExisting);
  EXPECT_EQ(query("PRAGMA user_version"), std::to_string(History::kSchemaVersion));
  auto runs = h.runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].git_commit, "c0ffee");
  EXPECT_EQ(runs[0].cells_ok, 1);
  EXPECT_EQ(h.series("hello", "beast/d0/t1", history_metric("qps"))[0].values,
            (std::vector<double>{950, 1050}));
  // The new columns have their defaults; the new table is there.
  EXPECT_EQ(query("SELECT overrides || git_tree_dirty FROM runs"), "[]0");
  EXPECT_EQ(query("SELECT unavailable FROM repetitions WHERE idx = 0"), "[]");
  EXPECT_EQ(query("SELECT count(*) FROM run_agents"), "0");
  // Version 3's: the old repetitions are measurements, nothing is accepted or judged yet.
  EXPECT_EQ(query("SELECT group_concat(phase) FROM repetitions"), "measure,measure");
  EXPECT_EQ(query("SELECT count(*) FROM levels") + query("SELECT count(*) FROM verdicts"), "00");
  // Version 4's: no figure of other work for the old repetitions.
  EXPECT_EQ(query("SELECT count(other_pct) FROM repetitions"), "0");
  // And it takes new runs with everything version 3 stores.
  auto file =
      run_folder("n2", synthetic_result("hello", "2024-05-01T02:00:00Z", "c1", {{"beast/d0/t1", {1200}}}));
  h.append_run(read_json_file(file), file);
  EXPECT_EQ(h.series("hello", "beast/d0/t1", history_metric("qps")).size(), 2u);
  EXPECT_EQ(query("SELECT count(*) FROM run_agents"), "1");
  // Opening it again migrates nothing and changes nothing.
  History::open(db_, History::Mode::kExisting);
  EXPECT_EQ(query("SELECT count(*) FROM runs"), "2");
}

// Each repetition's other work on the cell's CPUs (their busy time less the cell's processes'
// CPU) is stored, and a night's is the median repetition's, for the verdict's comparison with
// its baseline nights.
TEST_F(HistoryTest, EachRepetitionsOtherWorkOnTheCellsCpusIsStoredAndANightHasItsMedian) {
  auto h = History::open(db_, History::Mode::kCreate);
  auto result =
      synthetic_result("hello", "2024-05-01T02:00:00Z", "c1", {{"beast/d0/t1", {1000, 1100, 1200, 900}}});
  // Target (150 % of a core) on CPU 0, load (80 %) on CPU 1; their CPUs' busy time per repetition.
  const double busy[][2] = {{100, 100}, {100, 120}, {100, 60}};
  auto& reps = result["cells"][0]["repetitions"];
  for (size_t i = 0; i < 3; ++i) {
    reps[i]["target_agent"] = "local";
    reps[i]["server"]["cpus"] = "0";
    reps[i]["server"]["cpu_busy"] = {{{"cpu", 0}, {"busy_pct", busy[i][0]}}};
    nlohmann::json client = {{"cpu_pct", 80}, {"cpus", "1"}};
    client["cpu_busy"] = {{{"cpu", 1}, {"busy_pct", busy[i][1]}}};
    reps[i]["load_parts"] = nlohmann::json::array({{{"agent", "local"}, {"client", client}}});
  }
  // The fourth says nothing of its CPUs: unknown, not -230.
  auto file = run_folder("n1", result);
  h.append_run(read_json_file(file), file);
  EXPECT_EQ(query("SELECT group_concat(coalesce(other_pct, 'null')) FROM repetitions"),
            "-30.0,-10.0,-70.0,null");
  auto n = h.nights("hello", "beast/d0/t1", history_metric("qps"));
  ASSERT_EQ(n.nights.size(), 1u);
  EXPECT_EQ(n.nights[0].other_pct, -30);
  EXPECT_FALSE(n.nights[0].confirm_other_pct) << "no confirmation: unknown";
}

// Instructions per request are stored with how they were counted: the cell's settings (and so
// its qps nights) do not change when a scenario starts counting, and nights counted one way are
// never in the band of nights counted another.
TEST_F(HistoryTest, InstructionsAreStoredAndTheirMethodSeparatesOnlyTheirNights) {
  auto h = History::open(db_, History::Mode::kCreate);
  auto night = [&](const char* name, const char* at, const char* method, double count) {
    auto result = synthetic_result("hello", at, "c1", {{"beast/d0/t1", {1000, 1100, 900}}});
    auto& cell = result["cells"][0];
    if (*method) {
      cell["cell"]["instructions"] = method;
      for (auto& r : cell["repetitions"]) r["instructions_per_request"] = count;
    }
    auto file = run_folder(name, result);
    h.append_run(read_json_file(file), file);
  };
  night("n1", "2024-05-01T02:00:00Z", "", 0);
  night("n2", "2024-05-02T02:00:00Z", "callgrind", 51234.5);
  night("n3", "2024-05-03T02:00:00Z", "counters", 61000);
  EXPECT_EQ(query("SELECT count(DISTINCT settings) FROM cells"), "1");
  EXPECT_EQ(query("SELECT group_concat(instructions_method) FROM repetitions WHERE idx = 0"),
            ",callgrind,counters");
  auto qps = h.nights("hello", "beast/d0/t1", history_metric("qps"));
  ASSERT_EQ(qps.nights.size(), 3u);
  EXPECT_EQ(qps.nights[0].fingerprint, qps.nights[2].fingerprint);
  auto counted = h.nights("hello", "beast/d0/t1", history_metric("instructions"));
  ASSERT_EQ(counted.nights.size(), 3u);
  EXPECT_TRUE(counted.nights[0].values.empty());
  EXPECT_EQ(counted.nights[1].values, (std::vector<double>{51234.5, 51234.5, 51234.5}));
  EXPECT_NE(counted.nights[1].fingerprint, counted.nights[2].fingerprint);
  EXPECT_FALSE(history_metric("instructions").higher_is_better);
}

TEST_F(HistoryTest, WrongFilesAreInputErrorsNamingWhatIsWrong) {
  EXPECT_EQ(input_error_of([&] { History::open(db_, History::Mode::kExisting); }),
            "FILE: no history database here (`loadlab run --history FILE` creates one)");
  EXPECT_FALSE(std::filesystem::exists(db_));
  EXPECT_NE(input_error_of([&] {
              History::open(dir_.string(), History::Mode::kCreate);
            }).find("FILE: cannot open it as a database (SQLite: "),
            std::string::npos);
  EXPECT_NE(input_error_of([&] {
              History::open((dir_ / "no" / "h.db").string(), History::Mode::kCreate);
            }).find("FILE: cannot open it as a database"),
            std::string::npos);

  std::ofstream(dir_ / "text.db") << "this is not a database, just some text long enough to have a header\n";
  EXPECT_NE(input_error_of([&] {
              History::open((dir_ / "text.db").string(), History::Mode::kExisting);
            }).find("FILE: not a loadlab history database (SQLite: file is not a database"),
            std::string::npos);

  sqlite3* db = nullptr;
  sqlite3_open((dir_ / "other.db").c_str(), &db);
  sqlite3_exec(db, "CREATE TABLE t (x)", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  EXPECT_EQ(input_error_of([&] { History::open((dir_ / "other.db").string(), History::Mode::kExisting); }),
            "FILE: not a loadlab history database (it has tables but no schema version)");

  sqlite3_open(db_.c_str(), &db);
  sqlite3_exec(db, "PRAGMA user_version = 99", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  EXPECT_EQ(input_error_of([&] { History::open(db_, History::Mode::kExisting); }),
            "FILE: history schema version 99 is newer than this loadlab's (" +
                std::to_string(History::kSchemaVersion) + "); use a newer loadlab");
}

TEST_F(HistoryTest, ADocumentThatIsNotAResultIsRefusedAndStoresNothing) {
  auto h = History::open(db_, History::Mode::kCreate);
  EXPECT_EQ(input_error_of([&] {
              h.append_run(nlohmann::json{{"name", "x"}}, "x.json");
            }),
            "/cells: not a loadlab result.json (no cells array)");
  auto bad = synthetic_result("hello", "2024-05-01T02:00:00Z", "c", {{"a", {1}}, {"b", {1}}});
  bad["cells"][1]["repetitions"][0]["qps"] = "fast";
  EXPECT_NE(
      input_error_of([&] { h.append_run(bad, "x.json"); }).find("/cells/1: not a loadlab.v1.CellResult"),
      std::string::npos);
  EXPECT_EQ(query("SELECT count(*) FROM runs"), "0");
}

TEST_F(HistoryTest, EveryCompareMetricIsAHistoryMetricWithItsDirection) {
  for (auto& name : metric_names()) EXPECT_EQ(history_metric(name).name, name);
  EXPECT_TRUE(history_metric("qps").higher_is_better);
  EXPECT_FALSE(history_metric("p99_ms").higher_is_better);
  EXPECT_EQ(input_error_of([] { history_metric("speed"); }),
            "--metric: unknown metric \"speed\"; allowed: qps, p50_ms, p90_ms, p99_ms, server_cpu_pct, "
            "server_rss_kb, client_cpu_pct, capacity, instructions");
}

}  // namespace
}  // namespace loadlab::controller
