// Truth tests of the open loop's pacing granularity (--pace-granularity): a coarser granularity
// sends slots early, never by more than it, and keeps the rate; the latency of a request sent
// early counts from its write, so it is never below what the server takes (a known delay).
// Every run is bounded; the target is stopped by pid.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "load_result.hpp"
#include "load_runner.hpp"
#include "load_test_support.hpp"
#include "loadlab/load/load_options.hpp"
#include "request_csv_rows.hpp"
#include "target_process.hpp"

namespace loadlab::load::pacing_truth {

using testing::TargetProcess;

// The requests' latency origins, µs from the window's start, in order: the slot, or the
// write when the granularity sent it early. One thread paces its slots in order and sends them
// in order, so the i-th origin belongs to slot i, at i / rate (the window opens at slot 0).
std::vector<long long> origins(const std::vector<testing::Row>& rows) {
  std::vector<long long> starts;
  for (const auto& r : rows) starts.push_back(r.start);
  std::sort(starts.begin(), starts.end());
  return starts;
}

// 2 000 requests a second are a slot every 500 µs. At granularity 0 every request counts from
// its own slot. At 2 ms a wake-up of the thread (the pacer's timer, or a response) sends every
// slot due within the next 2 ms: a request is sent at most 2 ms early, and one sent early counts
// from its write, so against a 1 ms server with enough connections for every batch no latency
// reads less than the server's 1 ms. Both hold the rate (the server's own count).
TEST(PacingTruth, AGranularitySendsSlotsEarlyWithinItAndCountsFromTheWrite) {
  TargetProcess target({"--threads", "1", "--delay-ms", "1"});
  ASSERT_NE(target.port(), 0);
  LoadOptions o;
  o.url = target.url();
  o.connections = 20;
  o.rate = 2000;
  o.duration_s = 2;
  o.pace_granularity_us = 0;
  auto even = testing::run_with_csv(o, "pacing-0");
  o.pace_granularity_us = 2000;
  auto coarse = testing::run_with_csv(o, "pacing-2000");
  auto seen = target.stop();
  ASSERT_TRUE(seen.has_value());
  for (const auto* run : {&even, &coarse}) {
    EXPECT_EQ(run->result.errors, 0);
    EXPECT_TRUE(run->result.rate_held) << run->result.achieved_rate;
    EXPECT_NEAR(static_cast<double>(run->rows.size()), 4000, 40);
    // The 1 ms the server waits before each answer is the least any request can take.
    EXPECT_GE(run->result.histogram.min(), 1000) << "a latency below the server's delay";
  }
  // Every measured request reached the server; no more than those in flight at each end besides.
  EXPECT_GE(*seen, even.result.requests + coarse.result.requests);
  EXPECT_LE(*seen, even.result.requests + coarse.result.requests + 4 * o.connections);
  const auto at_slot = origins(even.rows), sent = origins(coarse.rows);
  ASSERT_GT(at_slot.size(), 3900u);
  ASSERT_GT(sent.size(), 3900u);
  size_t off_slot = 0, too_early = 0, late = 0, early = 0;
  for (size_t i = 0; i < at_slot.size(); ++i)
    off_slot += std::llabs(at_slot[i] - 500 * static_cast<long long>(i)) > 1;
  for (size_t i = 0; i < sent.size(); ++i) {
    const long long slot = 500 * static_cast<long long>(i);
    late += sent[i] > slot + 1;
    too_early += sent[i] < slot - 2000 - 1;
    early += sent[i] < slot - 100;
  }
  EXPECT_EQ(off_slot, 0u) << "granularity 0: requests not counted from their slot";
  EXPECT_EQ(late, 0u) << "granularity 2 ms: requests counted from after their slot";
  EXPECT_EQ(too_early, 0u) << "granularity 2 ms: requests sent more than 2 ms early";
  // Responses come every 500 µs, each a wake-up that sends the slots of the next 2 ms: most go
  // early.
  EXPECT_GT(early, sent.size() / 2) << "granularity 2 ms: requests sent over 100 µs early";
  // The summary says so.
  EXPECT_NE(format_summary(coarse.result, o).find("uniform arrivals, sent up to 2000 µs early;"),
            std::string::npos)
      << format_summary(coarse.result, o);
  o.pace_granularity_us = 0;
  EXPECT_NE(format_summary(even.result, o).find("uniform arrivals; uncorrected"), std::string::npos)
      << format_summary(even.result, o);
}

}  // namespace loadlab::load::pacing_truth
