// HTTPS end to end, against ground truth the target keeps: its stats endpoint counts the TLS
// handshakes it completed (and of them, resumed sessions). Without keep-alive every request
// pays a handshake; with it, every connection pays one.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "loadlab/shared/json_input.hpp"
#include "test_support.hpp"
#include "tls_test_client.hpp"

namespace loadlab {
namespace {

using testing::bin;
using testing::result_cells;
using testing::run_command;
using testing::TempDir;

// loadlab-target over TLS with a certificate it makes, written out so that the test's own
// client can verify it; `stats()` reads the counters over one connection opened first, so
// that reading adds no handshake between two readings.
class TlsTarget {
 public:
  explicit TlsTarget(const TempDir& dir, std::vector<std::string> extra = {}) {
    const std::string cert = (dir.path() / "target.pem").string();
    std::vector<std::string> argv = {
        bin("loadlab-target"), "--listen", "127.0.0.1:0", "--threads", "1", "--tls", "--tls-cert-out", cert};
    argv.insert(argv.end(), extra.begin(), extra.end());
    proc_ = agent::ChildProcess::spawn(argv);
    std::string line;
    EXPECT_EQ(proc_->next_line(line, std::chrono::seconds(10)), agent::ChildProcess::LineStatus::kLine);
    port_ = static_cast<uint16_t>(std::stoi(line.substr(line.rfind(':') + 1)));
    std::ifstream in(cert);
    std::stringstream pem;
    pem << in.rdbuf();
    client_ = std::make_unique<target::testing::TlsClient>(port_, pem.str());
  }
  uint16_t port() const { return port_; }
  nlohmann::json stats() {
    auto body = client_->request({}, boost::beast::http::verb::get, "/__loadlab/stats").body();
    return nlohmann::json::parse(body, nullptr, false);
  }

