// The target over HTTP/3, in-process on 127.0.0.1:0 (UDP at the TCP port), with Debian's ngtcp2
// example client gtlsclient (ngtcp2-client) as the independent peer: counts against the
// server's own, streams concurrent on one connection, knobs, HEAD, the stats endpoint,
// resumption and 0-RTT with the client's session and transport parameter files, and graceful
// shutdown. Each client runs in its own process group with a bounded count and a deadline,
// and is killed by group.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "quic_tls.hpp"
#include "running_server.hpp"
#include "test_cert.hpp"
#include "tls_context.hpp"

extern char** environ;

namespace loadlab::target {
namespace {

using testing::test_cert;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

const std::string kBody = "Have Fun ~ Tester !";
const std::string kClient = "/usr/bin/gtlsclient";

ServerOptions h3_options() {
  ServerOptions options;
  options.threads = 1;
  auto tls = make_tls_context(test_cert().credentials);
  EXPECT_TRUE(tls.context) << tls.error;
  options.tls = tls.context;
  std::string error;
  options.h3 = QuicTlsContext::make(test_cert().credentials, error);
  EXPECT_TRUE(options.h3) << error;
  return options;
}

struct ToolResult {
  int status = -1;  // exit status; -1: killed at the deadline
  std::string output;
};

// Runs `argv` (stdout and stderr together) in a process group of its own for at most
// `timeout`, then kills the group.
ToolResult run_tool(std::vector<std::string> argv, std::chrono::milliseconds timeout = 15000ms) {
  ToolResult result;
  int out[2];
  if (pipe(out) != 0) return result;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, out[1], 2);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(out[1]);
  if (rc != 0) {
    close(out[0]);
    return result;
  }
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    pollfd pfd{out[0], POLLIN, 0};
    if (poll(&pfd, 1, static_cast<int>(left)) <= 0) break;
    char chunk[16384];
    const auto n = read(out[0], chunk, sizeof chunk);
    if (n <= 0) break;
    result.output.append(chunk, static_cast<std::size_t>(n));
  }
  close(out[0]);
  int status = 0;
  for (auto until = std::max(deadline, Clock::now() + 1s); Clock::now() < until;) {
    if (waitpid(pid, &status, WNOHANG) == pid) {
      result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      kill(-pid, SIGKILL);  // anything it left in its group
      return result;
    }
    std::this_thread::sleep_for(5ms);
  }
  kill(-pid, SIGKILL);
  waitpid(pid, &status, 0);
  return result;  // status -1
}

// A scratch folder for the client's downloads and session files, removed with the test.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "loadlab-h3-XXXXXX").string();
    path_ = mkdtemp(pattern.data()) != nullptr ? pattern : std::string();
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) fs::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// gtlsclient for `streams` requests of `path` on one connection; `extra` before the host.
ToolResult h3_client(uint16_t port, int streams, const std::string& path = "/",
                     std::vector<std::string> extra = {}) {
  std::vector<std::string> argv = {
      kClient, "--no-quic-dump",       "--exit-on-all-streams-close", "--timeout=5s",
      "-n",    std::to_string(streams)};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back("127.0.0.1");
  argv.push_back(std::to_string(port));
  argv.push_back("https://127.0.0.1:" + std::to_string(port) + path);
  return run_tool(argv);
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// Waits (bounded) until the server has counted `requests` responses.
ServerStats stats_after(RunningServer& srv, std::uint64_t requests) {
  auto stats = srv.server().stats();
  for (auto deadline = Clock::now() + 2s; stats.requests < requests && Clock::now() < deadline;) {
    std::this_thread::sleep_for(5ms);
    stats = srv.server().stats();
  }
  return stats;
}

bool have_client() { return access(kClient.c_str(), X_OK) == 0; }

#define REQUIRE_CLIENT() \
  if (!have_client()) GTEST_SKIP() << "gtlsclient (ngtcp2-client) is not installed"

// --- serving and counting --------------------------------------------------------------------

TEST(TargetH3, UdpSharesTheTcpPort) {
  RunningServer srv(h3_options());
  EXPECT_NE(srv.port(), 0);
  // The UDP port is taken: binding it again fails.
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(srv.port());
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_NE(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  close(fd);
}

TEST(TargetH3, RequestsOnOneConnectionAreCountedAsHttp3) {
  REQUIRE_CLIENT();
  RunningServer srv(h3_options());
  const auto client = h3_client(srv.port(), 10);
  EXPECT_EQ(client.status, 0) << client.output;
  EXPECT_EQ(count(client.output, "[:status: 200]"), 10u) << client.output;
  EXPECT_EQ(count(client.output, "[content-length: " + std::to_string(kBody.size()) + "]"), 10u);
  EXPECT_EQ(count(client.output, "|Have Fun ~ Teste|"), 10u);
  EXPECT_NE(client.output.find("Negotiated ALPN is h3"), std::string::npos);
  const auto stats = stats_after(srv, 10);
  EXPECT_EQ(stats.requests, 10u);
  EXPECT_EQ(stats.h3_streams, 10u);
  EXPECT_EQ(stats.h3_connections, 1u);
  EXPECT_EQ(stats.connections, 1u);
  EXPECT_EQ(stats.h3_resumed, 0u);
  EXPECT_EQ(stats.h2_streams, 0u);
  EXPECT_EQ(stats.tls_handshakes, 0u);  // TLS over TCP only
}

TEST(TargetH3, StatsEndpointAnswersOverHttp3AndIsNotCounted) {
  REQUIRE_CLIENT();
  RunningServer srv(h3_options());
  ASSERT_EQ(h3_client(srv.port(), 3).status, 0);
  stats_after(srv, 3);
  TempDir dir;
  const auto client = h3_client(srv.port(), 1, "/__loadlab/stats", {"-q", "--download=" + dir.path()});
  EXPECT_EQ(client.status, 0) << client.output;
  const auto body = read_file(dir.file("stats"));
  EXPECT_NE(body.find("\"requests\": 3,"), std::string::npos) << body;
  EXPECT_NE(body.find("\"connections\": 2,"), std::string::npos) << body;
  EXPECT_NE(body.find("\"h3_connections\": 2, \"h3_streams\": 3, \"h3_resumed\": 0, \"h3_early_data\": 0}"),
            std::string::npos)
      << body;
  EXPECT_EQ(srv.server().stats().h3_streams, 3u);
}

}  // namespace
}  // namespace loadlab::target
