// The target over TLS, in-process on 127.0.0.1:0, with a client that verifies the server's
// self-signed certificate: versions, ALPN, handshake and resumption counts, timeouts, and every
// knob answering as it does over plain HTTP. Every client operation is bounded.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "loadlab/shared/self_signed_cert.hpp"
#include "running_server.hpp"
#include "test_cert.hpp"
#include "tls_context.hpp"
#include "tls_test_client.hpp"
#include "tls_transport.hpp"

namespace loadlab::target {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using testing::test_cert;
using testing::TlsClient;
using testing::TlsClientOptions;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

const std::string kBody = "Have Fun ~ Tester !";

ServerOptions tls_options(unsigned threads = 1) {
  ServerOptions options;
  options.threads = threads;
  auto context = make_tls_context(test_cert().credentials);
  EXPECT_TRUE(context.context) << context.error;
  options.secure = std::make_shared<TlsTransport>(context.context);
  return options;
}

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// CPU used so far by this process, all threads (the in-process server's among them), in ms.
double process_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

std::unique_ptr<TlsClient> connect(uint16_t port, const TlsClientOptions& options = {}) {
  auto client = std::make_unique<TlsClient>(port, test_cert().credentials.cert_pem, options);
  EXPECT_FALSE(client->handshake_error()) << client->handshake_error().message();
  return client;
}

// The stats endpoint read over one keep-alive connection opened first, so that reading does
// not add to the connections and handshakes it reads.
class StatsReader {
 public:
  explicit StatsReader(uint16_t port) : client_(connect(port)) {}

  ServerStats read() {
    auto body = client_->request({}, http::verb::get, "/__loadlab/stats").body();
    ServerStats stats;
    stats.requests = field(body, "requests");
    stats.connections = field(body, "connections");
    stats.tls_handshakes = field(body, "tls_handshakes");
    stats.tls_resumed = field(body, "tls_resumed");
    return stats;
  }

  // A response counts once its write completed on the server, which may be a moment after the
  // client has it: reads until `requests` is reached (bounded).
  ServerStats read_after(std::uint64_t requests) {
    auto stats = read();
    for (auto deadline = Clock::now() + 2s; stats.requests < requests && Clock::now() < deadline;) {
      std::this_thread::sleep_for(5ms);
      stats = read();
    }
    return stats;
  }

 private:
  static std::uint64_t field(const std::string& body, const std::string& name) {
    std::smatch m;
    if (!std::regex_search(body, m, std::regex("\"" + name + "\": (\\d+)"))) {
      ADD_FAILURE() << "no " << name << " in " << body;
      return 0;
    }
    return std::stoull(m[1]);
  }

