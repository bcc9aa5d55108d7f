// The target's stall knob over HTTP/3 in real time, in-process on 127.0.0.1:0 with the small
// ngtcp2 client of h3_test_client.hpp: a stream submitted during the stall is held until its end
// (400 ms after the first request started the stall clock), and answered whole then.
#include <gtest/gtest.h>

#include <chrono>

#include "h3_fixture.hpp"
#include "h3_test_client.hpp"
#include "running_server.hpp"

namespace loadlab::target {
namespace {

using testing::h3_options;
using testing::H3Client;
using testing::kBody;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST(TargetH3Knobs, StallHoldsStreams) {
  auto options = h3_options();
  options.stall_after = 100ms;
  options.stall_duration = 300ms;
  RunningServer srv(options);
  H3Client client(srv.port());
  ASSERT_TRUE(client.connected());
  const auto t0 = Clock::now();
  const auto first = client.submit();  // starts the stall clock
  ASSERT_TRUE(client.run_all(2s));
  client.run_until([] { return false; },
                   std::chrono::duration_cast<std::chrono::milliseconds>(t0 + 150ms - Clock::now()));
  const auto held = client.submit();  // held until t0 + 400 ms
  ASSERT_TRUE(client.run_all(2s));
  EXPECT_EQ(client.response(first).body, kBody);
  EXPECT_EQ(client.response(held).body, kBody);
  EXPECT_GE(client.response(held).closed_at - t0, 390ms);
  EXPECT_LT(client.response(held).closed_at - t0, 600ms);
}

}  // namespace
}  // namespace loadlab::target
