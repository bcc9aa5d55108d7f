#pragma once
// A run of a small scenario on the embedded agent, over the same gRPC path as a remote agent:
// the fixture of tests/process/integration/run_test.cpp and tests/timing/integration/run_truth_test.cpp.
#include <gtest/gtest.h>

#include "local_agent.hpp"
#include "run/scenario_run.hpp"
#include "test_support.hpp"

// Named, not anonymous: the fixture is one class in every file that uses it.
namespace loadlab::controller::run_fixture {

using loadlab::testing::child_pids;
using loadlab::testing::TempDir;

inline const char* const kScenario = R"({
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

}  // namespace loadlab::controller::run_fixture
