// Flag validation, URL parsing and request serialisation.
#include "loadlab/load/load_options.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>

#include "input_error_of.hpp"

namespace loadlab::load {
namespace {

using loadlab::testing::input_error_of;

// The URL made https://, for the TLS flags' cases.
LoadOptions& https(LoadOptions& o) {
  o.url = "https://127.0.0.1/";
  return o;
}

LoadOptions valid() {
  LoadOptions o;
  o.url = "http://127.0.0.1:8080/path";
  return o;
}

TEST(LoadOptionsTest, DefaultsAreFilledIn) {
  LoadOptions o = valid();
  o.threads = 3;
  ASSERT_EQ(input_error_of([&] { complete_and_validate(o); }), "");
  EXPECT_EQ(o.connections, 3);
  ASSERT_TRUE(o.duration_s.has_value());
  EXPECT_EQ(*o.duration_s, 10.0);
  EXPECT_EQ(o.method, "GET");
  EXPECT_EQ(o.timeout_ms, 5000);
  EXPECT_TRUE(o.keep_alive);
}

TEST(LoadOptionsTest, CountStopConditionKeepsNoDuration) {
  LoadOptions o = valid();
  o.requests_per_thread = 5;
  ASSERT_EQ(input_error_of([&] { complete_and_validate(o); }), "");
  EXPECT_FALSE(o.duration_s.has_value());
}

struct BadCase {
  const char* name;
  void (*mutate)(LoadOptions&);
  const char* flag;  // the message must name it
};

class LoadOptionsRejectTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(LoadOptionsRejectTest, MessageNamesTheFlag) {
  LoadOptions o = valid();
  GetParam().mutate(o);
  std::string error = input_error_of([&] { complete_and_validate(o); });
  EXPECT_NE(error.find(GetParam().flag), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    Flags, LoadOptionsRejectTest,
    ::testing::Values(
        BadCase{"ftp", [](LoadOptions& o) { o.url = "ftp://127.0.0.1/"; }, "http(s)://"},
        BadCase{"tls_version_with_http", [](LoadOptions& o) { o.tls_version = "1.3"; },
                "--tls-version: needs an https://"},
        BadCase{"ca_with_http", [](LoadOptions& o) { o.ca_file = "/etc/hostname"; },
                "--ca: needs an https://"},
        BadCase{"insecure_with_http", [](LoadOptions& o) { o.insecure = true; },
                "--insecure: needs an https://"},
        BadCase{"resume_with_http", [](LoadOptions& o) { o.tls_resume = true; },
                "--tls-resume: needs an https://"},
        BadCase{"tls_version", [](LoadOptions& o) { https(o).tls_version = "1.1"; },
                "--tls-version: must be 1.2 or 1.3"},
        BadCase{"ca_and_insecure",
                [](LoadOptions& o) { https(o).insecure = !(o.ca_file = "/nonexistent/ca.pem").empty(); },
                "--ca, --insecure"},
        BadCase{"ca_missing", [](LoadOptions& o) { https(o).ca_file = "/nonexistent/ca.pem"; },
                "--ca: must be a readable regular file"},
        BadCase{"ca_not_pem", [](LoadOptions& o) { https(o).ca_file = LOADLAB_SOURCE_DIR "/CMakeLists.txt"; },
                "--ca: must hold PEM certificates"},
        BadCase{"no_scheme", [](LoadOptions& o) { o.url = "127.0.0.1:80"; }, "URL"},
        BadCase{"no_host", [](LoadOptions& o) { o.url = "http:///x"; }, "URL"},
        BadCase{"bad_port", [](LoadOptions& o) { o.url = "http://h:99999/"; }, "URL"},
        BadCase{"zero_threads", [](LoadOptions& o) { o.threads = 0; }, "-t/--threads"},
        BadCase{"too_many_threads", [](LoadOptions& o) { o.threads = 5000; }, "1..1024"},
        BadCase{"fewer_connections",
                [](LoadOptions& o) {
                  o.threads = 4;
                  o.connections = 2;
                },
                "-c/--connections"},
        BadCase{"two_stops",
                [](LoadOptions& o) {
                  o.requests_per_thread = 1;
                  o.duration_s = 1;
                },
                "-n, --total, -d"},
        BadCase{"zero_n", [](LoadOptions& o) { o.requests_per_thread = 0; }, "-n/--requests"},
        BadCase{"zero_total", [](LoadOptions& o) { o.total_requests = 0; }, "--total"},
        BadCase{"zero_duration", [](LoadOptions& o) { o.duration_s = 0; }, "-d/--duration"},
        BadCase{"negative_warmup", [](LoadOptions& o) { o.warmup_s = -1; }, "--warmup"},
        BadCase{"warmup_past_the_run",  // warm-up and duration are one run of at most a day
                [](LoadOptions& o) {
                  o.duration_s = 86'400;
                  o.warmup_s = 1;
                },
                "--warmup, -d/--duration: a run of 1 s warm-up and 86400 s measured is 86401 s, over the "
                "limit of 86400 s"},
        BadCase{"zero_rate", [](LoadOptions& o) { o.rate = 0.0; }, "--rate"},
        BadCase{"negative_rate", [](LoadOptions& o) { o.rate = -5.0; }, "--rate"},
        BadCase{"tiny_rate", [](LoadOptions& o) { o.rate = 1e-300; }, "--rate: must be in 0.001.."},
        BadCase{"tiny_rate_per_thread",
                [](LoadOptions& o) {
                  o.threads = 4;
                  o.rate = 0.002;  // 0.0005 per thread
                },
                "(0.001..1e+07 per thread)"},
        BadCase{"huge_rate", [](LoadOptions& o) { o.rate = 1.1e7; }, "--rate"},
        BadCase{"nan_rate", [](LoadOptions& o) { o.rate = std::nan(""); }, "--rate"},
        BadCase{"arrivals", [](LoadOptions& o) { o.arrivals = "bursty"; },
                "--arrivals: must be uniform or poisson, got 'bursty'"},
        BadCase{"poisson_closed_loop", [](LoadOptions& o) { o.arrivals = "poisson"; },
                "--arrivals: poisson paces an open loop: give --rate with it"},
        BadCase{"seed_without_poisson",
                [](LoadOptions& o) {
                  o.rate = 100.0;
                  o.seed = 3;
                },
                "--seed: seeds the Poisson gaps: give it with --arrivals poisson"},
        BadCase{"pace_granularity_closed_loop", [](LoadOptions& o) { o.pace_granularity_us = 100.0; },
                "--pace-granularity: paces an open loop: give --rate with it"},
        BadCase{"negative_pace_granularity",
                [](LoadOptions& o) {
                  o.rate = 100.0;
                  o.pace_granularity_us = -1.0;
                },
                "--pace-granularity: must be in 0..100000 µs, got -1"},
        BadCase{"huge_pace_granularity",
                [](LoadOptions& o) {
                  o.rate = 100.0;
                  o.pace_granularity_us = 100001.0;
                },
                "--pace-granularity: must be in 0..100000 µs, got 100001"},
        BadCase{"nan_pace_granularity",
                [](LoadOptions& o) {
                  o.rate = 100.0;
                  o.pace_granularity_us = std::nan("");
                },
                "--pace-granularity: must be in 0..100000 µs"},
        BadCase{"pace_granularity_scheduled_start",
                [](LoadOptions& o) {
                  o.rate = 100.0;
                  o.duration_s = 1.0;
                  o.scheduled_start = true;
                  o.pace_granularity_us = 500.0;
                },
                "--pace-granularity: must be 0 with --start-on-signal"},
        BadCase{"pace_share_closed_loop", [](LoadOptions& o) { o.pace_share = std::make_pair(0u, 4u); },
                "--pace-share: shares an open loop's pace: give --rate with it"},
        BadCase{"pace_share_too_few",
                [](LoadOptions& o) {
                  o.threads = 2;
                  o.rate = 100.0;
                  o.pace_share = std::make_pair(3u, 4u);
                },
                "--pace-share: FIRST/TOTAL must hold this worker's 2 threads: FIRST + 2 <= TOTAL <= 1024, got 3/4"},
        BadCase{"zero_timeout", [](LoadOptions& o) { o.timeout_ms = 0; }, "--timeout"},
        BadCase{"bad_method", [](LoadOptions& o) { o.method = "GE T"; }, "-m/--method"},
        BadCase{"bad_header", [](LoadOptions& o) { o.headers = {"NoColon"}; }, "-H/--header"},
        BadCase{"crlf_header", [](LoadOptions& o) { o.headers = {"A: b\r\nC: d"}; }, "-H/--header"},
        BadCase{"log_level", [](LoadOptions& o) { o.log_level = "loud"; }, "--log-level"},
        BadCase{"protocol", [](LoadOptions& o) { o.protocol = "h4"; }, "--protocol: must be http1, h2 or h3"},
        BadCase{"streams_with_http1", [](LoadOptions& o) { o.streams = 2; }, "--streams: needs --protocol h2"},
        BadCase{"zero_streams",
                [](LoadOptions& o) {
                  o.protocol = "h2";
                  o.streams = 0;
                },
                "--streams: must be in 1..1000, got 0"},
        BadCase{"too_many_streams",
                [](LoadOptions& o) {
                  o.protocol = "h2";
                  o.streams = 1001;
                },
                "--streams: must be in 1..1000"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(ParseUrlTest, Forms) {
  std::optional<Url> u = parse_url("http://127.0.0.1:8080/a/b?x=1");
  EXPECT_EQ(u->host, "127.0.0.1");
  EXPECT_EQ(u->port, 8080);
  EXPECT_EQ(u->authority, "127.0.0.1:8080");
  EXPECT_EQ(u->target, "/a/b?x=1");

  u = parse_url("HTTP://localhost");
  EXPECT_EQ(u->port, 80);
  EXPECT_EQ(u->target, "/");

  u = parse_url("http://[::1]:9000/p");
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->port, 9000);

  u = parse_url("http://[::1]?q");
  EXPECT_EQ(u->port, 80);
  EXPECT_EQ(u->target, "/?q");

  u = parse_url("https://example.org/x");
  EXPECT_TRUE(u->tls);
  EXPECT_EQ(u->port, 443);
  EXPECT_EQ(u->host, "example.org");
  EXPECT_EQ(u->authority, "example.org");
  u = parse_url("HTTPS://127.0.0.1:8443");
  EXPECT_TRUE(u->tls);
  EXPECT_EQ(u->port, 8443);
  EXPECT_FALSE(parse_url("http://h/").tls);

  EXPECT_THROW(parse_url("http://a:b:c/"), InputError);
  EXPECT_THROW(parse_url("http://host:0/"), InputError);
}

TEST(SerializeRequestTest, BuildsOneHttp11Request) {
  LoadOptions o = valid();
  o.method = "POST";
  o.body = "abc";
  o.headers = {"X-Test:  1 ", "Content-Type: text/plain"};
  std::string r = serialize_request(o, parse_url(o.url));
  EXPECT_EQ(r,
            "POST /path HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: loadlab-load\r\n"
            "X-Test: 1\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nabc");
}

TEST(SerializeRequestTest, NoKeepAliveAndUserHost) {
  LoadOptions o = valid();
  o.keep_alive = false;
  o.headers = {"host: example"};
  std::string r = serialize_request(o, parse_url(o.url));
  EXPECT_EQ(r,
            "GET /path HTTP/1.1\r\nUser-Agent: loadlab-load\r\nConnection: close\r\nhost: example\r\n\r\n");
}

TEST(H2RequestHeadersTest, PseudoHeadersFirstLowercasedWithoutConnectionHeaders) {
  LoadOptions o;
  o.method = "POST";
  o.body = "abc";
  o.headers = {"X-Trace: 1", "Connection: keep-alive", "Host: example.test", "TE: gzip", "Accept: */*"};
  auto h = h2_request_headers(o, parse_url("https://127.0.0.1:8443/a?b=1"));
  std::vector<std::pair<std::string, std::string>> want = {
      {":method", "POST"}, {":scheme", "https"},           {":authority", "example.test"},
      {":path", "/a?b=1"}, {"user-agent", "loadlab-load"}, {"x-trace", "1"},
      {"accept", "*/*"},   {"content-length", "3"}};
  EXPECT_EQ(h, want);
  o = LoadOptions{};
  h = h2_request_headers(o, parse_url("http://localhost:8080"));
  want = {{":method", "GET"},
          {":scheme", "http"},
          {":authority", "localhost:8080"},
          {":path", "/"},
          {"user-agent", "loadlab-load"}};
  EXPECT_EQ(h, want);
}

}  // namespace
}  // namespace loadlab::load
