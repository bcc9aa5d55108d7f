// A small scenario through the embedded agent, over the same gRPC path as a remote agent,
// checked against ground truth: a 5 ms server at 10 connections serves ~2000 requests/s.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "loadlab/controller/runner.hpp"
#include "loadlab/shared/json_input.hpp"
#include "local_agent.hpp"
#include "test_support.hpp"

namespace loadlab::controller {
namespace {

using loadlab::testing::child_pids;
using loadlab::testing::TempDir;

const char* kScenario = R"({
  "name": "it",
  "targets": [{"name": "beast", "builtin": "hello", "server_threads": 1, "body": "0123456789"}],
  "matrix": {"delay_ms": [0, 5], "threads": [1, 10]},
  "load": {"requests_per_thread": 300, "warmup_s": 0.2, "path": "/x"}
})";

class RunTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(child_pids().empty()) << "test process already has children"; }
  // Options for a run on the embedded agent.
  RunOptions options() const {
    RunOptions o;
    o.bin_dir = LOADLAB_BIN_DIR;
    o.quiet = true;
    o.embedded_agent = start_local_agent;
    return o;
  }
  TempDir dir;
};

TEST_F(RunTest, EmbeddedAgentMatrixMatchesGroundTruth) {
  RunOptions o = options();
  o.scenario_path = dir.file("s.json", kScenario);
  o.out_dir = (dir.path() / "out").string();
  std::ostringstream table;
  ASSERT_EQ(run_scenario(o, table), 0) << table.str();

  // Every process the run started is gone (and reaped): the test process has no children.
  EXPECT_TRUE(child_pids().empty());

  auto result = read_json_file((dir.path() / "out" / "result.json").string());
  ASSERT_EQ(result["cells"].size(), 4u);
  EXPECT_EQ(result["scenario"]["name"], "it");
  for (auto& cell : result["cells"]) {
    SCOPED_TRACE(cell["key"].get<std::string>());
    ASSERT_TRUE(cell["ok"].get<bool>()) << cell.dump();
    // -n 300 per thread: exactly that many measured requests, none failed.
    EXPECT_EQ(cell["requests"].get<uint64_t>(), 300u * cell["threads"].get<uint64_t>());
    EXPECT_EQ(cell["errors"].get<uint64_t>(), 0u);
    EXPECT_EQ(cell["status"]["200"].get<uint64_t>(), cell["requests"].get<uint64_t>());
    // CPU is asserted where the window is long: the 0 ms cells measure for a few ms, less
    // than a mark takes to travel worker → agent → controller → target agent on a busy
    // machine, so their server window may open after the load is over.
    if (cell["server"]["window_s"].get<double>() >= 0.5) {
      EXPECT_GT(cell["server"]["cpu_pct"].get<double>(), 0);
      EXPECT_GT(cell["client"]["cpu_pct"].get<double>(), 0);
    }
    EXPECT_GE(cell["server"]["cpu_pct"].get<double>(), 0);
    EXPECT_GT(cell["server"]["rss_kb_peak"].get<uint64_t>(), 0u);
    EXPECT_GT(cell["client"]["rss_kb_peak"].get<uint64_t>(), 0u);
    EXPECT_GT(cell["server"]["rss_kb_mean"].get<uint64_t>(), 0u);
    EXPECT_LE(cell["server"]["rss_kb_mean"].get<uint64_t>(), cell["server"]["rss_kb_peak"].get<uint64_t>());
    auto lat = cell["latency_us"];
    EXPECT_LE(lat["p50"].get<double>(), lat["p90"].get<double>());
    EXPECT_LE(lat["p90"].get<double>(), lat["p99"].get<double>());
    EXPECT_LE(lat["p99"].get<double>(), lat["max"].get<double>());
    // The histogram sent back holds every measured request.
    EXPECT_EQ(cell["repetitions"][0]["histogram"]["count"].get<uint64_t>(), cell["requests"].get<uint64_t>());
  }
  const auto& c5 = result["cells"][3];
  ASSERT_EQ(c5["key"], "beast/d5/t10");
  // 10 connections in closed loop on a 5 ms server: 10 / 0.005 s = 2000 requests/s.
  EXPECT_NEAR(c5["qps"].get<double>(), 2000.0, 200.0);
  EXPECT_GE(c5["latency_us"]["p50"].get<double>(), 5000.0);
  EXPECT_LT(c5["latency_us"]["p50"].get<double>(), 6000.0);
  // One connection on a 5 ms server waits ≥ 5 ms per request; at 0 ms it is far faster.
  EXPECT_GE(result["cells"][2]["latency_us"]["min"].get<double>(), 5000.0);
  EXPECT_LT(result["cells"][0]["latency_us"]["p50"].get<double>(), 2000.0);

  // The matrix files exist and hold one row per cell.
  std::ifstream csv(dir.path() / "out" / "matrix.csv");
  std::string text((std::istreambuf_iterator<char>(csv)), {});
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 5);
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "out" / "matrix.md"));
  EXPECT_NE(table.str().find("beast"), std::string::npos);
}

