// LoadRunner against an in-test Beast server on 127.0.0.1:0, its figures in real time: the
// duration window ends on time, a shutdown ends a run early and keeps what it measured, and an
// open loop holds a rate within the server's reach and reports one beyond it. Every run is
// bounded (run_bounded(), or a wait on the run's future).
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "input_error_of.hpp"
#include "load_runner.hpp"
#include "load_runner_support.hpp"
#include "load_test_support.hpp"
#include "loadlab/load/load_options.hpp"
#include "test_server.hpp"

namespace loadlab::load {
namespace {

using loadlab::load::testing::options_for;
using loadlab::load::testing::run_bounded;
using loadlab::load::testing::TestServer;
using loadlab::testing::input_error_of;

using namespace std::chrono_literals;

TEST(LoadRunnerTest, DurationWindowIsHonoured) {
  TestServer server;
  LoadOptions o = options_for(server);
  o.threads = 2;
  o.connections = 4;
  o.duration_s = 1.0;
  auto start = std::chrono::steady_clock::now();
  LoadResult r = run_bounded(o);
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NEAR(r.duration_s, 1.0, 0.1);
  EXPECT_LT(wall, 1.5);
  EXPECT_GT(r.requests, 100);
  EXPECT_EQ(r.errors, 0);
  EXPECT_LE(r.requests, server.requests());
}

TEST(LoadRunnerTest, ShutdownStopsEarlyAndKeepsWhatWasMeasured) {
  TestServer server;
  LoadOptions o = options_for(server);
  o.duration_s = 30;
  ASSERT_EQ(input_error_of([&] { complete_and_validate(o); }), "");
  LoadRunner runner(o);
  auto future = std::async(std::launch::async, [&] { return runner.run(); });
  std::this_thread::sleep_for(300ms);
  runner.initiate_shutdown();
  ASSERT_EQ(future.wait_for(5s), std::future_status::ready);
  LoadResult r = future.get();
  EXPECT_TRUE(r.interrupted);
  EXPECT_GT(r.requests, 0);
  EXPECT_NEAR(r.duration_s, 0.3, 0.1);
}

// A 2 ms server on one connection completes at most 500 requests a second: asked for
// 2000, the run says it did not hold the rate and what it achieved.
TEST(LoadRunnerTest, RateNotHeldIsReported) {
  TestServer server(2ms);
  LoadOptions o = options_for(server);
  o.rate = 2000;
  o.duration_s = 1;
  LoadResult r = run_bounded(o);
  EXPECT_FALSE(r.rate_held);
  EXPECT_GT(r.achieved_rate, 100);
  EXPECT_LT(r.achieved_rate, 600);
  EXPECT_NE(rate_not_held_message(r).find("rate not held: achieved "), std::string::npos);
  EXPECT_NE(rate_not_held_message(r).find(" of 2000 req/s"), std::string::npos) << rate_not_held_message(r);
}

// The same server with ten connections holds 500 a second: -n ends on schedule, and the
// rate counts as held.
TEST(LoadRunnerTest, RateWithinReachIsHeld) {
  TestServer server(2ms);
  LoadOptions o = options_for(server);
  o.connections = 10;
  o.rate = 500;
  o.requests_per_thread = 250;
  LoadResult r = run_bounded(o);
  EXPECT_TRUE(r.rate_held) << r.achieved_rate;
  EXPECT_NEAR(r.achieved_rate, 500, 5);
  EXPECT_EQ(rate_not_held_message(r), "");
}

}  // namespace
}  // namespace loadlab::load
