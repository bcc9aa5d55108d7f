// loadlab-load --protocol h2: against nghttpd (Debian's nghttp2-server; the tests that need
// it are skipped when it is not installed), h2c and h2 over TLS with a certificate made in
// the test, and against an in-test HTTP/2 server that counts connections, requests and open
// streams and can delay its answers or send GOAWAY. Exact counts, connections and
// handshakes per connection, streams in flight, the CSV columns, refusals and flag errors.
// Every run is bounded; nghttpd is stopped by pid. The open loop's rate in real time:
// timing/load_generator/h2_open_loop_test.cpp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "h2_load_support.hpp"
#include "h2_test_server.hpp"
#include "load_runner.hpp"
#include "load_test_support.hpp"
#include "loadlab/load/load_options.hpp"
#include "loadlab/shared/limits.hpp"
#include "nghttpd_process.hpp"
#include "request_csv_rows.hpp"
#include "self_signed_certificate.hpp"
#include "test_server.hpp"

namespace loadlab::load {
namespace {

using namespace std::chrono_literals;
using testing::expect_all_ok;
using testing::h2_options;
using testing::H2ServerOptions;
using testing::H2TestServer;
using testing::NghttpdOptions;
using testing::NghttpdProcess;
using testing::Row;
using testing::run_binary;
using testing::run_bounded;
using testing::run_with_csv;
using testing::SelfSignedCertificate;
using testing::unique_path;

constexpr int64_t kBodySize = 1000;  // of the file nghttpd serves at /body

const SelfSignedCertificate& localhost_certificate() {
  static const SelfSignedCertificate cert({"localhost"}, {"127.0.0.1"});
  return cert;
}

std::string write_file(const std::string& path, const std::string& content) {
  std::ofstream(path) << content;
  return path;
}

// nghttpd serving a directory with /body (kBodySize bytes); h2 over TLS when `tls`.
struct Nghttpd {
  std::string dir = unique_path("h2_load_test_docroot", "");
  std::string ca;
  std::unique_ptr<NghttpdProcess> process;