  std::unique_ptr<TlsClient> client_;
};

// What happened between two reads of the stats endpoint equals `expected`, field by field.
void expect_delta(const ServerStats& before, const ServerStats& after, const ServerStats& expected) {
  EXPECT_EQ(after.requests - before.requests, expected.requests);
  EXPECT_EQ(after.connections - before.connections, expected.connections);
  EXPECT_EQ(after.tls_handshakes - before.tls_handshakes, expected.tls_handshakes);
  EXPECT_EQ(after.tls_resumed - before.tls_resumed, expected.tls_resumed);
}

class TargetTlsVersion : public ::testing::TestWithParam<int> {};

TEST_P(TargetTlsVersion, GetAnswers200WithTheBodyOverTheForcedVersion) {
  RunningServer srv(tls_options());
  auto client = connect(srv.port(), {GetParam()});
  EXPECT_EQ(client->version(), GetParam());
  EXPECT_EQ(client->alpn(), "http/1.1");
  auto res = client->request();
  EXPECT_EQ(res.result(), http::status::ok);
  EXPECT_EQ(res.body(), kBody);
  EXPECT_TRUE(res.keep_alive());
}

// The client keeps the session of its first connection and offers it in the second.
TEST_P(TargetTlsVersion, ResumedSessionIsCounted) {
  RunningServer srv(tls_options());
  StatsReader stats(srv.port());
  const auto before = stats.read();
  SSL_SESSION* session = nullptr;
  {
    auto first = connect(srv.port(), {GetParam()});
    EXPECT_EQ(first->request().body(), kBody);  // a TLS 1.3 ticket arrives after the handshake
    EXPECT_FALSE(first->resumed());
    session = first->session();
    EXPECT_FALSE(first->shutdown()) << first->error().message();
  }
  ASSERT_NE(session, nullptr);
  ASSERT_EQ(SSL_SESSION_is_resumable(session), 1);
  {
    auto second = connect(srv.port(), {GetParam(), session});
    EXPECT_TRUE(second->resumed());
    EXPECT_EQ(second->version(), GetParam());
    EXPECT_EQ(second->request().body(), kBody);
  }
  SSL_SESSION_free(session);
  expect_delta(before, stats.read_after(before.requests + 2), {2, 2, 2, 1});
}

INSTANTIATE_TEST_SUITE_P(Versions, TargetTlsVersion, ::testing::Values(TLS1_3_VERSION, TLS1_2_VERSION),
                         [](const auto& info) { return info.param == TLS1_3_VERSION ? "Tls13" : "Tls12"; });

TEST(TargetTls, KeepAliveIsOneConnectionAndOneHandshake) {
  RunningServer srv(tls_options());
  StatsReader stats(srv.port());
  const auto before = stats.read();
  EXPECT_EQ(before.connections, 1u);  // the reader's own
  EXPECT_EQ(before.tls_handshakes, 1u);
  auto client = connect(srv.port());
  for (int i = 0; i < 5; ++i) ASSERT_EQ(client->request().body(), kBody) << i;
  expect_delta(before, stats.read_after(before.requests + 5), {5, 1, 1, 0});
}

TEST(TargetTls, OneHandshakePerConnection) {
  RunningServer srv(tls_options(2));
  StatsReader stats(srv.port());
  const auto before = stats.read();
  for (int i = 0; i < 5; ++i) {
    auto client = connect(srv.port());
    auto res = client->request({}, http::verb::get, "/", /*keep_alive=*/false);
    ASSERT_EQ(res.body(), kBody) << i;
    EXPECT_FALSE(res.keep_alive());
    EXPECT_EQ(client->next_read_error(), net::error::eof) << "no close_notify after Connection: close";
  }
  expect_delta(before, stats.read_after(before.requests + 5), {5, 5, 5, 0});
}

TEST(TargetTls, ClientOfferingOnlyAnotherProtocolIsRefused) {
  RunningServer srv(tls_options());
  TlsClient spdy_only(srv.port(), test_cert().credentials.cert_pem, {0, nullptr, {"spdy/3.1"}});
  EXPECT_TRUE(spdy_only.handshake_error());
  TlsClient h2_only(srv.port(), test_cert().credentials.cert_pem, {0, nullptr, {"h2"}});
  ASSERT_FALSE(h2_only.handshake_error()) << h2_only.handshake_error().message();
  EXPECT_EQ(h2_only.alpn(), "h2");
  TlsClient no_alpn(srv.port(), test_cert().credentials.cert_pem, {0, nullptr, {}});
  ASSERT_FALSE(no_alpn.handshake_error()) << no_alpn.handshake_error().message();
  EXPECT_EQ(no_alpn.request().body(), kBody);
}

TEST(TargetTls, ClientTrustingAnotherCertificateFailsTheHandshake) {
  RunningServer srv(tls_options());
  std::string error;
  auto other = make_self_signed_cert(std::chrono::system_clock::now(), error);
  ASSERT_TRUE(other) << error;
  TlsClient client(srv.port(), other->credentials.cert_pem);
  EXPECT_TRUE(client.handshake_error());
  // The server is unharmed.
  EXPECT_EQ(connect(srv.port())->request().body(), kBody);
}

// A blocking TCP connection that speaks no TLS.
class RawConnection {
 public:
  explicit RawConnection(uint16_t port) {
    socket_.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
  }
  void send(const std::string& bytes) { net::write(socket_, net::buffer(bytes)); }

  // Reads until the server ends the connection (EOF or reset) or `limit` passes; returns what
  // the server sent, and in `closed` whether it ended the connection.
  std::string read_until_closed(std::chrono::milliseconds limit, bool& closed) {
    std::string received;
    closed = false;
    for (auto deadline = Clock::now() + limit; !closed && Clock::now() < deadline;) {
      pollfd pfd{socket_.native_handle(), POLLIN, 0};
      if (poll(&pfd, 1, 20) <= 0) continue;
      char chunk[512];
      const auto n = ::recv(socket_.native_handle(), chunk, sizeof chunk, 0);
      if (n <= 0) closed = true;
      if (n > 0) received.append(chunk, static_cast<std::size_t>(n));
    }
    return received;
  }

