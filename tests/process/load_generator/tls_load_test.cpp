// loadlab-load over https:// against an in-test TLS server on 127.0.0.1:0 with a
// self-signed certificate made in the test: verification, forced versions, handshakes per
// connection, session resumption, the per-request timings and their CSV columns.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "load_runner.hpp"
#include "load_test_support.hpp"
#include "loadlab/load/load_options.hpp"
#include "loadlab/proto/json.hpp"
#include "request_csv_rows.hpp"
#include "request_log.hpp"
#include "spawned_child.hpp"
#include "test_server.hpp"

namespace loadlab::load {
namespace {

using namespace std::chrono_literals;
using testing::Row;
using testing::run_binary;
using testing::run_bounded;
using testing::run_with_csv;
using testing::SelfSignedCertificate;
using testing::TestServer;
using testing::TlsServerOptions;
using testing::unique_path;

const SelfSignedCertificate& localhost_certificate() {
  static const SelfSignedCertificate cert({"localhost"}, {"127.0.0.1"});
  return cert;
}

std::string ca_file() {
  static const std::string path =
      localhost_certificate().write_certificate(unique_path("tls_load_test_ca", ".pem"));
  return path;
}

LoadOptions https_options(const TestServer& server, int connections, int64_t requests) {
  LoadOptions o;
  o.url = "https://127.0.0.1:" + std::to_string(server.port()) + "/";
  o.ca_file = ca_file();
  o.connections = connections;
  o.requests_per_thread = requests;
  return o;
}

// `r` has `n` responses and no error.
void expect_all_answered(const LoadResult& r, int64_t n) {
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.requests, n);
  EXPECT_EQ(r.responses, n);
  EXPECT_EQ(r.errors, 0);
}

int64_t tls_errors(const LoadResult& r) { return r.errors_by_kind[static_cast<int>(ErrorKind::kTls)]; }

TEST(TlsLoadTest, KeepAliveConnectionsPayOneHandshakeEach) {
  TestServer server(localhost_certificate());
  auto [r, rows] = run_with_csv(https_options(server, 2, 30), "tls_keepalive");
  expect_all_answered(r, 30);
  EXPECT_EQ(server.handshakes(), 2);
  EXPECT_EQ(server.requests(), 30);
  EXPECT_EQ(r.connects, 2);
  EXPECT_EQ(r.tls_handshakes, 2);
  EXPECT_EQ(r.tls_resumed, 0);
  EXPECT_EQ(r.tls_histogram.count(), 2);
  EXPECT_EQ(r.first_byte_histogram.count(), 30);
  ASSERT_EQ(rows.size(), 30u);
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& row = rows[i];
    EXPECT_EQ(row.protocol, "http/1.1");
    EXPECT_EQ(row.tls_version, "1.3");
    EXPECT_EQ(row.iteration, static_cast<long long>(i));
    EXPECT_EQ(row.status, 200);
    EXPECT_GT(row.bytes, 0);
    EXPECT_EQ(row.resumed, 0);
    EXPECT_LE(row.first_byte, row.total);
  }
  EXPECT_EQ(testing::count_paid_rows(rows, true), 2);  // the first request of each connection
}

TEST(TlsLoadTest, NoKeepAliveEveryRequestPaysConnectAndHandshake) {
  TestServer server(localhost_certificate());
  LoadOptions o = https_options(server, 2, 12);
  o.keep_alive = false;
  auto [r, rows] = run_with_csv(o, "tls_no_keepalive");
  expect_all_answered(r, 12);
  EXPECT_EQ(server.handshakes(), 12);
  EXPECT_EQ(server.resumed(), 0);
  EXPECT_EQ(r.tls_handshakes, 12);
  EXPECT_EQ(r.connects, 12);
  ASSERT_EQ(rows.size(), 12u);
  for (const Row& row : rows) {
    EXPECT_GT(row.connect, 0);
    EXPECT_GT(row.tls, 0);
    EXPECT_EQ(row.reused, 0);
    EXPECT_EQ(row.resumed, 0);
  }
}

class TlsResumeTest : public ::testing::TestWithParam<const char*> {};

