// The real wrk, hey and h2load (Debian's packages) against a real loadlab-target on
// 127.0.0.1, each for a small fixed count or one second: the parsed figures checked against
// the server's own count. A tool that is not installed is skipped, with the reason.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "fixture.hpp"
#include "loadlab/clients/command_line.hpp"
#include "loadlab/clients/output.hpp"
#include "target_process.hpp"

namespace loadlab::clients {
namespace {

using load::testing::TargetProcess;

struct Run {
  std::string out, err;
  int exit_code = -1;
};

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/loadlab-clients-XXXXXX";
    path_ = mkdtemp(tmpl) ? tmpl : "";
  }
  ~TempDir() {
    if (!path_.empty()) std::system(("rm -rf '" + path_ + "'").c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Runs argv with stdout and stderr in files of `dir`; killed (by its pid) after 60 s.
Run run(const std::vector<std::string>& argv_s, const std::string& dir) {
  Run r;
  std::string out = dir + "/stdout", err = dir + "/stderr";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  std::vector<std::string> copy = argv_s;
  std::vector<char*> argv;
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return r;
  int status = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = testing::slurp(out);
  r.err = testing::slurp(err);
  return r;
}

std::string program(Tool t) { return "/usr/bin/" + std::string(tool_name(t)); }

v1::LoadSpec spec(uint16_t port) {
  v1::LoadSpec s;
  s.set_endpoint("127.0.0.1:" + std::to_string(port));
  s.set_threads(1);
  s.set_connections(2);
  s.set_keep_alive(true);
  return s;
}

// Writes the aux files, runs the tool, parses its output.
ParsedRun run_tool(Tool t, const v1::LoadSpec& s) {
  TempDir dir;
  for (const auto& f : aux_files(t, s))
    std::ofstream(dir.path() + "/" + f.name, std::ios::binary) << f.content;
  auto r = run(command_line(t, program(t), s, dir.path()), dir.path());
  return parse_output(t, r.out, r.err, r.exit_code);
}

class RealTool : public ::testing::TestWithParam<Tool> {
 protected:
  void SetUp() override {
    if (access(program(GetParam()).c_str(), X_OK) != 0)
      GTEST_SKIP() << program(GetParam()) << " is not installed (apt-get install wrk hey nghttp2-client)";
  }
  // Counted tools stop after exactly 200 requests; wrk only after a duration.
  v1::LoadSpec counted_spec(uint16_t port) {
    auto s = spec(port);
    if (GetParam() == Tool::kWrk)
      s.set_duration_s(1);
    else
      s.set_total_requests(200);
    return s;
  }
};

TEST_P(RealTool, FiguresMatchTheServersCount) {
  TargetProcess target({"--threads", "1", "--delay-ms", "1"});
  ASSERT_NE(target.port(), 0) << "loadlab-target did not start";
  ParsedRun p = run_tool(GetParam(), counted_spec(target.port()));
  auto served = target.stop();
  ASSERT_TRUE(served.has_value());
  const auto& r = p.result;
  EXPECT_EQ(r.errors(), 0u);
  EXPECT_GT(r.requests(), 0u);
  if (GetParam() == Tool::kWrk) {
    // wrk counts the responses complete when its second ends; at most one per connection is
    // still in flight then, answered by the server but not counted.
    EXPECT_GE(static_cast<uint64_t>(*served), r.responses());
    EXPECT_LE(static_cast<uint64_t>(*served), r.responses() + 2);
    EXPECT_GE(r.latency().p50_us(), 1000);
  } else {
    EXPECT_EQ(r.requests(), 200u);
    EXPECT_EQ(static_cast<uint64_t>(*served), r.requests());
  }
  if (GetParam() == Tool::kHey) {
    EXPECT_EQ(r.status().at(200), 200u);
  }
  // The server waits 1 ms before each answer: no latency can be below it.
  EXPECT_GE(r.latency().min_us() > 0 ? r.latency().min_us() : r.latency().mean_us(), 1000);
  EXPECT_GE(r.latency().mean_us(), 1000);
  EXPECT_GE(r.latency().max_us(), r.latency().mean_us());
}

TEST_P(RealTool, EveryAnswerA503IsAnError) {
  TargetProcess target({"--threads", "1", "--delay-ms", "1", "--status", "503"});
  ASSERT_NE(target.port(), 0);
  ParsedRun p = run_tool(GetParam(), counted_spec(target.port()));
  target.stop();
  EXPECT_GT(p.result.requests(), 0u);
  EXPECT_EQ(p.result.errors(), p.result.requests());
  EXPECT_EQ(p.result.error_kinds().at("status"), p.result.requests());
}

TEST_P(RealTool, MethodBodyAndConnectionClose) {
  TargetProcess target({"--threads", "1", "--delay-ms", "1"});
  ASSERT_NE(target.port(), 0);
  auto s = counted_spec(target.port());
  s.set_method("POST");
  s.set_body("{\"x\": \"a\\\"b\"}");
  s.set_keep_alive(false);
  ParsedRun p = run_tool(GetParam(), s);
  auto served = target.stop();
  ASSERT_TRUE(served.has_value());
  EXPECT_EQ(p.result.errors(), 0u);
  EXPECT_GT(p.result.requests(), 0u);
  if (GetParam() != Tool::kWrk) {
    EXPECT_EQ(static_cast<uint64_t>(*served), p.result.requests());
  } else {
    // A second of wrk: it ran, and its count is the server's but for the responses still in
    // flight when its second ended, at most one per connection.
    EXPECT_GT(p.result.responses(), 0u);
    EXPECT_GT(p.result.qps(), 0.0);
    EXPECT_GE(static_cast<uint64_t>(*served), p.result.responses());
    EXPECT_LE(static_cast<uint64_t>(*served), p.result.responses() + s.connections());
  }
}

TEST_P(RealTool, RefusedPortIsAFailureInTheToolsWords) {
  uint16_t port = 0;
  {
    TargetProcess target({"--threads", "1"});
    port = target.port();
    target.stop();
  }
  ASSERT_NE(port, 0);
  auto s = counted_spec(port);
  try {
    run_tool(GetParam(), s);
    ADD_FAILURE() << "a refused port parsed as a result";
  } catch (const ToolFailed& e) {
    // wrk and hey quote the system's "Connection refused"; h2load counts the requests errored.
    std::string want = GetParam() == Tool::kH2load ? "errored" : "efused";
    EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
  }
}

// Every protocol the tool speaks, against the built-in target serving it (--tls for https
// and h2): the tool's count is the server's, without errors.
TEST_P(RealTool, EveryProtocolItSpeaksReachesTheTarget) {
  for (v1::Protocol protocol : protocols_of(GetParam())) {
    const bool tls = protocol == v1::PROTOCOL_HTTPS || protocol == v1::PROTOCOL_H2;
    SCOPED_TRACE(protocol);
    std::vector<std::string> flags = {"--threads", "1", "--delay-ms", "1"};
    if (tls) flags.push_back("--tls");
    TargetProcess target(flags);
    ASSERT_NE(target.port(), 0);
    auto s = counted_spec(target.port());
    s.set_protocol(protocol);
    if (tls) s.set_tls_version("1.3");
    if (protocol == v1::PROTOCOL_H2 || protocol == v1::PROTOCOL_H2C) s.set_streams(4);
    ParsedRun p = run_tool(GetParam(), s);
    auto served = target.stop();
    ASSERT_TRUE(served.has_value());
    EXPECT_EQ(p.result.errors(), 0u);
    if (GetParam() == Tool::kWrk) {
      EXPECT_GE(static_cast<uint64_t>(*served), p.result.responses());
      EXPECT_GT(p.result.responses(), 0u);
    } else {
      EXPECT_EQ(p.result.requests(), 200u);
      EXPECT_EQ(static_cast<uint64_t>(*served), 200u);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Clients, RealTool, ::testing::Values(Tool::kWrk, Tool::kHey, Tool::kH2load),
                         [](const auto& info) { return std::string(tool_name(info.param)); });

}  // namespace
}  // namespace loadlab::clients
