// The LoadSpec ↔ worker options mapping, and the worker's JSON lines read back as the
// protocol's messages.
#include "loadlab/load/load_spec.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "input_error_of.hpp"
#include "load_result.hpp"
#include "loadlab/proto/histogram_proto.hpp"
#include "loadlab/proto/json.hpp"

namespace loadlab::load {
namespace {

using loadlab::testing::input_error_of;

v1::LoadSpec good() {
  v1::LoadSpec s;
  s.set_endpoint("127.0.0.1:8080");
  s.set_path("/test/fun");
  s.set_threads(4);
  s.set_connections(8);
  s.set_requests_per_thread(100);
  s.set_warmup_s(0.5);
  s.set_keep_alive(true);
  (*s.mutable_headers())["X-Test"] = "1";
  return s;
}

TEST(LoadSpec, CommandLineCarriesEveryField) {
  auto argv = command_line("/bin/loadlab-load", options_from_spec(good()));
  std::vector<std::string> want{"/bin/loadlab-load",
                                "http://127.0.0.1:8080/test/fun",
                                "-t",
                                "4",
                                "-c",
                                "8",
                                "-n",
                                "100",
                                "--warmup",
                                "0.5",
                                "-H",
                                "X-Test: 1",
                                "--timeout",
                                "5000",
                                "--json-events"};
  EXPECT_EQ(argv, want);
  auto s = good();
  s.set_duration_s(2.5);
  s.set_keep_alive(false);
  s.set_rate(1000.5);
  s.set_method("POST");
  argv = command_line("l", options_from_spec(s));
  auto has = [&](const std::string& a, const std::string& b) {
    auto it = std::find(argv.begin(), argv.end(), a);
    return it != argv.end() && (b.empty() || (it + 1 != argv.end() && *(it + 1) == b));
  };
  EXPECT_TRUE(has("-d", "2.5"));
  EXPECT_TRUE(has("--rate", "1000.5"));
  EXPECT_TRUE(has("-m", "POST"));
  EXPECT_TRUE(has("--no-keepalive", ""));
}

// The spec has no TLS fields yet (the proto gains them later); options that have them
// reach the worker's command line.
TEST(LoadSpec, CommandLineCarriesTheTlsOptions) {
  LoadOptions o = options_from_spec(good());
  o.url = "https://127.0.0.1:8443/";
  o.tls_version = "1.2";
  o.ca_file = "/etc/ca.pem";
  o.tls_resume = true;
  auto argv = command_line("l", o);
  std::vector<std::string> tail(argv.end() - 6, argv.end());
  EXPECT_EQ(tail, (std::vector<std::string>{"--tls-version", "1.2", "--ca", "/etc/ca.pem", "--tls-resume",
                                            "--json-events"}));
  o.ca_file.clear();
  o.insecure = true;
  argv = command_line("l", o);
  EXPECT_NE(std::find(argv.begin(), argv.end(), "--insecure"), argv.end());
}

// h2 travels over https:// (ALPN), h2c over http:// (prior knowledge): the worker's
TEST(LoadSpec, TwoNamesOfOneHeaderAreRefusedNamingBoth) {
  auto s = good();
  (*s.mutable_headers())["Host"] = "127.0.0.1";
  EXPECT_EQ(input_error_of([&] { validate_spec(s); }), "");
  (*s.mutable_headers())["hOST"] = "10.9.9.9";
  EXPECT_EQ(input_error_of([&] { validate_spec(s); }),
            "headers/hOST: names the same header as headers/Host (header names are compared ignoring case: "
            "give it once)");
}

// A body goes to the worker in a file when the agent gives one: one argument of execve holds
// at most 128 KiB, and a body may be 1 MiB.
TEST(LoadSpec, TheBodyGoesInAFileWhenOneIsGiven) {
  auto s = good();
  s.set_body(std::string(200 * 1024, 'b'));
  auto argv = command_line("l", options_from_spec(s), "/run/job/body");
  auto at = std::find(argv.begin(), argv.end(), "--body-file");
  ASSERT_NE(at, argv.end());
  EXPECT_EQ(*(at + 1), "/run/job/body");
  EXPECT_EQ(std::find(argv.begin(), argv.end(), "--body"), argv.end());
}

// --protocol h2 either way, with the spec's streams.
TEST(LoadSpec, Http2SpecsBecomeProtocolH2WithTheirStreams) {
  auto s = good();
  s.set_protocol(v1::PROTOCOL_H2);
  s.set_streams(10);
  LoadOptions o = options_from_spec(s);
  EXPECT_EQ(o.url.substr(0, 8), "https://");
  EXPECT_EQ(o.protocol, "h2");
  EXPECT_EQ(o.streams, 10);
  auto argv = command_line("l", o);
  std::vector<std::string> tail(argv.end() - 5, argv.end());
  EXPECT_EQ(tail, (std::vector<std::string>{"--protocol", "h2", "--streams", "10", "--json-events"}));
  EXPECT_EQ(input_error_of([&] { validate_spec(s); }), "");
  s.set_protocol(v1::PROTOCOL_H2C);
  o = options_from_spec(s);
  EXPECT_EQ(o.url.substr(0, 7), "http://");
  EXPECT_EQ(o.protocol, "h2");
  EXPECT_EQ(o.tls_version, "");
  // Streams over HTTP/1.1: refused with the worker's own words.
  s.set_protocol(v1::PROTOCOL_HTTPS);
  EXPECT_NE(input_error_of([&] { validate_spec(s); }).find("--streams"), std::string::npos)
      << input_error_of([&] { validate_spec(s); });
  s.set_protocol(v1::PROTOCOL_H2C);
  s.set_streams(1001);
  EXPECT_NE(input_error_of([&] { validate_spec(s); }).find("--streams: must be in 1..1000, got 1001"),
            std::string::npos)
      << input_error_of([&] { validate_spec(s); });
}

// Poisson arrivals reach the worker with their seed; an even pace adds nothing to the command.
TEST(LoadSpec, PoissonArrivalsCarryTheirSeed) {
  auto s = good();
  s.set_rate(500);
  auto plain = command_line("l", options_from_spec(s));
  EXPECT_EQ(std::find(plain.begin(), plain.end(), "--arrivals"), plain.end());
  s.set_arrivals("poisson");
  s.set_seed(77);
  LoadOptions o = options_from_spec(s);
  EXPECT_EQ(o.arrivals, "poisson");
  EXPECT_EQ(o.seed, 77u);
  auto argv = command_line("l", o);
  auto at = std::find(argv.begin(), argv.end(), "--arrivals");
  ASSERT_NE(at, argv.end());
  EXPECT_EQ(std::vector<std::string>(at, at + 4),
            (std::vector<std::string>{"--arrivals", "poisson", "--seed", "77"}));
  EXPECT_EQ(input_error_of([&] { validate_spec(s); }), "");
  // In a closed loop, or a name the worker does not know: the worker's own words.
  s.set_rate(0);
  EXPECT_NE(input_error_of([&] { validate_spec(s); }).find("--arrivals: poisson paces an open loop"),
            std::string::npos)
      << input_error_of([&] { validate_spec(s); });
  s.set_rate(500);
  s.set_arrivals("Poisson");
  EXPECT_NE(input_error_of([&] { validate_spec(s); }).find("--arrivals: must be uniform or poisson"),
            std::string::npos)
      << input_error_of([&] { validate_spec(s); });
}

// A pacing granularity reaches the worker as --pace-granularity; the worker's own checks refuse
// it in a closed loop, out of range and with a scheduled start.
TEST(LoadSpec, APacingGranularityReachesTheWorker) {
  auto s = good();
  s.set_rate(500);
  auto plain = command_line("l", options_from_spec(s));
  EXPECT_EQ(std::find(plain.begin(), plain.end(), "--pace-granularity"), plain.end());
  s.set_pace_granularity_us(1000);
  LoadOptions o = options_from_spec(s);
  EXPECT_EQ(o.pace_granularity_us, 1000);
  auto argv = command_line("l", o);
  auto at = std::find(argv.begin(), argv.end(), "--pace-granularity");
  ASSERT_NE(at, argv.end());
  EXPECT_EQ(*(at + 1), "1000");
  EXPECT_EQ(input_error_of([&] { validate_spec(s); }), "");
  s.set_pace_granularity_us(100'001);
  EXPECT_NE(input_error_of([&] { validate_spec(s); }).find("--pace-granularity: must be in 0..100000 µs"),
            std::string::npos)
      << input_error_of([&] { validate_spec(s); });
  s.set_pace_granularity_us(1000);
  s.set_rate(0);
  EXPECT_NE(input_error_of([&] { validate_spec(s); }).find("--pace-granularity: paces an open loop"),
            std::string::npos)
      << input_error_of([&] { validate_spec(s); });
  s.set_rate(500);
  s.set_duration_s(2);
  s.set_scheduled_start(true);
  EXPECT_NE(input_error_of([&] { validate_spec(s); }).find("--pace-granularity"), std::string::npos)
      << input_error_of([&] { validate_spec(s); });
}

// A part of a cell's open loop over several agents reaches its worker as --pace-share.
TEST(LoadSpec, APartOfACellsPaceCarriesItsThreads) {
  auto s = good();
  s.set_rate(500);
  auto whole = command_line("l", options_from_spec(s));
  EXPECT_EQ(std::find(whole.begin(), whole.end(), "--pace-share"), whole.end());
  s.set_first_thread(4);
  s.set_cell_threads(12);
  LoadOptions o = options_from_spec(s);
  ASSERT_TRUE(o.pace_share);
  EXPECT_EQ(*o.pace_share, std::make_pair(4u, 12u));
  auto argv = command_line("l", o);
  auto at = std::find(argv.begin(), argv.end(), "--pace-share");
  ASSERT_NE(at, argv.end());
  ASSERT_NE(at + 1, argv.end());
  EXPECT_EQ(*(at + 1), "4/12");
  EXPECT_EQ(input_error_of([&] { validate_spec(s); }), "");
  s.set_first_thread(10);  // 4 threads from 10 do not fit in 12
  EXPECT_NE(input_error_of([&] { validate_spec(s); }).find("--pace-share: FIRST/TOTAL must hold"),
            std::string::npos)
      << input_error_of([&] { validate_spec(s); });
}

TEST(LoadSpec, ValidationIsTheWorkersAndNamesTheField) {
  auto s = good();
  EXPECT_EQ(input_error_of([&] { validate_spec(s); }), "");
  s.set_endpoint("nohost");
  EXPECT_EQ(input_error_of([&] { validate_spec(s); }).substr(0, 9), "endpoint:");
  s = good();
  s.set_connections(2);
  EXPECT_NE(
      input_error_of([&] { validate_spec(s); }).find("-c/--connections: must be in 4 (the thread count).."),
      std::string::npos)
      << input_error_of([&] { validate_spec(s); });
  s = good();
  s.clear_requests_per_thread();
  EXPECT_EQ(input_error_of([&] { validate_spec(s); }).substr(0, 5), "stop:");
  s = good();
  (*s.mutable_headers())["Bad"] = "a\r\nInjected: 1";
  EXPECT_NE(input_error_of([&] { validate_spec(s); }).find("-H/--header"), std::string::npos)
      << input_error_of([&] { validate_spec(s); });
  s = good();
  s.set_threads(2000);  // the worker's limit, not a looser one of the agent's
  EXPECT_NE(input_error_of([&] { validate_spec(s); }).find("-t/--threads: must be in 1..1024"),
            std::string::npos)
      << input_error_of([&] { validate_spec(s); });
  s = good();
  s.set_rate(1e-300);
  EXPECT_NE(input_error_of([&] { validate_spec(s); }).find("--rate"), std::string::npos)
      << input_error_of([&] { validate_spec(s); });
}

// What the worker prints is what the agent reads: one message, no hand-written fields.
TEST(LoadSpec, ResultLineRoundTripsThroughTheProtocolsJson) {
  LoadResult r;
  r.requests = 100;
  r.responses = 98;
  r.errors = 2;
  r.errors_by_kind[static_cast<int>(ErrorKind::kStatus)] = 2;
  r.status = {{200, 98}, {500, 2}};
  r.duration_s = 0.5;
  r.qps = 200;
  r.threads = 1;
  r.connections = 1;
  for (int v = 100; v < 200; ++v) r.histogram.record(v);
  r.histogram_uncorrected = r.histogram;
  v1::LoadEvent ev;
  *ev.mutable_result() = to_proto(r);
  std::string line = proto::to_json(ev);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_NE(line.find("\"result\":{"), std::string::npos) << line;
  EXPECT_NE(line.find("\"rate_not_held\":false"), std::string::npos) << line;  // defaults are printed

  v1::LoadEvent back;
  ASSERT_NO_THROW(proto::from_json(line, &back));
  ASSERT_TRUE(back.has_result());
  EXPECT_EQ(back.result().requests(), 100u);
  EXPECT_EQ(back.result().status().at(500), 2u);
  EXPECT_EQ(back.result().error_kinds().at("status"), 2u);
  EXPECT_FALSE(back.result().error_kinds().contains("read"));
  EXPECT_DOUBLE_EQ(back.result().latency().p50_us(),
                   static_cast<double>(r.histogram.value_at_percentile(50)));
  Histogram h;
  ASSERT_NO_THROW(proto::from_proto(back.result().histogram(), &h));
  EXPECT_EQ(h.count(), 100);
  EXPECT_EQ(h.value_at_percentile(99), r.histogram.value_at_percentile(99));
}

}  // namespace
}  // namespace loadlab::load
