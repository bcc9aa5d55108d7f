// loadlab-load --protocol h3: against gtlsserver (ngtcp2's example HTTP/3 server, Debian's
// ngtcp2-server; skipped when it is not installed) with a certificate made in the test.
// Exact counts against the server's own log (handshakes it completed, responses it sent),
// connections and handshakes per connection, resumption and 0-RTT, the CSV columns,
// verification, refusals and flag errors. Every run is bounded; gtlsserver is stopped by pid.
// Against the real loadlab-target --h3, in real time: timing/load_generator/h3_truth_test.cpp.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>
#include <vector>

#include "gtlsserver_process.hpp"
#include "input_error_of.hpp"
#include "load_runner.hpp"
#include "load_test_support.hpp"
#include "loadlab/load/load_options.hpp"
#include "request_csv_rows.hpp"
#include "self_signed_certificate.hpp"

namespace loadlab::load {
namespace {

using testing::expect_all_ok;
using testing::GtlsServerOptions;
using testing::GtlsServerProcess;
using testing::run_binary;
using testing::run_bounded;
using testing::run_with_csv;
using testing::SelfSignedCertificate;
using testing::unique_path;

constexpr int64_t kBodySize = 1000;  // of the file gtlsserver serves at /body

const SelfSignedCertificate& localhost_certificate() {
  static const SelfSignedCertificate cert({"localhost"}, {"127.0.0.1"});
  return cert;
}

std::string write_file(const std::string& path, const std::string& content) {
  std::ofstream(path) << content;
  return path;
}

// gtlsserver serving a directory with /body (kBodySize bytes).
struct GtlsServer {
  std::string dir = unique_path("h3_load_test_docroot", "");
  std::string ca;
  std::unique_ptr<GtlsServerProcess> process;

