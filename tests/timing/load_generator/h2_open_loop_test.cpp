// loadlab-load --protocol h2 in open loop against an in-test HTTP/2 server that holds each
// answer 20 ms: each connection's due requests go on free streams, the requested rate is held
// in real time, the request budget is exact and every request takes at least the delay. The
// run is bounded.
#include <gtest/gtest.h>

#include <chrono>

#include "h2_load_support.hpp"
#include "h2_test_server.hpp"
#include "load_runner.hpp"
#include "load_test_support.hpp"
#include "loadlab/load/load_options.hpp"

namespace loadlab::load {
namespace {

using namespace std::chrono_literals;
using testing::expect_all_ok;
using testing::h2_options;
using testing::H2ServerOptions;
using testing::H2TestServer;
using testing::run_bounded;

// Open loop: each connection's due requests go on free streams; the budget is exact and
// the pace is the requested one.
TEST(H2LoadTest, OpenLoopKeepsTheRateAndTheBudget) {
  H2ServerOptions so;
  so.delay = 20ms;  // 400/s over 2 connections needs about 4 streams each
  H2TestServer server(so);
  LoadOptions o = h2_options(server.url(), 2, 10);
  o.rate = 400;
  o.requests_per_thread = 200;
  LoadResult r = run_bounded(o);
  expect_all_ok(r, 200);
  EXPECT_EQ(server.requests(), 200);
  EXPECT_EQ(server.connections(), 2);
  EXPECT_TRUE(r.rate_held) << r.achieved_rate;
  EXPECT_NEAR(r.duration_s, 0.5, 0.05);  // 200 requests at 400/s, the last one 20 ms
  EXPECT_GE(r.histogram.min(), 20000);
  EXPECT_GE(server.max_open_streams(), 2);
}

}  // namespace
}  // namespace loadlab::load