 private:
  net::io_context ioc_;
  tcp::socket socket_{ioc_};
};

TEST(TargetTls, ClientThatNeverHandshakesIsClosedAfterTheReadTimeout) {
  auto options = tls_options();
  options.read_timeout = 200ms;
  options.idle_timeout = 10s;
  RunningServer srv(options);
  RawConnection silent(srv.port());
  const auto start = Clock::now();
  bool closed = false;
  silent.read_until_closed(3000ms, closed);
  EXPECT_TRUE(closed);
  EXPECT_GE(ms_since(start), 180.0);
  EXPECT_LT(ms_since(start), 1000.0);
  StatsReader stats(srv.port());
  const auto counts = stats.read();
  EXPECT_EQ(counts.connections, 2u);  // the silent one and the reader
  EXPECT_EQ(counts.tls_handshakes, 1u);
}

TEST(TargetTls, PlaintextRequestIsRefusedAndTheServerGoesOn) {
  RunningServer srv(tls_options());
  RawConnection plain(srv.port());
  plain.send("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  bool closed = false;
  auto received = plain.read_until_closed(3000ms, closed);
  EXPECT_TRUE(closed);
  EXPECT_EQ(received.find("HTTP/"), std::string::npos) << "answered in plain text: " << received;
  EXPECT_EQ(connect(srv.port())->request().body(), kBody);
}

TEST(TargetTls, IdleConnectionIsClosedAfterTheIdleTimeout) {
  auto options = tls_options();
  options.idle_timeout = 100ms;
  RunningServer srv(options);
  auto client = connect(srv.port());
  EXPECT_EQ(client->request().body(), kBody);
  const auto start = Clock::now();
  EXPECT_TRUE(client->next_read_error());  // the watchdog closes the socket: no answer
  EXPECT_GE(ms_since(start), 80.0);
}

// --- knobs over TLS: the same answers as over plain HTTP ------------------------------------

TEST(TargetTlsKnobs, DelayFromOptionsAndFromTheHeader) {
  auto options = tls_options();
  options.delay.a_ms = 20;
  RunningServer srv(options);
  auto client = connect(srv.port());
  for (int i = 0; i < 3; ++i) {
    const auto start = Clock::now();
    EXPECT_EQ(client->request().body(), kBody);
    EXPECT_GE(ms_since(start), 20.0);
    EXPECT_LT(ms_since(start), 80.0);
  }
  const auto start = Clock::now();
  EXPECT_EQ(client->request({{"x-loadlab-delay-ms", "40"}}).result(), http::status::ok);
  EXPECT_GE(ms_since(start), 40.0);
}

TEST(TargetTlsKnobs, BodySizeSendsThatManyFillerBytes) {
  RunningServer srv(tls_options());
  auto client = connect(srv.port());
  for (auto size : {200000u, 1u, 0u}) {
    auto res = client->request({{"x-loadlab-body-size", std::to_string(size)}});
    EXPECT_EQ(res.result(), http::status::ok);
    EXPECT_EQ(res[http::field::content_length], std::to_string(size));
    ASSERT_EQ(res.body().size(), size);
    EXPECT_EQ(res.body().find_first_not_of('x'), std::string::npos);
  }
  auto head = client->request({{"x-loadlab-body-size", "1234"}}, http::verb::head);
  EXPECT_EQ(head[http::field::content_length], "1234");
  EXPECT_TRUE(head.body().empty());
  EXPECT_EQ(client->request().body(), kBody);  // framing intact
}

TEST(TargetTlsKnobs, LargeConfiguredBodyIsSentWhole) {
  auto options = tls_options();
  options.body = std::string(300000, 'b');
  RunningServer srv(options);
  auto client = connect(srv.port());
  for (int i = 0; i < 2; ++i) EXPECT_EQ(client->request().body(), options.body);
}

TEST(TargetTlsKnobs, StatusFromOptionsAndFromTheHeader) {
  auto options = tls_options();
  options.status = 503;
  RunningServer srv(options);
  auto client = connect(srv.port());
  EXPECT_EQ(client->request().result_int(), 503u);
  auto not_found = client->request({{"x-loadlab-status", "404"}});
  EXPECT_EQ(not_found.result_int(), 404u);
  EXPECT_EQ(not_found.body(), kBody);
  auto no_content = client->request({{"x-loadlab-status", "204"}});
  EXPECT_EQ(no_content.result_int(), 204u);
  EXPECT_EQ(no_content.count(http::field::content_length), 0u);
  EXPECT_EQ(client->request().result_int(), 503u);
}

TEST(TargetTlsKnobs, WorkHeaderBurnsCpuBeforeTheAnswer) {
  RunningServer srv(tls_options());
  auto client = connect(srv.port());
  const auto start = Clock::now();
  const double cpu0 = process_cpu_ms();
  EXPECT_EQ(client->request({{"x-loadlab-work-us", "20000"}}).body(), kBody);
  EXPECT_GE(ms_since(start), 20.0);
  // The server runs in this process: its 20 ms of work show in the process's CPU clock.
  EXPECT_GE(process_cpu_ms() - cpu0, 0.9 * 20.0);
}

TEST(TargetTlsKnobs, BadHeaderValueGets400AndTheConnectionGoesOn) {
  RunningServer srv(tls_options());
  auto client = connect(srv.port());
  auto res = client->request({{"x-loadlab-status", "700"}});
  EXPECT_EQ(res.result(), http::status::bad_request);
  EXPECT_NE(res.body().find("x-loadlab-status: expected"), std::string::npos) << res.body();
  EXPECT_EQ(client->request().result(), http::status::ok);
}

TEST(TargetTlsKnobs, StallHoldsResponses) {
  auto options = tls_options();
  options.stall_after = 100ms;
  options.stall_duration = 300ms;
  RunningServer srv(options);
  auto client = connect(srv.port());
  const auto t0 = Clock::now();
  EXPECT_EQ(client->request().body(), kBody);  // starts the stall clock
  std::this_thread::sleep_until(t0 + 150ms);
  EXPECT_EQ(client->request().body(), kBody);  // held until t0 + 400 ms
  EXPECT_GE(ms_since(t0), 390.0);
  EXPECT_LT(ms_since(t0), 600.0);
}

TEST(TargetTlsKnobs, PipelinedRequestsAreAnsweredInOrder) {
  RunningServer srv(tls_options());
  auto client = connect(srv.port());
  ASSERT_FALSE(
      client->send_raw("GET /a HTTP/1.1\r\nHost: x\r\n\r\nHEAD /b HTTP/1.1\r\nHost: x\r\n\r\n"
                       "GET /c HTTP/1.1\r\nHost: x\r\nx-loadlab-body-size: 3\r\n\r\n"));
  TlsClient::Response a, b, c;
  ASSERT_FALSE(client->read(a));
  ASSERT_FALSE(client->read(b, true));
  ASSERT_FALSE(client->read(c));
  EXPECT_EQ(a.body(), kBody);
  EXPECT_TRUE(b.body().empty());
  EXPECT_EQ(c.body(), "xxx");
}

TEST(TargetTlsKnobs, MalformedAndOversizedRequestsGetTheirErrorAndClose) {
  RunningServer srv(tls_options());
  struct Case {
    std::string request;
    http::status status;
  };
  const std::string smuggled = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n";
  const std::vector<Case> cases = {
      {"this is not http\r\n\r\n", http::status::bad_request},
      {"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(16 * 1024, 'a') + "\r\n\r\n",
       http::status::request_header_fields_too_large},
      {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n" + smuggled, http::status::bad_request},
      {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n" + smuggled,
       http::status::bad_request},
  };
  for (const auto& c : cases) {
    auto client = connect(srv.port());
    ASSERT_FALSE(client->send_raw(c.request));
    TlsClient::Response res;
    ASSERT_FALSE(client->read(res)) << c.request.substr(0, 40);
    EXPECT_EQ(res.result(), c.status);
    EXPECT_FALSE(res.keep_alive());
    EXPECT_EQ(client->next_read_error(), net::error::eof) << "a second response, not close_notify";
  }
  StatsReader stats(srv.port());
  EXPECT_EQ(stats.read_after(cases.size()).requests, cases.size());  // none smuggled
}

}  // namespace
}  // namespace loadlab::target
