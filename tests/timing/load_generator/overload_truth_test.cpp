// Truth tests of what a window served: an open loop that cannot hold its rate from the first
// second counts the requests that ended inside the window (whatever their send slot), which the
// real loadlab-target's own count over the same window gives; a closed loop's completions are
// its measured requests and those begun in warm-up that ended inside the window.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>

#include "http_get.hpp"
#include "load_result.hpp"
#include "load_runner.hpp"
#include "load_test_support.hpp"
#include "loadlab/load/load_options.hpp"
#include "target_process.hpp"

namespace loadlab::load::overload_truth {

using namespace std::chrono_literals;
using testing::TargetProcess;

// The requests the target has answered so far; none when it does not answer.
std::optional<int64_t> served(uint16_t port) {
  const auto n = loadlab::testing::target_served("127.0.0.1:" + std::to_string(port));
  return n ? std::optional<int64_t>(static_cast<int64_t>(*n)) : std::nullopt;
}

// One io thread burning 100 µs of CPU a request answers at most 10 000 requests a second on any
// machine (the burn reads the thread's CPU clock), so 20 000 a second is beyond it from the
// first slot: warm-up's backlog of slots fills the window, and the requests whose slots fell in
// it are only part of what it served. Its own count over the window is the truth.
TEST(OverloadTruth, AnOpenLoopThatFellBehindCountsWhatTheWindowServed) {
  TargetProcess target({"--threads", "1", "--work-us", "100"});
  ASSERT_NE(target.port(), 0);
  LoadOptions o;
  o.url = target.url();
  o.connections = 50;
  o.rate = 20000;
  o.duration_s = 3;
  o.warmup_s = 0.5;
  std::optional<int64_t> at_open;
  RunCallbacks callbacks;
  callbacks.on_measure_start = [&] { at_open = served(target.port()); };
  const LoadResult r = testing::run_bounded(o, 30s, callbacks);
  const auto at_end = target.stop();  // after the load: the requests in flight at the close too
  ASSERT_TRUE(at_open.has_value());
  ASSERT_TRUE(at_end.has_value());
  EXPECT_EQ(r.errors, 0);
  EXPECT_FALSE(r.rate_held) << "achieved " << r.achieved_rate;
  ASSERT_GT(r.duration_s, 2.9);
  const int64_t truth = *at_end - *at_open;  // the window's, and at most 50 answered after it
  ASSERT_GT(truth, 1000);
  EXPECT_NEAR(static_cast<double>(r.window_completions), static_cast<double>(truth), 0.02 * truth)
      << "served " << truth << " in the window, counted " << r.window_completions << " (by slot "
      << r.requests << ")";
  EXPECT_NEAR(r.completion_rate, r.window_completions / r.duration_s, 1e-6);
  // The slots' count is the smaller: warm-up's slots took the window's first responses.
  EXPECT_LT(r.requests, r.window_completions);
  EXPECT_NE(format_summary(r, o).find(fmt::format("Requests/sec: {:.2f}", r.completion_rate)),
            std::string::npos)
      << format_summary(r, o);
}

// A closed loop's window completions are its measured requests and the requests begun in
// warm-up that ended inside the window (at most one a connection).
TEST(OverloadTruth, AClosedLoopsCompletionsAreItsRequestsAndWarmUpsLastOnes) {
  TargetProcess target({"--threads", "1", "--delay-ms", "1"});
  ASSERT_NE(target.port(), 0);
  LoadOptions o;
  o.url = target.url();
  o.connections = 10;
  o.duration_s = 1;
  o.warmup_s = 0.3;
  const LoadResult r = testing::run_bounded(o, 30s);
  const auto seen = target.stop();
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(r.errors, 0);
  ASSERT_GT(r.requests, 100);
  EXPECT_GE(r.window_completions, r.requests);
  EXPECT_LE(r.window_completions, r.requests + o.connections);
  EXPECT_LE(r.window_completions, *seen);
}

}  // namespace loadlab::load::overload_truth
