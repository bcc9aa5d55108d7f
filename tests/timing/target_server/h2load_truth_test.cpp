// The target's HTTP/2 counts against h2load (nghttp2-client) as a real peer, in-process on
// 127.0.0.1:0 over h2c and over TLS: h2load's 200 requests on 2 connections of 10 streams each all
// succeed, the server counts the same requests, streams, connections and handshakes, and its stats
// endpoint over h2c says so too. h2load runs by pid with a deadline (h2_fixture.hpp).
#include <gtest/gtest.h>

#include <string>

#include "h2_fixture.hpp"
#include "h2_test_client.hpp"
#include "running_server.hpp"

namespace loadlab::target {
namespace {

using testing::H2Client;
using testing::options_for;
using testing::run_tool;
using testing::stats_after;
using testing::url;

class TargetH2Truth : public ::testing::TestWithParam<bool> {};

TEST_P(TargetH2Truth, H2loadCountsMatchTheServersOwn) {
  const bool tls = GetParam();
  RunningServer srv(options_for(tls));
  auto h2load = run_tool({"/usr/bin/h2load", "-c", "2", "-m", "10", "-n", "200", url(tls, srv.port())});
  if (!h2load) GTEST_SKIP() << "h2load (nghttp2-client) is not installed";
  EXPECT_EQ(h2load->status, 0) << h2load->output;
  EXPECT_NE(h2load->output.find("200 total, 200 started, 200 done, 200 succeeded"), std::string::npos)
      << h2load->output;
  if (tls) {
    EXPECT_NE(h2load->output.find("Application protocol: h2"), std::string::npos) << h2load->output;
  }
  const auto stats = stats_after(srv, 200);
  EXPECT_EQ(stats.requests, 200u);
  EXPECT_EQ(stats.h2_streams, 200u);
  EXPECT_EQ(stats.h2_connections, 2u);
  EXPECT_EQ(stats.connections, 2u);
  EXPECT_EQ(stats.tls_handshakes, tls ? 2u : 0u);
  // The stats endpoint over HTTP/2 says the same, and is not counted itself.
  if (!tls) {
    H2Client client(srv.port());
    auto res = client.request({}, "/__loadlab/stats");
    EXPECT_EQ(res.headers["content-type"], "application/json");
    EXPECT_NE(res.body.find("\"requests\": 200,"), std::string::npos) << res.body;
    EXPECT_NE(res.body.find("\"h2_connections\": 3, \"h2_streams\": 200, \"h3_connections\": 0"),
              std::string::npos)
        << res.body;
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, TargetH2Truth, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "H2" : "H2c"; });

}  // namespace
}  // namespace loadlab::target
