// The target's delay, stall and read-timeout knobs in real time, in-process on 127.0.0.1:0
// (server_fixture.hpp's client): a uniform delay stays in its range and varies, an exponential one
// has its mean, a stall holds every response once for its duration, and a slowloris client is
// dropped after the read timeout. Each bounds a figure measured by the clock against its setting.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cmath>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "knobs.hpp"
#include "running_server.hpp"
#include "server.hpp"
#include "server_fixture.hpp"

namespace loadlab::target {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

using testing::ms_since;
using testing::options_with;
using testing::stats_body;
using testing::TestClient;

TEST(TargetKnobs, UniformDelayStaysInItsRangeAndVaries) {
  RunningServer srv(options_with());
  TestClient client(srv.port());
  double lo = 1e9, hi = 0;
  for (int i = 0; i < 20; ++i) {
    auto start = Clock::now();
    auto res = client.request_with({{"x-loadlab-delay-ms", "uniform:10-30"}});
    ASSERT_EQ(res.result(), http::status::ok);
    lo = std::min(lo, ms_since(start));
    hi = std::max(hi, ms_since(start));
  }
  EXPECT_GE(lo, 10.0);
  EXPECT_LT(hi, 50.0);
  EXPECT_GT(hi - lo, 5.0);  // twenty draws from 20 ms of width are not all within 5 ms
}

TEST(TargetKnobs, ExponentialDelayHasItsMean) {
  auto options = options_with();
  options.delay = *parse_delay("exp:5");
  RunningServer srv(options);
  TestClient client(srv.port());
  std::vector<double> samples;
  for (int i = 0; i < 200; ++i) {
    auto start = Clock::now();
    ASSERT_EQ(client.request(http::verb::get).result(), http::status::ok);
    samples.push_back(ms_since(start));
  }
  double mean = 0;
  for (double s : samples) mean += s;
  mean /= samples.size();
  double var = 0;
  for (double s : samples) var += (s - mean) * (s - mean);
  const double sd = std::sqrt(var / samples.size());
  std::cout << "[ measured ] exp:5 mean " << mean << " ms, sd " << sd << " ms\n";
  EXPECT_NEAR(mean, 5.0, 1.25);
  EXPECT_GT(sd, 2.5);  // an exponential's sd equals its mean; a fixed delay's is ~0
}

TEST(TargetKnobs, StallHoldsEveryResponseOnceThenLetsThemGo) {
  auto options = options_with(2, 0ms);
  options.stall_after = 300ms;
  options.stall_duration = 500ms;
  RunningServer srv(options);
  TestClient first(srv.port());
  TestClient other(srv.port());  // the other io thread
  const auto t0 = Clock::now();
  first.request(http::verb::get);  // the first request starts the stall clock
  EXPECT_LT(ms_since(t0), 100.0);
  auto start = Clock::now();
  other.request(http::verb::get);  // before the stall: fast
  EXPECT_LT(ms_since(start), 100.0);

  // Sent before the stall, ready (after its 150 ms delay) during it: held to the end.
  std::this_thread::sleep_until(t0 + 200ms);
  ASSERT_FALSE(other.send_raw("GET / HTTP/1.1\r\nHost: x\r\nx-loadlab-delay-ms: 150\r\n\r\n"));
  std::this_thread::sleep_until(t0 + 400ms);
  // Sent during the stall: held to the end too; the stats endpoint is not held.
  start = Clock::now();
  auto stats = first.request_with({}, http::verb::get, "/__loadlab/stats");
  EXPECT_LT(ms_since(start), 100.0);
  EXPECT_EQ(stats.body(), stats_body(2, 2));
  auto held = first.request(http::verb::get);
  EXPECT_EQ(held.result(), http::status::ok);
  const double end_ms = ms_since(t0);
  EXPECT_GE(end_ms, 790.0);
  EXPECT_LT(end_ms, 900.0);
  http::response<http::string_body> res;
  ASSERT_FALSE(other.read(res));
  EXPECT_LT(ms_since(t0), 900.0);

  // After the stall: fast again, and no second stall.
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(100ms);
    start = Clock::now();
    first.request(http::verb::get);
    EXPECT_LT(ms_since(start), 100.0) << i;
  }
}

TEST(TargetTimeouts, SlowlorisIsDroppedAfterTheReadTimeout) {
  auto options = options_with();
  options.read_timeout = 300ms;
  options.idle_timeout = 10s;
  RunningServer srv(options);
  // A plain blocking socket: one byte every 100 ms, polling for the server's close between.
  net::io_context ioc;
  tcp::socket socket(ioc);
  socket.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), srv.port()));
  const std::string request = "GET / HTTP/1.1\r\nHost: x\r\nX-Padding: aaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";
  const auto start = Clock::now();
  bool dropped = false;
  for (std::size_t i = 0; i < request.size() && !dropped; ++i) {
    beast::error_code ec;
    net::write(socket, net::buffer(&request[i], 1), ec);
    if (ec) {
      dropped = true;
      break;
    }
    pollfd pfd{socket.native_handle(), POLLIN, 0};
    if (poll(&pfd, 1, 100) > 0) {
      char byte;
      dropped = ::recv(socket.native_handle(), &byte, 1, 0) <= 0;  // EOF or reset, no response
    }
  }
  const double took = ms_since(start);
  EXPECT_TRUE(dropped) << "the whole request went through in " << took << " ms";
  EXPECT_GE(took, 280.0);
  EXPECT_LT(took, 700.0);
}

}  // namespace
}  // namespace loadlab::target