TEST_P(TlsResumeTest, ReconnectsResumeTheirSession) {
  const std::string version = GetParam();
  TlsServerOptions so;
  so.min_version = so.max_version = version == "1.2" ? TLS1_2_VERSION : TLS1_3_VERSION;
  TestServer server(localhost_certificate(), so);
  LoadOptions o = https_options(server, 2, 10);
  o.keep_alive = false;
  o.tls_version = version;
  o.tls_resume = true;
  auto [r, rows] = run_with_csv(o, "tls_resume_" + version);
  expect_all_answered(r, 10);
  EXPECT_EQ(server.handshakes(), 10);
  // Every handshake but each connection's first offers the session of the one before.
  EXPECT_EQ(server.resumed(), 8);
  EXPECT_EQ(r.tls_resumed, 8);
  ASSERT_EQ(rows.size(), 10u);
  int resumed = 0;
  for (const Row& row : rows) {
    EXPECT_EQ(row.tls_version, version);
    EXPECT_GT(row.tls, 0);
    resumed += static_cast<int>(row.resumed);
  }
  EXPECT_EQ(resumed, 8);
}

INSTANTIATE_TEST_SUITE_P(Versions, TlsResumeTest, ::testing::Values("1.2", "1.3"), [](const auto& info) {
  return std::string(info.param) == "1.2" ? "Tls12" : "Tls13";
});

TEST(TlsLoadTest, FirstByteCoversTheServerDelay) {
  TestServer server(localhost_certificate(), {}, 20ms);
  auto [r, rows] = run_with_csv(https_options(server, 1, 5), "tls_first_byte");
  expect_all_answered(r, 5);
  EXPECT_GE(r.first_byte_histogram.min(), 20000);
  ASSERT_EQ(rows.size(), 5u);
  for (const Row& row : rows) {
    EXPECT_GE(row.first_byte, 20000);
    EXPECT_GE(row.total, row.first_byte);
  }
}

TEST(TlsLoadTest, SelfSignedCertificateWithoutCaFailsAsTls) {
  TestServer server(localhost_certificate());
  LoadOptions o = https_options(server, 1, 4);
  o.ca_file.clear();  // the system store does not know the test's certificate
  LoadResult r = run_bounded(o);
  EXPECT_EQ(r.requests, 4);
  EXPECT_EQ(r.responses, 0);
  EXPECT_EQ(tls_errors(r), 4);
  EXPECT_EQ(r.errors, 4);
  EXPECT_EQ(server.handshakes(), 0);
  EXPECT_NE(r.tls_error.find("certificate verify failed"), std::string::npos) << r.tls_error;
}

TEST(TlsLoadTest, InsecureSkipsVerification) {
  TestServer server(localhost_certificate());
  LoadOptions o = https_options(server, 1, 4);
  o.ca_file.clear();
  o.insecure = true;
  LoadResult r = run_bounded(o);
  EXPECT_EQ(r.responses, 4);
  EXPECT_EQ(r.errors, 0);
  EXPECT_EQ(r.tls_error, "");
}

TEST(TlsLoadTest, HostNameIsVerified) {
  static const SelfSignedCertificate other({"other.example"}, {});
  TestServer server(other);
  LoadOptions o = https_options(server, 1, 3);
  o.ca_file = other.write_certificate(unique_path("tls_load_test_other_ca", ".pem"));
  LoadResult r = run_bounded(o);  // trusted, but issued for another name than 127.0.0.1
  EXPECT_EQ(tls_errors(r), 3);
  EXPECT_NE(r.tls_error.find("certificate verify failed"), std::string::npos) << r.tls_error;

  TestServer named(localhost_certificate());
  o = https_options(named, 1, 3);
  o.url = "https://localhost:" + std::to_string(named.port()) + "/";  // SNI and DNS name check
  r = run_bounded(o);
  EXPECT_EQ(r.responses, 3);
  EXPECT_EQ(r.errors, 0);
}

TEST(TlsLoadTest, ForcedVersionTheServerRefusesFailsAsTls) {
  const std::pair<const char*, int> cases[] = {{"1.2", TLS1_3_VERSION}, {"1.3", TLS1_2_VERSION}};
  for (const auto& [client, server_version] : cases) {
    TlsServerOptions so;
    so.min_version = so.max_version = server_version;
    TestServer server(localhost_certificate(), so);
    LoadOptions o = https_options(server, 1, 3);
    o.tls_version = client;
    LoadResult r = run_bounded(o);
    EXPECT_EQ(tls_errors(r), 3) << "client " << client;
    EXPECT_EQ(r.responses, 0);
    EXPECT_EQ(server.handshakes(), 0);
    EXPECT_NE(r.tls_error, "");
  }
}