  explicit Nghttpd(bool tls, const std::string& name, std::vector<std::string> extra_args = {}) {
    mkdir(dir.c_str(), 0755);
    write_file(dir + "/body", std::string(kBodySize, 'x'));
    NghttpdOptions o;
    o.docroot = dir;
    o.verbose = true;
    o.extra_args = std::move(extra_args);
    o.log = unique_path("nghttpd_" + name, ".log");
    if (tls) {
      o.key = write_file(unique_path("h2_load_test_key", ".pem"), localhost_certificate().key_pem);
      o.cert = localhost_certificate().write_certificate(unique_path("h2_load_test_cert", ".pem"));
      ca = o.cert;
    }
    process = std::make_unique<NghttpdProcess>(o);
  }
};

// Each response is a HEADERS frame and one DATA frame of kBodySize (9-byte frame headers):
// its bytes are the body, two frame headers and the (HPACK-compressed) header block, which
// the first response on a connection pays in full and later ones mostly as table indices.
void expect_body_bytes(const std::vector<Row>& rows, const LoadResult& r) {
  int64_t sum = 0;
  for (const Row& row : rows) {
    EXPECT_GE(row.bytes, kBodySize + 2 * 9 + 1);
    EXPECT_LE(row.bytes, kBodySize + 2 * 9 + 200);
    sum += row.bytes;
  }
  EXPECT_EQ(sum, r.bytes_read);
}

#define REQUIRE_NGHTTPD()                                \
  if (!NghttpdProcess::available())                      \
  GTEST_SKIP() << testing::kNghttpd << " not installed " \
               << "(Debian package nghttp2-server)"

// h2c (false) and h2 over TLS (true): -c 2 --streams 10, 200 requests on two connections.
class H2KeepAliveTest : public ::testing::TestWithParam<bool> {};

TEST_P(H2KeepAliveTest, EveryRequestIsAnsweredOnTwoConnections) {
  REQUIRE_NGHTTPD();
  const bool tls = GetParam();
  Nghttpd server(tls, tls ? "h2_keepalive" : "h2c_keepalive");
  ASSERT_NE(server.process->port(), 0);
  LoadOptions o = h2_options(server.process->url("/body"), 2, 10);
  o.ca_file = server.ca;
  o.total_requests = 200;
  auto [r, rows] = run_with_csv(o, tls ? "h2_keepalive_rows" : "h2c_keepalive_rows");
  server.process->stop();
  expect_all_ok(r, 200);
  EXPECT_EQ(server.process->connections(), 2);  // nghttpd's own count
  EXPECT_EQ(r.connects, 2);
  EXPECT_EQ(r.tls_handshakes, tls ? 2 : 0);
  EXPECT_EQ(r.first_byte_histogram.count(), 200);
  ASSERT_EQ(rows.size(), 200u);
  expect_body_bytes(rows, r);
  for (const Row& row : rows) {
    EXPECT_EQ(row.protocol, tls ? "h2" : "h2c");
    EXPECT_EQ(row.tls_version, tls ? "1.3" : "");
    EXPECT_EQ(row.status, 200);
    EXPECT_LE(row.first_byte, row.total);
  }
  // The first 10 streams of each connection waited for its connect (and handshake).
  EXPECT_EQ(testing::count_paid_rows(rows, tls), 2 * 10);
}

INSTANTIATE_TEST_SUITE_P(Transports, H2KeepAliveTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "H2OverTls" : "H2c"; });

TEST(H2LoadTest, NoKeepAliveEveryRequestPaysConnectAndHandshake) {
  REQUIRE_NGHTTPD();
  Nghttpd server(true, "h2_no_keepalive");
  ASSERT_NE(server.process->port(), 0);
  LoadOptions o = h2_options(server.process->url("/body"), 2, 10);
  o.ca_file = server.ca;
  o.tls_version = "1.2";
  o.keep_alive = false;
  o.total_requests = 30;
  auto [r, rows] = run_with_csv(o, "h2_no_keepalive_rows");
  server.process->stop();
  expect_all_ok(r, 30);
  EXPECT_EQ(server.process->connections(), 30);
  EXPECT_EQ(r.connects, 30);
  EXPECT_EQ(r.tls_handshakes, 30);
  ASSERT_EQ(rows.size(), 30u);
  for (const Row& row : rows) {
    EXPECT_EQ(row.protocol, "h2");
    EXPECT_EQ(row.tls_version, "1.2");
  }
  EXPECT_EQ(testing::count_paid_rows(rows, true), 30);
}

// --tls-resume without keep-alive: every reconnect resumes its connection's previous session
// (the client ends each connection with a close_notify, without which nghttpd forgets it).
class H2ResumeTest : public ::testing::TestWithParam<const char*> {};

TEST_P(H2ResumeTest, ReconnectsResumeTheirSession) {
  REQUIRE_NGHTTPD();
  const std::string version = GetParam();
  Nghttpd server(true, "h2_resume_" + version);
  ASSERT_NE(server.process->port(), 0);
  LoadOptions o = h2_options(server.process->url("/body"), 2, 1);
  o.ca_file = server.ca;
  o.tls_version = version;
  o.tls_resume = true;
  o.keep_alive = false;
  o.requests_per_thread = 10;
  auto [r, rows] = run_with_csv(o, "h2_resume_rows_" + version);
  server.process->stop();
  expect_all_ok(r, 10);
  EXPECT_EQ(server.process->connections(), 10);
  EXPECT_EQ(r.tls_handshakes, 10);
  EXPECT_EQ(r.tls_resumed, 8);  // all but each connection's first
  ASSERT_EQ(rows.size(), 10u);
  int resumed = 0;
  for (const Row& row : rows) resumed += static_cast<int>(row.resumed);
  EXPECT_EQ(resumed, 8);
}

INSTANTIATE_TEST_SUITE_P(Versions, H2ResumeTest, ::testing::Values("1.2", "1.3"), [](const auto& info) {
  return std::string(info.param) == "1.2" ? "Tls12" : "Tls13";
});

// A request body larger than the server's stream window (64 KiB) goes out as the server's
// WINDOW_UPDATEs allow; nghttpd echoes it back, so each response carries it whole.
TEST(H2LoadTest, RequestBodiesGoOutWhole) {
  REQUIRE_NGHTTPD();
  Nghttpd server(false, "h2_echo", {"--echo-upload"});
  ASSERT_NE(server.process->port(), 0);
  constexpr int64_t kUpload = 100'000;
  LoadOptions o = h2_options(server.process->url("/"), 2, 3);
  o.method = "POST";
  o.body = std::string(kUpload, 'a');
  o.requests_per_thread = 20;
  auto [r, rows] = run_with_csv(o, "h2_echo_rows");
  expect_all_ok(r, 20);
  ASSERT_EQ(rows.size(), 20u);
  for (const Row& row : rows) {
    EXPECT_GE(row.bytes, kUpload + 7 * 9);  // at least 7 DATA frames of at most 16 KiB
    EXPECT_LE(row.bytes, kUpload + 2000);   // not a byte of the body twice
  }
}

// The server holds each answer 50 ms: ten streams are open at once on the one connection,
// never more, and every request takes at least the delay.
TEST(H2LoadTest, StreamsAreInFlightAtOnce) {
  H2ServerOptions so;
  so.delay = 50ms;
  H2TestServer server(so);
  LoadOptions o = h2_options(server.url(), 1, 10);
  o.requests_per_thread = 40;
  LoadResult r = run_bounded(o);
  expect_all_ok(r, 40);
  EXPECT_EQ(server.requests(), 40);
  EXPECT_EQ(server.connections(), 1);
  EXPECT_EQ(server.max_open_streams(), 10);
  EXPECT_GE(r.histogram.min(), 50000);

  H2TestServer one(so);
  o = h2_options(one.url(), 1, 1);
  o.requests_per_thread = 4;
  r = run_bounded(o);
  expect_all_ok(r, 4);
  EXPECT_EQ(one.max_open_streams(), 1);
}

// GOAWAY after every 5th request of a connection: the streams the client had opened beyond
// it were not processed and go again on a new connection; none is lost or sent twice.
TEST(H2LoadTest, GoawayStreamsAreRetriedOnANewConnection) {
  H2ServerOptions so;
  so.goaway_after = 5;
  H2TestServer server(so);
  LoadOptions o = h2_options(server.url(), 1, 4);
  o.requests_per_thread = 40;
  LoadResult r = run_bounded(o);
  expect_all_ok(r, 40);
  EXPECT_EQ(server.requests(), 40);
  EXPECT_EQ(server.connections(), 8);  // 5 requests each
  EXPECT_EQ(r.connects, 8);
}

TEST(H2LoadTest, StreamsPastTheTimeoutFailAsTimeouts) {
  H2ServerOptions so;
  so.delay = 1000ms;
  H2TestServer server(so);
  LoadOptions o = h2_options(server.url(), 1, 3);
  o.timeout_ms = 50;
  o.requests_per_thread = 6;
  LoadResult r = run_bounded(o, 10s);
  EXPECT_EQ(r.requests, 6);
  EXPECT_EQ(r.responses, 0);
  EXPECT_EQ(r.errors_by_kind[static_cast<int>(ErrorKind::kTimeout)], 6);
  EXPECT_EQ(server.connections(), 1);  // a cancelled stream leaves the connection
}

TEST(H2LoadTest, WarmupAndMeasuredRequestsAreWhatTheServerAnswered) {
  H2TestServer server;
  LoadOptions o = h2_options(server.url(), 2, 5);
  o.requests_per_thread = 2000;
  o.warmup_s = 0.2;
  LoadResult r = run_bounded(o);
  expect_all_ok(r, 2000);
  EXPECT_GT(r.warmup_requests, 0);
  EXPECT_EQ(server.requests(), r.requests + r.warmup_requests);
}

// A TLS server that does not select h2 in ALPN: every request fails as tls, with the reason.
TEST(H2LoadTest, ServerWithoutH2InAlpnFailsAsTls) {
  testing::TestServer server(localhost_certificate());
  LoadOptions o = h2_options("https://127.0.0.1:" + std::to_string(server.port()) + "/", 1, 4);
  o.ca_file = localhost_certificate().write_certificate(unique_path("h2_alpn_ca", ".pem"));
  o.requests_per_thread = 4;
  o.streams.reset();
  LoadResult r = run_bounded(o, 10s);
  EXPECT_EQ(r.requests, 4);
  EXPECT_EQ(r.responses, 0);
  EXPECT_EQ(r.errors_by_kind[static_cast<int>(ErrorKind::kTls)], 4);
  EXPECT_EQ(server.requests(), 0);
  EXPECT_NE(r.tls_error.find("ALPN; --protocol h2 needs h2"), std::string::npos) << r.tls_error;
}

TEST(H2LoadBinaryTest, BadProtocolFlagsExitTwoNamingTheFlag) {
  struct Case {
    std::string args, message;
  };
  const std::string url = "http://127.0.0.1:1/ ";
  const std::string max = std::to_string(limits::kMaxStreams);
  for (const Case& c : std::vector<Case>{
           {url + "--protocol h2 --streams 0", "--streams: must be a number in 1.." + max + ", got 0"},
           {url + "--protocol h2 --streams " + std::to_string(limits::kMaxStreams + 1),
            "--streams: must be a number in 1.." + max},
           {url + "--protocol http1 --streams 2", "--streams: needs --protocol h2 or h3"},
           {url + "--streams 2", "--streams: needs --protocol h2 or h3"},
           {url + "--protocol h3", "--protocol: h3 needs an https:// URL"},
           {url + "--protocol HTTP/2", "--protocol: must be http1, h2 or h3, got 'HTTP/2'"}}) {
    auto e = run_binary(c.args + " 2>&1");
    EXPECT_EQ(e.exit_code, 2) << c.args << ": " << e.out;
    EXPECT_NE(e.out.find(c.message), std::string::npos) << c.args << ": " << e.out;
  }
}

TEST(H2LoadBinaryTest, SummaryAndJsonOfAnH2Run) {
  H2TestServer server;
  auto e = run_binary(server.url() + " --protocol h2 --streams 4 -c 2 -n 100 --json 2>&1");
  ASSERT_EQ(e.exit_code, 0) << e.out;
  EXPECT_NE(e.out.find("\"requests\":\"100\""), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("\"200\":\"100\""), std::string::npos) << e.out;
  EXPECT_EQ(server.requests(), 100);
  e = run_binary(server.url() + " --protocol h2 --streams 4 -c 2 -n 10 2>&1");
  ASSERT_EQ(e.exit_code, 0) << e.out;
  EXPECT_NE(e.out.find("1 threads and 2 connections (HTTP/2, 4 streams each)"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("Status: 200=10"), std::string::npos) << e.out;
}

}  // namespace
}  // namespace loadlab::load
