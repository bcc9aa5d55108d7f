// loadlab-load --protocol h3 against the real loadlab-target --h3 answering after a known
// delay: what the client measures (rate, latency) is what the delay and the streams in flight
// allow, and the target counts every request; a thousand streams on one connection, a stream
// past its timeout, the target's status knob. Every run is bounded; the target is stopped by pid.
#include <gtest/gtest.h>

#include <string>

#include "load_runner.hpp"
#include "load_test_support.hpp"
#include "loadlab/load/load_options.hpp"
#include "target_process.hpp"

namespace loadlab::load {
namespace {

using testing::expect_all_ok;
using testing::run_bounded;
using testing::TargetProcess;

// An h3 run against `t`, whose certificate it makes itself (not verified).
LoadOptions h3_options(const TargetProcess& t) {
  LoadOptions o;
  o.url = "https://127.0.0.1:" + std::to_string(t.port()) + "/";
  o.protocol = "h3";
  o.insecure = true;
  return o;
}

TEST(H3Truth, TheStreamsOfAConnectionAreInFlightTogether) {
  TargetProcess target({"--threads", "1", "--h3", "--delay-ms", "20"});
  ASSERT_NE(target.port(), 0);
  LoadOptions o = h3_options(target);
  o.connections = 1;
  o.streams = 10;
  o.total_requests = 200;
  LoadResult r = run_bounded(o);
  expect_all_ok(r, 200);
  EXPECT_EQ(r.connects, 1);
  // 10 requests every 20 ms: 500 requests/s, only if the 10 streams really overlap.
  EXPECT_GT(r.qps, 0.5 * 500);  // one stream at a time would give 50
  EXPECT_LT(r.qps, 1.05 * 500);
  EXPECT_GE(r.histogram.value_at_percentile(50), 20000);
  EXPECT_EQ(target.stop(), 200);
}

// A thousand streams on one connection (the target's MAX_STREAMS): each request and each
// response refers to the QPACK dynamic table, so each decoder owes the other a Section
// Acknowledgement per stream. A datagram carries many requests, and both sides read several
// before they write: told the streams that may be open, nghttp3's decoder holds those
// acknowledgements instead of failing the connection with ERR_QPACK_FATAL past 100 streams.
// The last requests, queued while the target's MAX_STREAMS trails the streams it closed, wait
// for it on the same connection.
TEST(H3Truth, AThousandStreamsOnOneConnectionAreAllAnswered) {
  TargetProcess target({"--threads", "1", "--h3"});
  ASSERT_NE(target.port(), 0);
  LoadOptions o = h3_options(target);
  o.connections = 1;
  o.streams = 1000;
  o.total_requests = 20000;
  LoadResult r = run_bounded(o);
  expect_all_ok(r, 20000);
  EXPECT_EQ(r.connects, 1);
  EXPECT_EQ(target.stop(), 20000);
}

TEST(H3Truth, OpenLoopHoldsItsRateOnStreams) {
  TargetProcess target({"--threads", "1", "--h3", "--delay-ms", "20"});
  ASSERT_NE(target.port(), 0);
  LoadOptions o = h3_options(target);
  o.connections = 2;
  o.streams = 8;
  o.rate = 200;
  o.duration_s = 2;
  LoadResult r = run_bounded(o);
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.errors, 0);
  EXPECT_TRUE(r.rate_held);
  EXPECT_NEAR(r.achieved_rate, 200, 10);
  EXPECT_NEAR(static_cast<double>(r.requests), 400, 20);
  EXPECT_GE(r.histogram.value_at_percentile(50), 20000);
  EXPECT_LT(r.histogram.value_at_percentile(50), 40000);
}

TEST(H3Truth, AStreamPastItsTimeoutIsCancelledAndTheConnectionStays) {
  TargetProcess target({"--threads", "1", "--h3"});
  ASSERT_NE(target.port(), 0);
  LoadOptions o = h3_options(target);
  o.headers = {"x-loadlab-delay-ms: 1000"};
  o.timeout_ms = 100;
  o.total_requests = 3;
  LoadResult r = run_bounded(o);
  EXPECT_EQ(r.requests, 3);
  EXPECT_EQ(r.responses, 0);
  EXPECT_EQ(r.errors_by_kind[static_cast<int>(ErrorKind::kTimeout)], 3);
  EXPECT_EQ(r.connects, 1);  // each cancelled stream left the connection up
}

TEST(H3Truth, TheTargetsStatusKnobReachesTheClient) {
  TargetProcess target({"--threads", "1", "--h3"});
  ASSERT_NE(target.port(), 0);
  LoadOptions o = h3_options(target);
  o.headers = {"x-loadlab-status: 503"};
  o.streams = 4;
  o.total_requests = 40;
  LoadResult r = run_bounded(o);
  EXPECT_EQ(r.requests, 40);
  EXPECT_EQ(r.responses, 40);
  ASSERT_EQ(r.status.count(503), 1u);
  EXPECT_EQ(r.status.at(503), 40);
  EXPECT_EQ(r.errors_by_kind[static_cast<int>(ErrorKind::kStatus)], 40);
  EXPECT_EQ(target.stop(), 40);
}

}  // namespace
}  // namespace loadlab::load