TEST(TlsLoadBinaryTest, JsonCountsTlsErrorsAndSaysWhyOnce) {
  TestServer server(localhost_certificate());
  auto e = run_binary("https://127.0.0.1:" + std::to_string(server.port()) + "/ -n 5 --json 2>&1");
  ASSERT_EQ(e.exit_code, 0) << e.out;
  auto first = e.out.find("TLS handshake failed: certificate verify failed");
  ASSERT_NE(first, std::string::npos) << e.out;
  EXPECT_EQ(e.out.find("TLS handshake failed", first + 1), std::string::npos) << e.out;
  auto brace = e.out.find('{');
  ASSERT_NE(brace, std::string::npos) << e.out;
  v1::LoadResult r;  // read strictly: the JSON stays the protocol's message
  ASSERT_NO_THROW(proto::from_json(e.out.substr(brace, e.out.find('\n', brace) - brace), &r)) << e.out;
  EXPECT_EQ(r.error_kinds().at("tls"), 5u);

  e = run_binary("https://127.0.0.1:" + std::to_string(server.port()) + "/ -n 5 --ca " + ca_file() +
                 " --tls-version 1.2 2>&1");
  ASSERT_EQ(e.exit_code, 0) << e.out;
  EXPECT_NE(e.out.find("TLS       p50"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("(1 handshakes, 0 resumed)"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("1st byte  p50"), std::string::npos) << e.out;
}

TEST(TlsLoadBinaryTest, BadTlsFlagsExitTwoNamingTheFlag) {
  struct Case {
    std::string args, flag;
  };
  const std::string https = "https://127.0.0.1:1/ ";
  for (const Case& c : std::vector<Case>{
           {"http://127.0.0.1:1/ --tls-version 1.3", "--tls-version: needs an https:// URL"},
           {"http://127.0.0.1:1/ --insecure", "--insecure: needs an https:// URL"},
           {"http://127.0.0.1:1/ --tls-resume", "--tls-resume: needs an https:// URL"},
           {"http://127.0.0.1:1/ --ca " + ca_file(), "--ca: needs an https:// URL"},
           {https + "--tls-version 1.1", "--tls-version: must be 1.2 or 1.3, got '1.1'"},
           {https + "--ca /nonexistent/ca.pem", "--ca: must be a readable regular file"},
           {https + "--ca /dev/zero", "--ca: must be a readable regular file"},
           {https + "--ca " LOADLAB_SOURCE_DIR "/CMakeLists.txt", "--ca: must hold PEM certificates"},
           {https + "--ca " + ca_file() + " --insecure", "--ca, --insecure: give at most one"}}) {
    auto e = run_binary(c.args + " 2>&1");
    EXPECT_EQ(e.exit_code, 2) << c.args << ": " << e.out;
    EXPECT_NE(e.out.find(c.flag), std::string::npos) << c.args << ": " << e.out;
  }
}

// A plain worker's own memory: the five latency histograms of its thread cost the pages their
// values fall in (about 140 KiB of counters each when all were written: 1.7 MB in all, 0.5 MB
// now). Its code: the functions a run executes are linked together
// (programs/order_files/loadlab-load.order, bench/symbol_order.sh), so 1.4-1.8 MB of its text is
// resident, 2.6-2.8 MB in the default layout (the bound is between). A stale order file or a lost
// linker flag shows here. Each figure is read first: a reader that fails says -1 or 0.
void expect_small_own_memory(pid_t pid, const std::string& protocol) {
  const long anon_kb = loadlab::testing::status_kb(pid, "RssAnon:");
  const long code_kb = loadlab::testing::own_code_kb(pid);
  ASSERT_GT(anon_kb, 0) << protocol << ": RssAnon unreadable";
  ASSERT_GT(code_kb, 0) << protocol << ": none of its own code read as resident from smaps";
  EXPECT_LT(anon_kb, 1024) << protocol;
  EXPECT_LT(code_kb, 2300) << protocol;
}

std::string exe_name(pid_t pid) {
  return std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe").filename().string();
}

// A plain worker (`protocol`: http1 or h2, against 127.0.0.1:`port`) maps no TLS or QUIC library,
// and no shared library beyond the C library's; its own memory is small.
void expect_plain_worker(uint16_t port, const char* protocol) {
  using loadlab::testing::maps_any;
  loadlab::testing::SpawnedChild plain(
      {"http://127.0.0.1:" + std::to_string(port) + "/", "--protocol", protocol, "-d", "10", "--json-events"},
      LOADLAB_BIN_DIR "/loadlab-load");
  ASSERT_TRUE(plain.read_line()) << plain.read_stderr();  // running: an event line came
  const auto libraries = loadlab::testing::mapped_libraries(plain.pid());
  for (const char* lib : {"libssl.", "libcrypto.", "libgnutls.", "libngtcp2", "libnghttp3."})
    EXPECT_FALSE(maps_any(libraries, lib)) << protocol << ": " << lib;
  EXPECT_EQ(loadlab::testing::beyond_libc(libraries), std::vector<std::string>{})
      << protocol << ": the C++ runtime, protobuf, spdlog, {fmt} and nghttp2 are linked in";
  EXPECT_EQ(exe_name(plain.pid()), "loadlab-load");
  if (!maps_any(libraries, "libasan.") && !maps_any(libraries, "libtsan."))  // sanitizers' shadow memory
    expect_small_own_memory(plain.pid(), protocol);
  kill(plain.pid(), SIGTERM);
  EXPECT_EQ(plain.wait_exit(), 0) << plain.read_stderr();
}

// A plain worker (HTTP/1.1, h2c) maps no TLS or QUIC library, and no shared library beyond the
// C library's; an https:// URL makes the same
// process (its pid: what the agent samples, confines and stops) loadlab-load-secure.
TEST(TlsLoadBinaryTest, APlainWorkerMapsNoTlsOrQuicLibraryAndHttpsHandsTheSameProcessOver) {
  using loadlab::testing::mapped_libraries;
  using loadlab::testing::maps_any;
  using loadlab::testing::SpawnedChild;
  const std::string binary = LOADLAB_BIN_DIR "/loadlab-load";
  TestServer plain_server;
  for (const char* protocol : {"http1", "h2"})
    ASSERT_NO_FATAL_FAILURE(expect_plain_worker(plain_server.port(), protocol));
  TestServer tls_server(localhost_certificate());
  SpawnedChild secure({"https://127.0.0.1:" + std::to_string(tls_server.port()) + "/", "--ca", ca_file(),
                       "-d", "10", "--json-events"},
                      binary);
  ASSERT_TRUE(secure.read_line()) << secure.read_stderr();
  EXPECT_EQ(exe_name(secure.pid()), "loadlab-load-secure");
  const auto secure_libraries_mapped = mapped_libraries(secure.pid());
  EXPECT_TRUE(maps_any(secure_libraries_mapped, "libssl.")) << "the secure worker speaks TLS";
  for (const char* quic : {"libgnutls.", "libngtcp2", "libnghttp3."})
    EXPECT_FALSE(maps_any(secure_libraries_mapped, quic)) << "HTTPS alone maps no QUIC library: " << quic;
  kill(secure.pid(), SIGTERM);
  EXPECT_EQ(secure.wait_exit(), 0) << secure.read_stderr();
  EXPECT_GT(tls_server.handshakes(), 0);
  // --protocol h3: the same process becomes loadlab-load-h3, which maps QUIC's libraries and no
  // OpenSSL (against the built-in target over HTTP/3).
  SpawnedChild h3_target({"--h3", "--listen", "127.0.0.1:0", "--threads", "1"},
                         LOADLAB_BIN_DIR "/loadlab-target");
  const auto listening = h3_target.read_line();
  ASSERT_TRUE(listening) << h3_target.read_stderr();
  const std::string h3_port = listening->substr(listening->rfind(':') + 1);
  SpawnedChild h3(
      {"https://127.0.0.1:" + h3_port + "/", "--protocol", "h3", "--insecure", "-d", "10", "--json-events"},
      binary);
  ASSERT_TRUE(h3.read_line()) << h3.read_stderr();
  EXPECT_EQ(exe_name(h3.pid()), "loadlab-load-h3");
  const auto h3_libraries = mapped_libraries(h3.pid());
  EXPECT_TRUE(maps_any(h3_libraries, "libngtcp2")) << "HTTP/3 is QUIC";
  EXPECT_FALSE(maps_any(h3_libraries, "libssl.")) << "QUIC's TLS is GnuTLS's";
  kill(h3.pid(), SIGTERM);
  EXPECT_EQ(h3.wait_exit(), 0) << h3.read_stderr();
  // Without loadlab-load-secure beside it, https:// is an error that names the missing program.
  const auto dir = std::filesystem::path(unique_path("load_alone", "")).lexically_normal();
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(binary, dir / "loadlab-load");
  SpawnedChild orphan({"https://127.0.0.1:" + std::to_string(tls_server.port()) + "/", "-n", "1"},
                      (dir / "loadlab-load").string());
  EXPECT_EQ(orphan.wait_exit(), 1);
  const auto err = orphan.read_stderr();
  EXPECT_NE(err.find((dir / "loadlab-load-secure").string()), std::string::npos) << err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace loadlab::load
