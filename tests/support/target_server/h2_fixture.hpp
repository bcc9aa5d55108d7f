#pragma once
// The HTTP/2 target's tests (h2_test.cpp, h2load_truth_test.cpp): a one-thread server's options
// over h2c or TLS, its URL, an installed tool (h2load, nghttp) run by pid with a deadline, and the
// server's counts once they reach a number of responses.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "running_server.hpp"
#include "server.hpp"
#include "test_cert.hpp"
#include "tls_context.hpp"
#include "tls_transport.hpp"

extern char** environ;

namespace loadlab::target::testing {

// The options of a one-thread server: plain (h2c by prior knowledge, or HTTP/1.1) or, with `tls`,
// TLS whose ALPN chooses h2 or HTTP/1.1.
inline ServerOptions options_for(bool tls) {
  ServerOptions options;
  options.threads = 1;
  if (tls) {
    auto context = make_tls_context(test_cert().credentials);
    EXPECT_TRUE(context.context) << context.error;
    options.secure = std::make_shared<TlsTransport>(context.context);
  }
  return options;
}

// The URL of `path` on the server at 127.0.0.1:`port`.
inline std::string url(bool tls, uint16_t port, const std::string& path = "/") {
  return std::string(tls ? "https" : "http") + "://127.0.0.1:" + std::to_string(port) + path;
}

struct ToolResult {
  int status = -1;  // exit status; -1: killed at the deadline
  std::string output;
};

// Runs an installed tool (stdout and stderr together) for at most `timeout`, then kills it by pid.
inline std::optional<ToolResult> run_tool(
    std::vector<std::string> argv, std::chrono::milliseconds timeout = std::chrono::milliseconds(20000)) {
  using namespace std::chrono_literals;
  using Clock = std::chrono::steady_clock;
  if (::access(argv[0].c_str(), X_OK) != 0) return std::nullopt;
  int out[2];
  if (::pipe(out) != 0) return std::nullopt;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, out[1], 2);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  ToolResult result;
  if (rc != 0) {
    ::close(out[0]);
    return result;
  }
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    pollfd pfd{out[0], POLLIN, 0};
    if (::poll(&pfd, 1, static_cast<int>(left)) <= 0) break;
    char chunk[4096];
    const auto n = ::read(out[0], chunk, sizeof chunk);
    if (n <= 0) break;
    result.output.append(chunk, static_cast<std::size_t>(n));
  }
  ::close(out[0]);
  int status = 0;
  if (::waitpid(pid, &status, WNOHANG) != pid) {
    for (auto until = Clock::now() + 1s; Clock::now() < until;) {
      if (::waitpid(pid, &status, WNOHANG) == pid) return result.status = WEXITSTATUS(status), result;
      std::this_thread::sleep_for(10ms);
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return result;  // status -1
  }
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// Waits (bounded) until the server has counted `requests` responses: a response counts once
// its write completed, a moment after the client may have it.
inline ServerStats stats_after(RunningServer& srv, std::uint64_t requests) {
  using namespace std::chrono_literals;
  using Clock = std::chrono::steady_clock;
  auto stats = srv.server().stats();
  for (auto deadline = Clock::now() + 2s; stats.requests < requests && Clock::now() < deadline;) {
    std::this_thread::sleep_for(5ms);
    stats = srv.server().stats();
  }
  return stats;
}

}  // namespace loadlab::target::testing