 private:
  std::unique_ptr<agent::ChildProcess> proc_;  // stopped (its group) by its destructor
  uint16_t port_ = 0;
  std::unique_ptr<target::testing::TlsClient> client_;
};

// loadlab-load's JSON result of `flags` against the target.
nlohmann::json load(const TlsTarget& target, std::vector<std::string> flags) {
  std::vector<std::string> argv = {bin("loadlab-load"),
                                   "https://127.0.0.1:" + std::to_string(target.port()) + "/", "--insecure",
                                   "--json"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  auto r = run_command(argv, std::chrono::seconds(60));
  EXPECT_EQ(r.code, 0) << r.output_tail;
  return nlohmann::json::parse(r.stdout_text, nullptr, false);
}

// The change of each counter of the target's stats while `run` ran.
nlohmann::json counted(TlsTarget& target, const std::function<void()>& run,
                       std::vector<const char*> keys = {"requests", "connections", "tls_handshakes",
                                                        "tls_resumed"}) {
  auto before = target.stats();
  run();
  auto after = target.stats();
  nlohmann::json delta;
  for (const char* k : keys) delta[k] = after.value(k, -1) - before.value(k, -1);
  return delta;
}

class Https : public ::testing::TestWithParam<std::string> {};

TEST_P(Https, OneHandshakePerRequestWithoutKeepAliveAndOnePerConnectionWith) {
  TempDir dir;
  TlsTarget target(dir);
  const std::string version = GetParam();
  nlohmann::json result;
  auto delta = counted(target, [&] {
    result = load(target, {"--tls-version", version, "--no-keepalive", "-t", "2", "-n", "40"});
  });
  EXPECT_EQ(delta, (nlohmann::json{
                       {"requests", 80}, {"connections", 80}, {"tls_handshakes", 80}, {"tls_resumed", 0}}));
  EXPECT_EQ(result["requests"], "80");
  EXPECT_EQ(result["tls_handshakes"], "80");  // the client's count agrees
  EXPECT_GT(result["tls_handshake"]["p50_us"].get<double>(), 0);
  // The first byte comes from the write of the request, its latency (closed loop) from that write
  // to the last byte: a request's first byte is never later, so neither is the median.
  ASSERT_TRUE(result.contains("first_byte") && result.contains("latency")) << result.dump();
  EXPECT_GT(result["first_byte"]["p50_us"].get<double>(), 0);
  EXPECT_LE(result["first_byte"]["p50_us"].get<double>(), result["latency"]["p50_us"].get<double>());

  delta = counted(target, [&] {
    result = load(target, {"--tls-version", version, "-t", "2", "-c", "4", "-n", "50"});
  });
  EXPECT_EQ(delta, (nlohmann::json{
                       {"requests", 100}, {"connections", 4}, {"tls_handshakes", 4}, {"tls_resumed", 0}}));
  EXPECT_EQ(result["tls_handshakes"], "4");

  // Resumption: every reconnection of a connection offers the session it had.
  delta = counted(target, [&] {
    result = load(target, {"--tls-version", version, "--no-keepalive", "--tls-resume", "-n", "20"});
  });
  EXPECT_EQ(delta, (nlohmann::json{
                       {"requests", 20}, {"connections", 20}, {"tls_handshakes", 20}, {"tls_resumed", 19}}));
  EXPECT_EQ(result["tls_resumed"], "19");
}

INSTANTIATE_TEST_SUITE_P(Versions, Https, ::testing::Values("1.2", "1.3"));

// HTTP/3 between the two built-in programs, against the target's own counts: QUIC connections
// (one handshake each), streams, resumed handshakes and accepted 0-RTT data.
TEST(Http3, TheTargetCountsWhatTheClientSays) {
  TempDir dir;
  TlsTarget target(dir, {"--h3"});
  const std::vector<const char*> keys = {"requests", "h3_connections", "h3_streams", "h3_resumed",
                                         "h3_early_data"};
  nlohmann::json result;
  auto delta = counted(
      target,
      [&] {
        result = load(target, {"--protocol", "h3", "-t", "2", "-c", "4", "--streams", "5", "-n", "50"});
      },
      keys);
  EXPECT_EQ(delta, (nlohmann::json{{"requests", 100},
                                   {"h3_connections", 4},
                                   {"h3_streams", 100},
                                   {"h3_resumed", 0},
                                   {"h3_early_data", 0}}));
  EXPECT_EQ(result["requests"], "100");
  EXPECT_EQ(result["connects"], "4");
  EXPECT_EQ(result["tls_handshakes"], "4");

  // Without keep-alive, with resumption and 0-RTT: every reconnection resumes and sends its
  // request in the first flight, which the target takes.
  delta = counted(
      target,
      [&] {
        result =
            load(target, {"--protocol", "h3", "--no-keepalive", "--tls-resume", "--zero-rtt", "-n", "20"});
      },
      keys);
  EXPECT_EQ(delta, (nlohmann::json{{"requests", 20},
                                   {"h3_connections", 20},
                                   {"h3_streams", 20},
                                   {"h3_resumed", 19},
                                   {"h3_early_data", 19}}));
  EXPECT_EQ(result["tls_handshakes"], "20");
  EXPECT_EQ(result["tls_resumed"], "19");
  EXPECT_EQ(result["tls_early_data"], "19");
}

// The protocol as a matrix axis, through the controller and an agent: the https cells run
// over TLS (every request a handshake, without keep-alive), the http1 cells do not.
TEST(ProtocolAxis, HttpsCellsRunOverTlsAndRecordTheirHandshakes) {
  TempDir dir;
  auto s = dir.file(
      "s.json", R"({"name": "tls", "targets": [{"name": "beast", "builtin": "hello", "server_threads": 1}],
      "matrix": {"protocol": ["http1", "https"], "tls_version": ["1.2", "1.3"]},
      "load": {"total_requests": 60, "threads": 2, "keep_alive": false}})");
  auto out = dir.path() / "o";
  auto r = run_command({bin("loadlab"), "--log-level", "warn", "run", s, "--out", out.string()});
  ASSERT_EQ(r.code, 0) << r.output_tail;
  auto cells = result_cells(out / "result.json");
  ASSERT_EQ(cells.size(), 4u);
  for (auto& c : cells) {
    SCOPED_TRACE(c.cell().key());
    EXPECT_EQ(c.median().requests(), 60u);
    EXPECT_EQ(c.median().errors(), 0u);
    if (c.cell().protocol() == "https") {
      EXPECT_EQ(c.median().tls_handshakes(), 60u);
      EXPECT_EQ(c.cell().tls_version(), c.cell().key().substr(c.cell().key().size() - 3));
    } else {
      EXPECT_EQ(c.cell().protocol(), "http1");
      EXPECT_EQ(c.median().tls_handshakes(), 0u);
      EXPECT_EQ(c.cell().tls_version(), "");
    }
  }
  EXPECT_EQ(cells[3].cell().key(), "beast/https/tls1.3");
  // A TLS version QUIC cannot use: refused before anything runs, naming the value.
  auto h3 = dir.file("h3.json", R"({"name": "h3", "targets": [{"name": "beast", "builtin": "hello"}],
      "matrix": {"protocol": ["https", "h3"], "tls_version": ["1.2", "1.3"]}, "load": {"total_requests": 10}})");
  r = run_command({bin("loadlab"), "run", h3, "--out", (dir.path() / "h3").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(
      r.output_tail.find("/matrix/tls_version/0: must be 1.3 over h3 (/matrix/protocol/1): QUIC runs over "
                         "TLS 1.3 only"),
      std::string::npos)
      << r.output_tail;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "h3"));
}

// HTTP/2 and HTTP/3 as matrix axes, through the controller and an agent: against a target that answers
// each request after a known delay, a cell's rate is connections × streams / delay, which
// only holds if the streams of a connection are really in flight together.
TEST(ProtocolAxis, Http2CellsKeepTheirStreamsInFlightTogether) {
  TempDir dir;
  auto s = dir.file("s.json", R"({"name": "h2",
      "targets": [{"name": "beast", "builtin": "hello", "server_threads": 1, "delay_ms": 20}],
      "matrix": {"protocol": ["h2", "h2c", "h3"], "streams": [1, 8]},
      "load": {"total_requests": 160, "threads": 1, "connections": 2}})");
  auto out = dir.path() / "o";
  auto r = run_command({bin("loadlab"), "--log-level", "warn", "run", s, "--out", out.string()});
  ASSERT_EQ(r.code, 0) << r.output_tail;
  auto cells = result_cells(out / "result.json");
  ASSERT_EQ(cells.size(), 6u);
  EXPECT_EQ(cells[1].cell().key(), "beast/h2/s8");
  EXPECT_EQ(cells[5].cell().key(), "beast/h3/s8");
  for (auto& c : cells) {
    SCOPED_TRACE(c.cell().key());
    const auto& m = c.median();
    EXPECT_EQ(m.requests(), 160u);
    EXPECT_EQ(m.errors(), 0u);
    const double truth = 2.0 * c.cell().streams() * 1000 / 20;  // 100 or 800 requests/s
    EXPECT_GT(m.qps(), 0.5 * truth);  // half of it: streams that do not overlap give far less
    EXPECT_LT(m.qps(), 1.05 * truth);
    EXPECT_GE(m.latency().p50_us(), 20000u);
    // Two connections, so two TLS handshakes over TLS and none in cleartext; over QUIC the
    // handshake is the connect.
    const bool tls = c.cell().protocol() != "h2c";
    EXPECT_EQ(m.tls_handshakes(), tls ? 2u : 0u);
    EXPECT_EQ(c.cell().tls_version(), tls ? "1.3" : "");
    if (c.cell().protocol() == "h3") EXPECT_EQ(m.connects(), 2u);
  }
}