TEST_F(RunTest, OpenLoopRateGoesThroughTheAgentAndIsHeld) {
  RunOptions o = options();
  o.scenario_path = dir.file("s.json", R"({"name": "open",
      "targets": [{"name": "beast", "builtin": "hello", "server_threads": 1}],
      "matrix": {"delay_ms": [1], "threads": [2]},
      "load": {"duration_s": 2, "rate": 500, "connections_per_thread": 4}})");
  o.out_dir = (dir.path() / "out").string();
  std::ostringstream table;
  ASSERT_EQ(run_scenario(o, table), 0) << table.str();
  auto cell = read_json_file((dir.path() / "out" / "result.json").string())["cells"][0];
  const auto& rep = cell["repetitions"][0];
  EXPECT_NEAR(cell["qps"].get<double>(), 500.0, 5.0);
  EXPECT_DOUBLE_EQ(rep["rate"].get<double>(), 500.0);
  EXPECT_TRUE(rep["latency_corrected"].get<bool>());
  // Nothing stalls, so corrected and uncorrected agree to within a millisecond.
  EXPECT_GE(rep["latency_us"]["p50"].get<double>(), 1000.0);
  EXPECT_NEAR(rep["latency_us"]["p50"].get<double>(), rep["latency_uncorrected_us"]["p50"].get<double>(),
              1000.0);
}

TEST_F(RunTest, APhaseThatRunsOutFailsTheCellNamingThePhase) {
  RunOptions o = options();
  o.scenario_path = dir.file("s.json", R"({"name": "slow",
      "targets": [{"name": "beast", "builtin": "hello", "server_threads": 1}],
      "matrix": {"delay_ms": [0, 1], "threads": [1]},
      "load": {"duration_s": 5},
      "execution": {"retries": 0, "deadlines": {"measure_s": 1}}})");
  o.out_dir = (dir.path() / "out").string();
  std::ostringstream table;
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(run_scenario(o, table), 3);  // some cells failed
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(8));
  auto cells = read_json_file((dir.path() / "out" / "result.json").string())["cells"];
  ASSERT_EQ(cells.size(), 2u);  // the run went on after the first failure
  for (auto& c : cells) {
    EXPECT_FALSE(c["ok"].get<bool>());
    EXPECT_EQ(c["error"], "measure: phase 'measure' ran out after 1 s (after 1 attempts)");
  }
  EXPECT_NE(table.str().find("FAILED: measure: phase 'measure' ran out"), std::string::npos) << table.str();
  EXPECT_TRUE(child_pids().empty());
}

TEST_F(RunTest, RefusesToOverwriteAnEarlierResult) {
  RunOptions o = options();
  o.scenario_path = dir.file("s.json", kScenario);
  o.out_dir = dir.path().string();
  dir.file("result.json", "{\"kept\": true}");
  std::ostringstream table;
  EXPECT_THROW(run_scenario(o, table), InputError);
  EXPECT_EQ(read_json_file((dir.path() / "result.json").string())["kept"], true);
}

}  // namespace
}  // namespace loadlab::controller