  explicit GtlsServer(const std::string& name) {
    mkdir(dir.c_str(), 0755);
    write_file(dir + "/body", std::string(kBodySize, 'x'));
    GtlsServerOptions o;
    o.docroot = dir;
    o.log = unique_path("gtlsserver_" + name, ".log");
    o.key = write_file(unique_path("h3_load_test_key", ".pem"), localhost_certificate().key_pem);
    o.cert = localhost_certificate().write_certificate(unique_path("h3_load_test_cert", ".pem"));
    ca = o.cert;
    process = std::make_unique<GtlsServerProcess>(o);
  }
};

LoadOptions h3_options(const GtlsServer& server, int connections, int streams) {
  LoadOptions o;
  o.url = server.process->url("/body");
  o.protocol = "h3";
  o.ca_file = server.ca;
  o.connections = connections;
  o.threads = 1;
  if (streams > 1) o.streams = streams;
  return o;
}

#define REQUIRE_GTLSSERVER()                                \
  if (!GtlsServerProcess::available())                      \
  GTEST_SKIP() << testing::kGtlsServer << " not installed " \
               << "(Debian package ngtcp2-server)"

TEST(H3Load, EveryRequestIsAnsweredOnTwoConnectionsWithTheirStreams) {
  REQUIRE_GTLSSERVER();
  GtlsServer server("h3_keepalive");
  ASSERT_NE(server.process->port(), 0);
  LoadOptions o = h3_options(server, 2, 10);
  o.total_requests = 200;
  auto run = run_with_csv(o, "h3_keepalive");
  server.process->stop();
  expect_all_ok(run.result, 200);
  // QUIC's handshake is the connection: one per connection, verified against --ca.
  EXPECT_EQ(run.result.connects, 2);
  EXPECT_EQ(run.result.tls_handshakes, 2);
  EXPECT_EQ(run.result.tls_resumed, 0);
  EXPECT_EQ(run.result.connect_histogram.count(), 0);  // no TCP connect to time
  EXPECT_EQ(server.process->handshakes(), 2);
  EXPECT_EQ(server.process->responses(), 200);
  ASSERT_EQ(run.rows.size(), 200u);
  int64_t paid = 0, sum = 0;
  for (const auto& row : run.rows) {
    EXPECT_EQ(row.protocol, "h3");
    EXPECT_EQ(row.tls_version, "1.3");
    EXPECT_EQ(row.status, 200);
    EXPECT_EQ(row.connect, 0);
    // HEADERS and DATA frames: the body, two frame headers and the QPACK header block.
    EXPECT_GE(row.bytes, kBodySize + 4);
    EXPECT_LE(row.bytes, kBodySize + 200);
    sum += row.bytes;
    if (!row.reused) {
      ++paid;
      EXPECT_GT(row.tls, 0);
    }
  }
  EXPECT_EQ(sum, run.result.bytes_read);
  // The first `streams` requests of each connection waited for its handshake.
  EXPECT_EQ(paid, 20);
}

TEST(H3Load, WithoutKeepAliveEveryRequestIsAConnection) {
  REQUIRE_GTLSSERVER();
  GtlsServer server("h3_no_keepalive");
  ASSERT_NE(server.process->port(), 0);
  LoadOptions o = h3_options(server, 1, 1);
  o.keep_alive = false;
  o.total_requests = 20;
  auto run = run_with_csv(o, "h3_no_keepalive");
  server.process->stop();
  expect_all_ok(run.result, 20);
  EXPECT_EQ(run.result.tls_handshakes, 20);
  EXPECT_EQ(run.result.tls_resumed, 0);
  EXPECT_EQ(server.process->handshakes(), 20);
  EXPECT_EQ(server.process->responses(), 20);
  ASSERT_EQ(run.rows.size(), 20u);
  for (const auto& row : run.rows) {
    EXPECT_EQ(row.reused, 0);
    EXPECT_EQ(row.resumed, 0);
    EXPECT_GT(row.tls, 0);
  }
}

// --tls-resume: every reconnection offers the ticket of the connection before; --zero-rtt
// also sends its request in the first flight, which gtlsserver accepts.
class H3ResumeTest : public ::testing::TestWithParam<bool> {};

TEST_P(H3ResumeTest, EveryReconnectionResumes) {
  REQUIRE_GTLSSERVER();
  const bool zero_rtt = GetParam();
  GtlsServer server(zero_rtt ? "h3_zero_rtt" : "h3_resume");
  ASSERT_NE(server.process->port(), 0);
  LoadOptions o = h3_options(server, 1, 1);
  o.keep_alive = false;
  o.tls_resume = true;
  o.zero_rtt = zero_rtt;
  o.total_requests = 10;
  auto run = run_with_csv(o, zero_rtt ? "h3_zero_rtt" : "h3_resume");
  server.process->stop();
  expect_all_ok(run.result, 10);
  EXPECT_EQ(run.result.tls_handshakes, 10);
  EXPECT_EQ(run.result.tls_resumed, 9);
  EXPECT_EQ(run.result.tls_early_data, zero_rtt ? 9 : 0);
  EXPECT_EQ(server.process->handshakes(), 10);
  EXPECT_EQ(server.process->responses(), 10);  // nothing sent twice, early or not
  // The server's own word: the requests of 9 connections reached it as 0-RTT data.
  EXPECT_EQ(server.process->early_data_connections(), zero_rtt ? 9 : 0);
  ASSERT_EQ(run.rows.size(), 10u);
  int resumed = 0;
  for (const auto& row : run.rows) resumed += static_cast<int>(row.resumed);
  EXPECT_EQ(resumed, 9);
}

INSTANTIATE_TEST_SUITE_P(ResumeAndZeroRtt, H3ResumeTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "ZeroRtt" : "Resume"; });

TEST(H3Load, AnUnverifiableCertificateFailsTheHandshakeWithTheVerifiersReason) {
  REQUIRE_GTLSSERVER();
  GtlsServer server("h3_verify");
  ASSERT_NE(server.process->port(), 0);
  LoadOptions o = h3_options(server, 1, 1);
  o.ca_file.clear();  // the system store does not know the test's certificate
  o.total_requests = 3;
  o.timeout_ms = 2000;
  LoadResult r = run_bounded(o);
  EXPECT_EQ(r.responses, 0);
  EXPECT_GT(r.errors_by_kind[static_cast<int>(ErrorKind::kTls)], 0);
  EXPECT_NE(r.tls_error.find("certificate verify failed"), std::string::npos) << r.tls_error;
}

TEST(H3Load, NothingListeningOnTheUdpPortIsUnreachable) {
  LoadOptions o;
  // A port bound for UDP by nobody: the kernel answers with ICMP port unreachable.
  o.url = "https://127.0.0.1:9/";
  o.protocol = "h3";
  o.insecure = true;
  o.total_requests = 5;
  o.timeout_ms = 2000;
  LoadResult r = run_bounded(o, std::chrono::seconds(10));
  EXPECT_EQ(r.responses, 0);
  EXPECT_NE(r.error.find("cannot connect"), std::string::npos) << r.error;
}

TEST(H3Load, FlagsThatQuicCannotHonourAreRefusedByName) {
  auto error_of = [](LoadOptions o) {
    return loadlab::testing::input_error_of([&] { complete_and_validate(o); });
  };
  LoadOptions o;
  o.url = "http://127.0.0.1:8080/";
  o.protocol = "h3";
  EXPECT_NE(error_of(o).find("--protocol"), std::string::npos);
  o.url = "https://127.0.0.1:8443/";
  o.tls_version = "1.2";
  EXPECT_NE(error_of(o).find("--tls-version"), std::string::npos);
  o.tls_version = "1.3";
  o.zero_rtt = true;
  EXPECT_NE(error_of(o).find("--zero-rtt"), std::string::npos);  // needs --tls-resume
  o.tls_resume = true;
  EXPECT_EQ(error_of(o), "");
  o.protocol = "h2";
  EXPECT_NE(error_of(o).find("--zero-rtt"), std::string::npos);  // needs h3
  testing::Exec e = run_binary("--protocol h3 --zero-rtt -n 1 https://127.0.0.1:8443/ 2>&1");
  EXPECT_EQ(e.exit_code, 2);
  EXPECT_NE(e.out.find("--zero-rtt"), std::string::npos) << e.out;
}

}  // namespace
}  // namespace loadlab::load
