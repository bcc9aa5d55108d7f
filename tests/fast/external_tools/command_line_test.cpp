// LoadSpec → argv for each tool, each spec variant, and each refusal (field and message).
#include "loadlab/clients/command_line.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "loadlab/shared/json_input.hpp"

namespace loadlab::clients {
namespace {

using Argv = std::vector<std::string>;

v1::LoadSpec spec() {
  v1::LoadSpec s;
  s.set_endpoint("127.0.0.1:8080");
  s.set_threads(2);
  s.set_connections(4);
  s.set_duration_s(5);
  s.set_keep_alive(true);
  return s;
}

// The InputError's field, with the message checked to name the tool.
std::string refused_field(Tool tool, const v1::LoadSpec& s, const std::string& message_part = "") {
  try {
    command_line(tool, "/usr/bin/x", s, "/tmp/aux");
  } catch (const InputError& e) {
    EXPECT_THAT(e.message(), ::testing::HasSubstr(std::string(tool_name(tool)))) << e.what();
    if (!message_part.empty()) {
      EXPECT_THAT(e.message(), ::testing::HasSubstr(message_part)) << e.what();
    }
    return e.path();
  }
  ADD_FAILURE() << tool_name(tool) << " accepted the spec";
  return "";
}

TEST(ToolNames, RoundTrip) {
  for (Tool t : {Tool::kWrk, Tool::kHey, Tool::kH2load}) EXPECT_EQ(parse_tool(tool_name(t)), t);
  EXPECT_EQ(tool_name(Tool::kH2load), "h2load");
  EXPECT_FALSE(parse_tool("WRK"));
  EXPECT_FALSE(parse_tool("ab"));
}

TEST(WrkCommand, DurationRun) {
  auto s = spec();
  (*s.mutable_headers())["X-A"] = "b";
  s.set_path("/p?q=1");
  EXPECT_EQ(command_line(Tool::kWrk, "/usr/bin/wrk", s),
            (Argv{"/usr/bin/wrk", "-t", "2", "-c", "4", "-d", "5s", "--timeout", "5s", "--latency", "-H",
                  "X-A: b", "http://127.0.0.1:8080/p?q=1"}));
}

TEST(WrkCommand, NoKeepAliveTimeoutAndIpv6) {
  auto s = spec();
  s.set_endpoint("[::1]:9000");
  s.set_keep_alive(false);
  s.set_timeout_ms(2000);
  EXPECT_EQ(command_line(Tool::kWrk, "wrk", s),
            (Argv{"wrk", "-t", "2", "-c", "4", "-d", "5s", "--timeout", "2s", "--latency", "-H",
                  "Connection: close", "http://[::1]:9000/"}));
}

TEST(WrkCommand, MethodAndBodyGoThroughALuaScript) {
  auto s = spec();
  s.set_method("POST");
  s.set_body("a\"b\\c\n\x01");
  auto files = aux_files(Tool::kWrk, s);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].name, "loadlab-wrk.lua");
  EXPECT_THAT(files[0].content, ::testing::HasSubstr("wrk.method = \"POST\"\n"));
  EXPECT_THAT(files[0].content, ::testing::HasSubstr("wrk.body = \"a\\034b\\092c\\010\\001\"\n"));
  auto argv = command_line(Tool::kWrk, "wrk", s, "/run/job7");
  EXPECT_THAT(argv,
              ::testing::ElementsAre("wrk", "-t", "2", "-c", "4", "-d", "5s", "--timeout", "5s", "--latency",
                                     "-s", "/run/job7/loadlab-wrk.lua", "http://127.0.0.1:8080/"));
  EXPECT_THROW(command_line(Tool::kWrk, "wrk", s), std::invalid_argument);  // no folder for the script
  EXPECT_TRUE(aux_files(Tool::kWrk, spec()).empty());
}