// load.zero_rtt through the controller: an h3 cell without keep-alive resumes every
// reconnection and sends its request as 0-RTT data; the result says how many the target took.
TEST(ProtocolAxis, Http3CellsSendTheirRequestsAsZeroRttData) {
  TempDir dir;
  auto s = dir.file("s.json",
                    R"({"name": "h3", "targets": [{"name": "beast", "builtin": "hello", "server_threads": 1}],
      "matrix": {"protocol": ["h3"]},
      "load": {"total_requests": 20, "threads": 1, "keep_alive": false, "tls_resume": true, "zero_rtt": true}})");
  auto out = dir.path() / "o";
  auto r = run_command({bin("loadlab"), "--log-level", "warn", "run", s, "--out", out.string()});
  ASSERT_EQ(r.code, 0) << r.output_tail;
  auto cells = result_cells(out / "result.json");
  ASSERT_EQ(cells.size(), 1u);
  const auto& m = cells[0].median();
  EXPECT_EQ(m.requests(), 20u);
  EXPECT_EQ(m.errors(), 0u);
  EXPECT_EQ(m.tls_handshakes(), 20u);
  EXPECT_EQ(m.tls_resumed(), 19u);
  EXPECT_EQ(m.tls_early_data(), 19u);
  // 0-RTT without resumption is no 0-RTT: refused naming the key.
  auto bad = dir.file("bad.json", R"({"name": "h3", "targets": [{"name": "beast", "builtin": "hello"}],
      "matrix": {"protocol": ["h3"]}, "load": {"total_requests": 20, "zero_rtt": true}})");
  r = run_command({bin("loadlab"), "run", bad, "--out", (dir.path() / "bad").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output_tail.find("/load/zero_rtt: needs tls_resume: true"), std::string::npos) << r.output_tail;
}

}  // namespace
}  // namespace loadlab
