// One cell through the executor, on a fake agent: which failures of a load agent are
// retried, and the agents a retry uses.
#include "run/cell_executor.hpp"

#include <gtest/gtest.h>

#include "fake_agent.hpp"
#include "simulated_clock.hpp"

namespace loadlab::controller {
namespace {

using fake::FakeAgent;
using fake::LoadStream;
using fake::TargetStream;

// A lab of one fake agent "a" that takes both roles, and an executor for a one-cell
// scenario that allows two retries without waiting between them.
class CellExecutorTest : public ::testing::Test {
 protected:
  CellExecutorTest() {
    agent.on_host_target = [](TargetStream& t) {
      t.on_write = [](const v1::TargetCommand& cmd, TargetStream& t) {
        if (cmd.has_spec()) t.send(fake::ready("127.0.0.1:9000", 7));
      };
      t.on_writes_done = [](TargetStream& t) { t.end(); };
    };
    pool.add({"a", "fake:1", {"target", "load"}, {}}, 1);
  }

  // The cell, with every RunLoad answered by `status` as soon as its spec is sent.
  std::optional<CellResult> run_with_load_status(grpc::Status status) {
    agent.on_run_load = [status](LoadStream& l) {
      l.on_writes_done = [status](LoadStream& l) { l.end(status); };
    };
    CellOptions options = CellOptions::from(scenario, nullptr);
    options.repetition.clock = &clock;
    options.repetition.cancel = fake::canceller({&agent});
    CellExecutor executor(scenario, pool, progress, options);
    return executor.run(expand(scenario)[0], 0);
  }

  Scenario scenario = parse_scenario(nlohmann::json::parse(R"({"name": "s",
      "targets": [{"name": "b", "builtin": "hello"}],
      "matrix": {"delay_ms": [0], "threads": [2]},
      "load": {"requests_per_thread": 100},
      "execution": {"retries": 2, "retry_backoff_s": 0}})"));
  FakeAgent agent{"a"};
  AgentPool pool{[this](const AgentDef&) { return AgentStub{nullptr, agent.stub()}; }};
  SimulatedClock clock;
  ProgressReporter progress{1, false, true};
};

TEST_F(CellExecutorTest, ALoadAgentThatRefusesTheSpecIsNotRetried) {
  auto cell =
      run_with_load_status(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "threads: must be at most 1000"));
  ASSERT_TRUE(cell.has_value());
  EXPECT_FALSE(cell->ok());
  EXPECT_EQ(cell->error,
            "measure: load agent a: threads: must be at most 1000 (not retried: no attempt can fix it)");
  EXPECT_EQ(agent.loads().size(), 1u);
  ASSERT_EQ(agent.targets().size(), 1u);
  EXPECT_TRUE(agent.targets()[0]->cancelled());  // its target is stopped, not left running
}

TEST_F(CellExecutorTest, ALoadAgentThatIsUnavailableIsRetriedUpToTheScenariosRetries) {
  auto cell = run_with_load_status(grpc::Status(grpc::StatusCode::UNAVAILABLE, "Socket closed"));
  ASSERT_TRUE(cell.has_value());
  EXPECT_EQ(cell->error, "measure: load agent a: Socket closed (after 3 attempts)");
  EXPECT_EQ(agent.loads().size(), 3u);
  EXPECT_EQ(agent.targets().size(), 3u);
}

}  // namespace
}  // namespace loadlab::controller