TEST(WrkCommand, Refusals) {
  auto s = spec();
  s.set_total_requests(100);
  EXPECT_EQ(refused_field(Tool::kWrk, s, "duration"), "total_requests");
  s = spec();
  s.set_requests_per_thread(100);
  EXPECT_EQ(refused_field(Tool::kWrk, s), "requests_per_thread");
  s = spec();
  s.set_duration_s(1.5);
  EXPECT_EQ(refused_field(Tool::kWrk, s, "whole seconds"), "duration_s");
  s = spec();
  s.set_rate(100);
  EXPECT_EQ(refused_field(Tool::kWrk, s), "rate");
  s = spec();
  s.set_warmup_s(1);
  EXPECT_EQ(refused_field(Tool::kWrk, s), "warmup_s");
  s = spec();
  s.set_connections(5);
  EXPECT_EQ(refused_field(Tool::kWrk, s, "multiple of threads"), "connections");
  s = spec();
  s.set_connections(1);
  EXPECT_EQ(refused_field(Tool::kWrk, s), "connections");
  s = spec();
  s.set_timeout_ms(1500);
  EXPECT_EQ(refused_field(Tool::kWrk, s, "whole seconds"), "timeout_ms");
}

TEST(HeyCommand, TotalRequests) {
  auto s = spec();
  s.set_total_requests(400);
  s.set_method("PUT");
  s.set_body("{}");
  (*s.mutable_headers())["Content-Type"] = "application/json";
  // The body goes in a file (-D): one argument of execve holds at most 128 KiB.
  EXPECT_EQ(command_line(Tool::kHey, "hey", s, "/run/j"),
            (Argv{"hey", "-c", "4", "-cpus", "2", "-n", "400", "-t", "5", "-m", "PUT", "-H",
                  "Content-Type: application/json", "-D", "/run/j/loadlab-hey-body", "-disable-redirects",
                  "http://127.0.0.1:8080/"}));
  auto files = aux_files(Tool::kHey, s);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].content, "{}");
}

TEST(HeyCommand, DurationRateAndNoKeepAlive) {
  auto s = spec();
  s.set_duration_s(2.5);
  s.set_rate(100);
  s.set_keep_alive(false);
  s.set_timeout_ms(3000);
  EXPECT_EQ(command_line(Tool::kHey, "hey", s),
            (Argv{"hey", "-c", "4", "-cpus", "2", "-z", "2500ms", "-t", "3", "-m", "GET", "-q", "25",
                  "-disable-keepalive", "-disable-redirects", "http://127.0.0.1:8080/"}));
}

TEST(DurationCommand, DecimalSecondsAreWholeMilliseconds) {
  auto s = spec();
  s.set_duration_s(1.1);  // 1100.0000000000002 ms in binary
  s.set_warmup_s(0.3);
  EXPECT_THAT(command_line(Tool::kH2load, "h2load", s), ::testing::IsSupersetOf({"1100ms", "300ms"}));
  s.clear_warmup_s();
  EXPECT_THAT(command_line(Tool::kHey, "hey", s), ::testing::Contains("1100ms"));
}

TEST(HeyCommand, Refusals) {
  auto s = spec();
  s.set_requests_per_thread(100);
  EXPECT_EQ(refused_field(Tool::kHey, s, "per-thread"), "requests_per_thread");
  s = spec();
  s.set_total_requests(402);  // hey would run 400
  EXPECT_EQ(refused_field(Tool::kHey, s, "multiple of connections"), "total_requests");
  s = spec();
  s.set_total_requests(2);  // fewer than its 4 workers
  EXPECT_EQ(refused_field(Tool::kHey, s), "total_requests");
  s = spec();
  s.set_warmup_s(0.5);
  EXPECT_EQ(refused_field(Tool::kHey, s), "warmup_s");
  s = spec();
  s.set_timeout_ms(250);
  EXPECT_EQ(refused_field(Tool::kHey, s, "whole seconds"), "timeout_ms");
  s = spec();
  s.set_method("patch");
  EXPECT_EQ(refused_field(Tool::kHey, s, "upper case"), "method");
  s = spec();
  (*s.mutable_headers())["X.Y"] = "1";
  EXPECT_EQ(refused_field(Tool::kHey, s), "headers/X.Y");
  s = spec();
  (*s.mutable_headers())["X-Empty"] = "";
  EXPECT_EQ(refused_field(Tool::kHey, s, "empty value"), "headers/X-Empty");
  s = spec();
  s.set_duration_s(1.0005);
  EXPECT_EQ(refused_field(Tool::kHey, s, "milliseconds"), "duration_s");
}

