// Truth tests: loadlab-load's figures against the real loadlab-target binary's own count,
// its configured delay, and (open loop) the requested rate and a server stall. Every run
// is bounded; the target is stopped by pid.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "fd_limit.hpp"
#include "load_runner.hpp"
#include "load_test_support.hpp"
#include "loadlab/load/load_options.hpp"
#include "request_csv_rows.hpp"
#include "target_process.hpp"

namespace loadlab::load {
namespace {

using namespace std::chrono_literals;
using testing::TargetProcess;

// Longer than the other tests' bound: these runs go against a real process.
LoadResult run_bounded(LoadOptions o, std::chrono::seconds limit = 30s) {
  return testing::run_bounded(std::move(o), limit);
}

double ms(int64_t us) { return us / 1000.0; }

TEST(TruthTest, RequestCountEqualsTheTargetsCount) {
  TargetProcess target({"--threads", "1"});
  ASSERT_NE(target.port(), 0);
  LoadOptions o;
  o.url = target.url();
  o.threads = 2;
  o.connections = 8;
  o.requests_per_thread = 5000;
  LoadResult r = run_bounded(o);
  auto seen = target.stop();
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(r.requests, 10000);
  EXPECT_EQ(r.errors, 0);
  EXPECT_EQ(*seen, r.requests);
  EXPECT_EQ(r.histogram.count(), r.requests);
}

TEST(TruthTest, RequestCountEqualsTheTargetsCountWithoutKeepAlive) {
  TargetProcess target({"--threads", "1"});
  ASSERT_NE(target.port(), 0);
  LoadOptions o;
  o.url = target.url();
  o.connections = 4;
  o.total_requests = 400;
  o.keep_alive = false;
  LoadResult r = run_bounded(o);
  auto seen = target.stop();
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(r.requests, 400);
  EXPECT_EQ(r.errors, 0);
  EXPECT_EQ(*seen, 400);
  // One connect per request, each timed apart from the request.
  EXPECT_EQ(r.connects, 400);
  EXPECT_EQ(r.connect_histogram.count(), 400);
  EXPECT_GT(r.connect_histogram.min(), 0);
}

TEST(TruthTest, MedianAgainstATenMsTargetIsTenToElevenMs) {
  TargetProcess target({"--threads", "1", "--delay-ms", "10"});
  ASSERT_NE(target.port(), 0);
  LoadOptions o;
  o.url = target.url();
  o.connections = 10;
  o.duration_s = 2;
  LoadResult r = run_bounded(o);
  target.stop();
  ASSERT_GT(r.requests, 1000);  // 10 connections / 10 ms = 1000 req/s at most
  double p50 = ms(r.histogram.value_at_percentile(50));
  EXPECT_GE(p50, 10.0);
  EXPECT_LE(p50, 11.0);
  EXPECT_GE(r.histogram.min(), 10000);
}

TEST(TruthTest, WarmupIsExcludedAtAThousandConnections) {
  raise_open_files_limit();  // the target inherits it: it holds 1000 sockets too
  TargetProcess target({"--threads", "1"});
  ASSERT_NE(target.port(), 0);
  LoadOptions o;
  o.url = target.url();
  o.threads = 2;
  o.connections = 1000;
  o.requests_per_thread = 3000;
  o.warmup_s = 1;
  LoadResult r = run_bounded(o, 60s);
  auto seen = target.stop();
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(r.connections, 1000);
  EXPECT_EQ(r.errors, 0);
  EXPECT_EQ(r.requests, 6000);
  EXPECT_EQ(r.histogram.count(), 6000);
  EXPECT_GT(r.warmup_requests, 1000);
  // Every request the target answered is either warm-up or measured, never both.
  EXPECT_EQ(*seen, r.requests + r.warmup_requests);
  EXPECT_EQ(r.connects, 0);  // all 1000 connected during warm-up
  EXPECT_NEAR(r.qps, r.requests / r.duration_s, 1e-6);
}

// 2000 requests/s is a fifth of what 10 connections can do on a 1 ms server (10 / 1 ms), so
// any machine that runs the test holds it; the rate is then exact to 1 %.
TEST(OpenLoopTest, FixedRateIsHeldWithinOnePercent) {
  TargetProcess target({"--threads", "1", "--delay-ms", "1"});
  ASSERT_NE(target.port(), 0);
  LoadOptions o;
  o.url = target.url();
  o.connections = 10;
  o.rate = 2000;
  o.duration_s = 2;
  LoadResult r = run_bounded(o);
  auto seen = target.stop();
  EXPECT_EQ(r.errors, 0);
  EXPECT_NEAR(r.qps, 2000, 20) << "held " << r.achieved_rate;
  EXPECT_EQ(r.rate, 2000);
  EXPECT_GE(r.histogram.value_at_percentile(50), 1000);
  EXPECT_GE(r.histogram_uncorrected.value_at_percentile(50), 1000);
  EXPECT_EQ(r.histogram_uncorrected.count(), r.histogram.count());
  ASSERT_TRUE(seen.has_value());
  EXPECT_GE(*seen, r.requests);       // every measured response was answered by the target
  EXPECT_LE(*seen - r.requests, 10);  // only the requests in flight when the window closed
}

// A rate well inside what this machine does in closed loop, measured here with the same
// connections, is held within 1 % and counts as held; three times that maximum is not, and
// says so. How close to the maximum the open loop gets is a figure for bench/open_loop.sh.
TEST(OpenLoopTest, RateWithinReachIsHeldAndBeyondItIsFlagged) {
  TargetProcess target({"--threads", "1"});
  ASSERT_NE(target.port(), 0);
  LoadOptions closed;
  closed.url = target.url();
  closed.connections = 10;
  closed.duration_s = 1;
  LoadResult max = run_bounded(closed);
  ASSERT_GT(max.requests, 400) << "too few requests to derive rates from";
  LoadOptions open = closed;
  open.rate = std::floor(max.qps / 4);
  open.duration_s = 2;
  LoadResult r = run_bounded(open);
  EXPECT_EQ(r.errors, 0);
  EXPECT_NEAR(r.qps, *open.rate, *open.rate * 0.01) << "closed-loop maximum " << max.qps;
  EXPECT_TRUE(r.rate_held) << r.achieved_rate;

  open.rate = std::floor(max.qps * 3);
  open.duration_s = 1;
  LoadResult beyond = run_bounded(open);
  target.stop();
  EXPECT_FALSE(beyond.rate_held) << "closed-loop maximum " << max.qps << ", achieved "
                                 << beyond.achieved_rate;
  EXPECT_LT(beyond.achieved_rate, *open.rate * 0.9);
  // Yet it begins what the connections can carry: at least the quarter of the closed-loop
  // maximum that the first open run held (more margin than a half: the machine may get busier
  // between the closed run and this one).
  EXPECT_GT(beyond.achieved_rate, max.qps / 4) << "closed-loop maximum " << max.qps;
}

TEST(OpenLoopTest, RequestBudgetIsExact) {
  TargetProcess target({"--threads", "1"});
  ASSERT_NE(target.port(), 0);
  LoadOptions o;
  o.url = target.url();
  o.threads = 2;
  o.connections = 4;
  o.rate = 4000;
  o.requests_per_thread = 1000;
  LoadResult r = run_bounded(o);
  auto seen = target.stop();
  EXPECT_EQ(r.requests, 2000);
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(*seen, 2000);
  EXPECT_GE(r.duration_s, 0.5 * 0.99);  // 2000 requests at 4000/s take no less than 0.5 s
}

// Poisson arrivals: the intended send times (the CSV's start offsets, from which latency
// counts) have exponential gaps of the rate's mean (Kolmogorov-Smirnov distance inside the
// 0.1 % critical value), the rate is held, and the same seed sends at the same times again.
// 2000 requests/s over 20 connections to a 1 ms server: a burst finds free connections.
TEST(OpenLoopTest, PoissonArrivalsSendAtExponentialGapsAndRepeatForASeed) {
  TargetProcess target({"--threads", "1", "--delay-ms", "1"});
  ASSERT_NE(target.port(), 0);
  LoadOptions o;
  o.url = target.url();
  o.connections = 20;
  o.rate = 2000;
  o.arrivals = "poisson";
  o.seed = 5;
  o.duration_s = 2;
  auto first = testing::run_with_csv(o, "poisson-1");
  auto again = testing::run_with_csv(o, "poisson-2");
  target.stop();
  for (const auto* run : {&first, &again}) {
    EXPECT_EQ(run->result.errors, 0);
    EXPECT_TRUE(run->result.rate_held) << run->result.achieved_rate;
    EXPECT_EQ(run->result.arrivals, "poisson");
  }
  const double n = static_cast<double>(first.rows.size());
  EXPECT_NEAR(n, 4000, 4 * std::sqrt(4000.0));  // a Poisson count: 4 standard deviations
  std::vector<long long> starts, starts_again;
  for (auto& r : first.rows) starts.push_back(r.start);
  for (auto& r : again.rows) starts_again.push_back(r.start);
  std::sort(starts.begin(), starts.end());
  std::sort(starts_again.begin(), starts_again.end());
  std::vector<double> gaps;
  for (size_t i = 1; i < starts.size(); ++i)
    gaps.push_back(static_cast<double>(starts[i] - starts[i - 1]) / 1e6);
  std::sort(gaps.begin(), gaps.end());
  double ks = 0;
  for (size_t i = 0; i < gaps.size(); ++i) {
    // The offsets are whole microseconds: the CDF at the gap's upper rounding edge and lower.
    const double hi = 1 - std::exp(-2000 * (gaps[i] + 0.5e-6)),
                 lo = 1 - std::exp(-2000 * std::max(0.0, gaps[i] - 0.5e-6));
    ks = std::max(
        {ks, lo - static_cast<double>(i + 1) / gaps.size(), static_cast<double>(i) / gaps.size() - hi, 0.0});
  }
  EXPECT_LT(ks, 1.95 / std::sqrt(static_cast<double>(gaps.size())));
  // The same seed: the same intended times (within the microsecond the CSV rounds to).
  ASSERT_GT(starts_again.size(), 1000u);
  ASSERT_GT(starts.size(), 1000u);
  for (size_t i = 0; i < 1000; ++i) EXPECT_NEAR(starts[i], starts_again[i], 1) << i;
}

// Uniform arrivals from several threads are one even pace of the run's rate: the threads'
// slots interleave. In phase (as they were), 4 threads at 500 requests/s sent 4 requests
// together every 8 ms, and a one-thread server spending 400 us on each queued them: the p90
// from the write was 1.74-1.78 ms where one thread at the same rate measured 0.52-0.55 ms
// (and 4 interleaved threads 0.50-0.61 ms). Each pair
// of runs alternates one thread and four, so that both see the same machine.
TEST(OpenLoopTest, UniformThreadsInterleaveIntoOneEvenPace) {
  TargetProcess target({"--threads", "1"});
  ASSERT_NE(target.port(), 0);
  LoadOptions o;
  o.url = target.url();
  o.connections = 4;
  o.rate = 500;
  o.duration_s = 2;
  o.headers = {"x-loadlab-work-us: 400"};
  std::vector<double> p90_one, p90_four;
  std::vector<long long> starts;
  for (int round = 0; round < 2; ++round) {
    o.threads = 1;
    auto one = testing::run_with_csv(o, "uniform-1-" + std::to_string(round));
    o.threads = 4;
    auto four = testing::run_with_csv(o, "uniform-4-" + std::to_string(round));
    for (const auto* run : {&one, &four}) {
      EXPECT_EQ(run->result.errors, 0);
      EXPECT_TRUE(run->result.rate_held) << run->result.achieved_rate;
    }
    p90_one.push_back(ms(one.result.histogram_uncorrected.value_at_percentile(90)));
    p90_four.push_back(ms(four.result.histogram_uncorrected.value_at_percentile(90)));
    if (round == 0)
      for (auto& r : four.rows) starts.push_back(r.start);
  }
  target.stop();
  // The four threads' intended send times, merged: every 2 ms (the CSV's whole microseconds).
  std::sort(starts.begin(), starts.end());
  ASSERT_GT(starts.size(), 900u);
  size_t even = 0;
  for (size_t i = 1; i < starts.size(); ++i) even += std::abs(starts[i] - starts[i - 1] - 2000) <= 1;
  EXPECT_GE(even, (starts.size() - 1) * 99 / 100) << even << " of " << starts.size() - 1 << " gaps are 2 ms";
  // What the server saw: no request queued behind another, as with one thread.
  const double one = *std::min_element(p90_one.begin(), p90_one.end()),
               four = *std::min_element(p90_four.begin(), p90_four.end());
  // Each response comes after its 400 us of work (burnt for at least as long by the wall clock).
  EXPECT_GE(one, 0.4);
  EXPECT_GE(four, 0.4);
  EXPECT_LT(four, 1.5 * one + 0.2) << "p90 from the write: 4 threads " << four << " ms, 1 thread " << one
                                   << " ms";
}

// The connections are a pool: a request waits in the client only when every connection of
// its thread is busy. Poisson arrivals at 300 requests/s to a 10 ms server keep 3 requests in
// flight on average, and 16 connections are then never all busy: the latency counted from
// the intended send times is the one counted from the writes. Were each connection given
// slots of its own (wrk2's way, this worker's before), each would be busy a fifth of the time
// and a fifth of the requests would wait behind it: measured so, the p90 was 14.8-15.3 ms
// against 10.2 ms from the write, the p99 24.9 against 11.8-12.1.
TEST(OpenLoopTest, ConnectionsAreAPoolARequestWaitsOnlyWhenAllAreBusy) {
  TargetProcess target({"--threads", "1", "--delay-ms", "10"});
  ASSERT_NE(target.port(), 0);
  LoadOptions o;
  o.url = target.url();
  o.connections = 16;
  o.rate = 300;
  o.arrivals = "poisson";
  o.seed = 3;
  o.duration_s = 3;
  LoadResult r = run_bounded(o);
  target.stop();
  EXPECT_EQ(r.errors, 0);
  EXPECT_TRUE(r.rate_held) << r.achieved_rate;
  const double p90 = ms(r.histogram.value_at_percentile(90)),
               p90_from_write = ms(r.histogram_uncorrected.value_at_percentile(90));
  EXPECT_GE(p90_from_write, 10.0);
  // A request is never written before its intended send time: from it, latency is no shorter.
  EXPECT_GE(p90, p90_from_write);
  EXPECT_LT(p90 - p90_from_write, 1.5) << "p90 " << p90 << " ms, from the write " << p90_from_write << " ms";
}

// The target holds every response for 1 s, 1 s after the first request. Requests intended
// during the stall wait for it (corrected latency up to 1 s); only the 10 in flight when it
// began were themselves slow once sent (uncorrected latency).
TEST(OpenLoopTest, CoordinatedOmissionShowsInCorrectedLatencyOnly) {
  TargetProcess target({"--threads", "1", "--stall", "1000:1000"});
  ASSERT_NE(target.port(), 0);
  LoadOptions o;
  o.url = target.url();
  o.connections = 10;
  o.rate = 1000;
  o.duration_s = 5;
  LoadResult r = run_bounded(o);
  target.stop();
  EXPECT_EQ(r.errors, 0);
  EXPECT_NEAR(r.qps, 1000, 30);
  EXPECT_GE(ms(r.histogram.value_at_percentile(99)), 500.0);
  EXPECT_GE(ms(r.histogram.max()), 900.0);
  EXPECT_LT(ms(r.histogram_uncorrected.value_at_percentile(99)), 50.0);
  EXPECT_GE(ms(r.histogram_uncorrected.max()), 900.0);  // the stalled requests themselves
}

}  // namespace
}  // namespace loadlab::load
