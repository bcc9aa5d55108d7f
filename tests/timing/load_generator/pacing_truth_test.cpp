// Truth tests of the open loop's pacing granularity (--pace-granularity): a coarser granularity
// sends slots early, never by more than it, and keeps the rate; the latency of a request sent
// early counts from when it began (its connect or its write), so it is never below what the server takes (a
// known delay). Every run is bounded; the target is stopped by pid.
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

// How the origins sit against slots every `slot_us` (the i-th origin against slot i): off their
// slot by more than the CSV's rounding, after it, more than `granularity_us` before it, and over
// 100 µs before it.
struct AgainstSlots {
  size_t off = 0, late = 0, too_early = 0, early = 0;
};
AgainstSlots against_slots(const std::vector<long long>& origin, long long slot_us,
                           long long granularity_us) {
  AgainstSlots a;
  for (size_t i = 0; i < origin.size(); ++i) {
    const long long slot = slot_us * static_cast<long long>(i);
    a.off += std::llabs(origin[i] - slot) > 1;
    a.late += origin[i] > slot + 1;
    a.too_early += origin[i] < slot - granularity_us - 1;
    a.early += origin[i] < slot - 100;
  }
  return a;
}

// HTTP/1.1 over 20 connections (http1_close: a new connection a request), or h2c over one
// connection of 20 streams.
LoadOptions options(const std::string& url, const std::string& protocol) {
  LoadOptions o;
  o.url = url;
  o.protocol = protocol == "h2" ? "h2" : "http1";
  o.keep_alive = protocol != "http1_close";
  o.connections = protocol == "h2" ? 1 : 20;
  if (protocol == "h2") o.streams = 20;
  o.rate = 2000;
  o.duration_s = 2;
  return o;
}

class PacingTruth : public ::testing::TestWithParam<std::string> {};

// 2 000 requests a second are a slot every 500 µs. At granularity 0 every request counts from
// its own slot. At 2 ms a wake-up of the thread (the pacer's timer, or a response) sends every
// slot due within the next 2 ms: a request is sent at most 2 ms early, and one sent early counts
// from when it began, so against a 1 ms server with enough connections (streams) for every batch no
// latency reads less than the server's 1 ms. Both hold the rate (the server's own count).
TEST_P(PacingTruth, AGranularitySendsSlotsEarlyWithinItAndCountsFromWhenTheyBegan) {
  TargetProcess target({"--threads", "1", "--delay-ms", "1"});
  ASSERT_NE(target.port(), 0);
  LoadOptions o = options(target.url(), GetParam());
  o.pace_granularity_us = 0;
  auto even = testing::run_with_csv(o, "pacing-0-" + GetParam());
  o.pace_granularity_us = 2000;
  auto coarse = testing::run_with_csv(o, "pacing-2000-" + GetParam());
  auto seen = target.stop();
  ASSERT_TRUE(seen.has_value());
  for (const auto* run : {&even, &coarse}) {
    EXPECT_EQ(run->result.errors, 0);
    EXPECT_TRUE(run->result.rate_held) << run->result.achieved_rate;
    EXPECT_NEAR(static_cast<double>(run->rows.size()), 4000, 40);
    // The 1 ms the server waits before each answer is the least any request can take; without
    // keep-alive each request also pays its own connect (with it, the connections are made before
    // the first slot), which one begun early counts too: from its connect, not its write.
    EXPECT_GE(run->result.histogram.min(), 1000) << "a latency below the server's delay";
    const auto short_rows = std::count_if(run->rows.begin(), run->rows.end(), [&](const testing::Row& r) {
      return r.total + 1 < (o.keep_alive ? 0 : r.connect) + 1000;
    });
    EXPECT_EQ(short_rows, 0) << "requests whose latency leaves out their connect or the server's delay";
  }
  // Every measured request reached the server; no more than those in flight at each end besides.
  EXPECT_GE(*seen, even.result.requests + coarse.result.requests);
  EXPECT_LE(*seen, even.result.requests + coarse.result.requests + 80);
  ASSERT_GT(even.rows.size(), 3900u);
  ASSERT_GT(coarse.rows.size(), 3900u);
  EXPECT_EQ(against_slots(origins(even.rows), 500, 0).off, 0u) << "granularity 0: not counted from the slot";
  const AgainstSlots sent = against_slots(origins(coarse.rows), 500, 2000);
  EXPECT_EQ(sent.late, 0u) << "granularity 2 ms: requests counted from after their slot";
  EXPECT_EQ(sent.too_early, 0u) << "granularity 2 ms: requests sent more than 2 ms early";
  // Responses come every 500 µs, each a wake-up that sends the slots of the next 2 ms: most go
  // early.
  EXPECT_GT(sent.early, coarse.rows.size() / 2) << "granularity 2 ms: requests sent over 100 µs early";
  // The summary says so.
  EXPECT_NE(format_summary(coarse.result, o).find("uniform arrivals, sent up to 2000 µs early;"),
            std::string::npos)
      << format_summary(coarse.result, o);
  o.pace_granularity_us = 0;
  EXPECT_NE(format_summary(even.result, o).find("uniform arrivals; uncorrected"), std::string::npos)
      << format_summary(even.result, o);
}

INSTANTIATE_TEST_SUITE_P(Protocols, PacingTruth, ::testing::Values("http1", "http1_close", "h2"),
                         [](const auto& info) { return info.param; });

}  // namespace loadlab::load::pacing_truth