TEST(H2loadCommand, RequestsPerThreadIsExactOverThreads) {
  auto s = spec();
  s.set_requests_per_thread(1000);
  EXPECT_EQ(
      command_line(Tool::kH2load, "h2load", s),
      (Argv{"h2load", "--h1", "-t", "2", "-c", "4", "-n", "2000", "-N", "5000ms", "http://127.0.0.1:8080/"}));
}

TEST(H2loadCommand, DurationWarmupRateMethodBodyAndClose) {
  auto s = spec();
  s.set_duration_s(2.5);
  s.set_warmup_s(1);
  s.set_rate(400);
  s.set_method("PUT");
  s.set_body("xyz");
  s.set_keep_alive(false);
  auto files = aux_files(Tool::kH2load, s);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].name, "loadlab-h2load-body");
  EXPECT_EQ(files[0].content, "xyz");
  EXPECT_EQ(command_line(Tool::kH2load, "h2load", s, "/run/j/"), (Argv{"h2load",
                                                                       "--h1",
                                                                       "-t",
                                                                       "2",
                                                                       "-c",
                                                                       "4",
                                                                       "-D",
                                                                       "2500ms",
                                                                       "--warm-up-time",
                                                                       "1000ms",
                                                                       "-N",
                                                                       "5000ms",
                                                                       "--rps",
                                                                       "100",
                                                                       "-H",
                                                                       ":method: PUT",
                                                                       "-H",
                                                                       "Connection: close",
                                                                       "-d",
                                                                       "/run/j/loadlab-h2load-body",
                                                                       "http://127.0.0.1:8080/"}));
}

TEST(H2loadCommand, Refusals) {
  auto s = spec();
  s.set_total_requests(3);  // fewer than its 4 clients
  EXPECT_EQ(refused_field(Tool::kH2load, s, "per client"), "total_requests");
  s = spec();
  s.set_total_requests(100);
  s.set_warmup_s(1);
  EXPECT_EQ(refused_field(Tool::kH2load, s), "warmup_s");
  s = spec();
  s.set_connections(1);
  EXPECT_EQ(refused_field(Tool::kH2load, s), "connections");
  s = spec();
  s.set_rate(4);  // one request per second per connection: a 1 s timeout would cut idle connections
  s.set_timeout_ms(1000);
  EXPECT_EQ(refused_field(Tool::kH2load, s, "-N"), "timeout_ms");
  s = spec();
  s.set_keep_alive(false);
  (*s.mutable_headers())["connection"] = "keep-alive";
  EXPECT_EQ(refused_field(Tool::kH2load, s), "keep_alive");
}

