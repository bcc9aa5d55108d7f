// A small scenario through the embedded agent, over the same gRPC path as a remote agent: the
// axes that reach the server and the client, a phase that runs out, an earlier result kept.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "loadlab/shared/json_input.hpp"
#include "local_agent.hpp"
#include "run/scenario_run.hpp"
#include "run_fixture.hpp"
#include "test_support.hpp"

namespace loadlab::controller {
namespace {

using loadlab::testing::child_pids;
using loadlab::testing::result_cells;
using loadlab::testing::TempDir;
using namespace run_fixture;

TEST_F(RunTest, KeepAliveAndBodySizeAxesReachTheServerAndTheClient) {
  RunOptions o = options();
  o.scenario_path = dir.file("s.json", R"({"name": "knobs",
      "targets": [{"name": "beast", "builtin": "hello", "server_threads": 1}],
      "matrix": {"keep_alive": [true, false], "body_size": [100, 20000]},
      "load": {"requests_per_thread": 100, "threads": 2, "connections": 4}})");
  o.out_dir = (dir.path() / "out").string();
  std::ostringstream table;
  ASSERT_EQ(run_scenario(o, table), 0) << table.str();
  auto cells = result_cells(dir.path() / "out" / "result.json");
  ASSERT_EQ(cells.size(), 4u);
  const char* keys[] = {"beast/ka1/b100", "beast/ka1/b20000", "beast/ka0/b100", "beast/ka0/b20000"};
  for (size_t i = 0; i < cells.size(); ++i) {
    SCOPED_TRACE(keys[i]);
    const auto& c = cells[i];
    ASSERT_EQ(c.cell().key(), keys[i]);
    ASSERT_TRUE(c.ok()) << c.error();
    const auto& m = c.median();
    EXPECT_EQ(m.requests(), 200u);
    EXPECT_EQ(m.errors(), 0u);
    // Every response carries the body the axis asked for, plus its headers.
    const uint64_t body = c.cell().body_size();
    EXPECT_GE(m.bytes_read(), m.requests() * body);
    EXPECT_LE(m.bytes_read(), m.requests() * (body + 300));
    // Without keep-alive every request has its own connection; with it, the 4 of the start.
    if (c.cell().keep_alive())
      EXPECT_EQ(m.connects(), 4u);
    else
      EXPECT_EQ(m.connects(), m.requests());
  }
  EXPECT_NE(table.str().find("keep-alive"), std::string::npos) << table.str();
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
  auto cells = result_cells(dir.path() / "out" / "result.json");
  ASSERT_EQ(cells.size(), 2u);  // the run went on after the first failure
  for (auto& c : cells) {
    EXPECT_FALSE(c.ok());
    EXPECT_EQ(c.error(), "measure: phase 'measure' ran out after 1 s (after 1 attempts)");
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