// Over TLS the URL is https://; h2load speaks HTTP/2 too, offering only h2 in ALPN (h2c on
// http://), with its streams as -m.
TEST(EveryTool, ProtocolsTheToolSpeaks) {
  auto s = spec();
  s.set_protocol(v1::PROTOCOL_HTTPS);
  s.set_tls_version("1.3");
  EXPECT_EQ(command_line(Tool::kWrk, "wrk", s).back(), "https://127.0.0.1:8080/");
  EXPECT_EQ(command_line(Tool::kHey, "hey", s).back(), "https://127.0.0.1:8080/");
  EXPECT_EQ(command_line(Tool::kH2load, "h2load", s),
            (Argv{"h2load", "--h1", "-t", "2", "-c", "4", "-D", "5000ms", "-N", "5000ms",
                  "https://127.0.0.1:8080/"}));
  s.set_protocol(v1::PROTOCOL_H2);
  s.set_streams(10);
  EXPECT_EQ(command_line(Tool::kH2load, "h2load", s),
            (Argv{"h2load", "--npn-list=h2", "-m", "10", "-t", "2", "-c", "4", "-D", "5000ms", "-N", "5000ms",
                  "https://127.0.0.1:8080/"}));
  s.set_protocol(v1::PROTOCOL_H2C);
  s.set_tls_version("");
  s.clear_streams();
  EXPECT_EQ(command_line(Tool::kH2load, "h2load", s),
            (Argv{"h2load", "--npn-list=h2", "-m", "1", "-t", "2", "-c", "4", "-D", "5000ms", "-N", "5000ms",
                  "http://127.0.0.1:8080/"}));
  EXPECT_EQ(protocols_of(Tool::kWrk), (std::vector<v1::Protocol>{v1::PROTOCOL_HTTP1, v1::PROTOCOL_HTTPS}));
}

TEST(EveryTool, WhatNoToolCanDoOverTlsOrHttp2IsRefused) {
  for (Tool t : {Tool::kWrk, Tool::kHey, Tool::kH2load}) {
    SCOPED_TRACE(std::string(tool_name(t)));
    auto s = spec();
    s.set_protocol(v1::PROTOCOL_HTTPS);
    s.set_tls_version("1.2");
    EXPECT_EQ(refused_field(t, s, "cannot force a TLS version"), "tls_version");
    s.set_tls_version("1.3");
    s.set_tls_resume(true);
    EXPECT_EQ(refused_field(t, s, "cannot resume"), "tls_resume");
    s = spec();
    s.set_protocol(v1::PROTOCOL_HTTPS);
    s.set_zero_rtt(true);
    EXPECT_EQ(refused_field(t, s, "cannot send 0-RTT"), "zero_rtt");
    s = spec();
    s.set_protocol(v1::PROTOCOL_H3);
    EXPECT_EQ(refused_field(t, s, "not h3"), "protocol");
    s = spec();
    s.set_streams(2);  // over HTTP/1.1
    EXPECT_EQ(refused_field(t, s, "streams must be 1"), "streams");
    s = spec();
    s.set_arrivals("poisson");
    EXPECT_EQ(refused_field(t, s, "arrivals must be uniform, got poisson"), "arrivals");
    s = spec();
    s.set_pace_granularity_us(500);
    EXPECT_EQ(refused_field(t, s, "pace_granularity_us must be 0"), "pace_granularity_us");
  }
  auto s = spec();
  s.set_protocol(v1::PROTOCOL_H2C);
  EXPECT_EQ(refused_field(Tool::kWrk, s, "speaks http1, https, not h2c"), "protocol");
  EXPECT_EQ(refused_field(Tool::kHey, s, "not h2c"), "protocol");
  s.set_keep_alive(false);
  EXPECT_EQ(refused_field(Tool::kH2load, s, "HTTP/2 forbids"), "keep_alive");
}

TEST(EveryTool, CommonRefusals) {
  for (Tool t : {Tool::kWrk, Tool::kHey, Tool::kH2load}) {
    auto s = spec();
    s.set_endpoint("127.0.0.1");
    EXPECT_THROW(command_line(t, "x", s), InputError);
    s = spec();
    s.clear_duration_s();
    try {
      command_line(t, "x", s);
      ADD_FAILURE() << "no stop condition accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.path(), "stop");
    }
    s = spec();
    s.set_threads(0);
    EXPECT_THROW(command_line(t, "x", s), InputError);
    s = spec();
    s.set_path("no-slash");
    EXPECT_THROW(command_line(t, "x", s), InputError);
    s = spec();
    s.set_method("GE T");
    EXPECT_THROW(command_line(t, "x", s), InputError);
    s = spec();
    (*s.mutable_headers())["X-A"] = "a\r\nInjected: 1";
    EXPECT_THROW(command_line(t, "x", s), InputError);
  }
}

}  // namespace
}  // namespace loadlab::clients
