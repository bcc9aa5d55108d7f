#pragma once
// Helpers for integration tests: temporary folders, running the built binaries.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "http_get.hpp"
#include "loadlab/agent/child_process.hpp"
#include "loadlab/proto/json.hpp"
#include "loadlab/shared/endpoint.hpp"
#include "loadlab/shared/json_input.hpp"
#include "loadlab/v1/result.pb.h"

namespace loadlab::testing {

inline std::string bin(const std::string& name) { return std::string(LOADLAB_BIN_DIR) + "/" + name; }

// A fresh folder under /tmp, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/loadlab-test-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name, const std::string& content) const {
    auto p = path_ / name;
    std::ofstream(p) << content;
    return p.string();
  }
  // A file only this user can read (mode 0600), as the agent wants a token or key.
  std::string secret(const std::string& name, const std::string& content) const {
    auto p = file(name, content);
    std::filesystem::permissions(p, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    return p;
  }

 private:
  std::filesystem::path path_;
};

struct RunOutput {
  int code = -1;
  std::string stdout_text;
  std::string output_tail;  // last lines of stdout + stderr
};

// A program of the test's own that needs the test's privileges (an agent, the controller,
// setpriv, ip netns exec), spawned as a tool and not as a job (SpawnOptions::keep_privileges).
inline std::unique_ptr<agent::ChildProcess> spawn_tool(const std::vector<std::string>& argv,
                                                       agent::SpawnOptions options = {}) {
  options.keep_privileges = true;
  return agent::ChildProcess::spawn(argv, options);
}

// Runs a command to its end (killed after `timeout`), collecting its stdout.
inline RunOutput run_command(const std::vector<std::string>& argv,
                             std::chrono::seconds timeout = std::chrono::seconds(120)) {
  auto child = spawn_tool(argv);
  RunOutput out;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string line;
  for (;;) {
    auto st = child->next_line(line, std::chrono::milliseconds(100));
    if (st == agent::ChildProcess::LineStatus::kLine) out.stdout_text += line + "\n";
    if (st == agent::ChildProcess::LineStatus::kEof || std::chrono::steady_clock::now() > deadline) break;
  }
  auto status = child->wait_exit(std::chrono::seconds(5));
  if (!status) status = child->terminate();
  out.code = status->code;
  out.output_tail = child->output_tail(40);
  return out;
}

// result.json's cells, read as the proto messages they are: a cell that does not parse
// strictly as a loadlab.v1.CellResult fails the test.
inline std::vector<v1::CellResult> result_cells(const std::filesystem::path& result_json) {
  auto j = read_json_file(result_json.string());
  std::vector<v1::CellResult> cells;
  for (auto& c : j.at("cells")) {
    cells.emplace_back();
    EXPECT_NO_THROW(proto::from_json(c.dump(), &cells.back())) << c.dump().substr(0, 400);
  }
  return cells;
}

// The pids of `root` and its descendants now.
inline std::vector<pid_t> tree_pids(pid_t root) {
  std::vector<pid_t> out{root};
  for (size_t i = 0; i < out.size(); ++i) {
    std::ifstream f("/proc/" + std::to_string(out[i]) + "/task/" + std::to_string(out[i]) + "/children");
    for (pid_t p; f >> p;) out.push_back(p);
  }
  return out;
}

// True while `pid` runs; a zombie has finished (whoever adopted it may reap it late).
inline bool process_running(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return false;
  auto rparen = line.rfind(')');
  return rparen != std::string::npos && rparen + 2 < line.size() && line[rparen + 2] != 'Z';
}

// A loadlab-agent process in its own process group, with `extra` flags; its destructor
// stops the group and reaps it. `address` is what it says it listens on.
struct AgentProcess {
  std::unique_ptr<agent::ChildProcess> proc;
  std::string address;
  // `prefix` runs the agent through another program (e.g. ip netns exec NS).
  explicit AgentProcess(const std::string& name, const std::string& listen = "127.0.0.1:0",
                        const std::vector<std::string>& extra = {}, std::vector<std::string> prefix = {}) {
    std::vector<std::string> argv{bin("loadlab-agent"), "--listen", listen, "--name", name};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.insert(argv.begin(), prefix.begin(), prefix.end());
    proc = spawn_tool(argv);
    std::string line;
    EXPECT_EQ(proc->next_line(line, std::chrono::seconds(10)), agent::ChildProcess::LineStatus::kLine)
        << proc->output_tail();
    address = line.size() > 13 ? line.substr(13) : "";
  }
};

// loadlab-target on 127.0.0.1 with a fixed delay: a delay-bound server, whose rate at N
// connections is N / delay whatever the machine's speed.
class DelayTarget {
 public:
  explicit DelayTarget(int delay_ms) {
    proc_ = agent::ChildProcess::spawn({bin("loadlab-target"), "--listen", "127.0.0.1:0", "--threads", "1",
                                        "--delay-ms", std::to_string(delay_ms)});
    std::string line;
    if (proc_->next_line(line, std::chrono::seconds(10)) == agent::ChildProcess::LineStatus::kLine &&
        line.rfind("listening on ", 0) == 0)
      endpoint_ = line.substr(13);
  }
  const std::string& endpoint() const { return endpoint_; }
  // The requests the server answered so far (GET /__loadlab/stats, not counted itself).
  uint64_t served() const { return target_served(endpoint_).value_or(0); }

 private:
  std::unique_ptr<agent::ChildProcess> proc_;  // terminated (and reaped) by its destructor
  std::string endpoint_;
};

// The direct children of this process, living or zombie.
inline std::vector<pid_t> child_pids() {
  std::vector<pid_t> pids;
  for (auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream f(task.path() / "children");
    for (pid_t p; f >> p;) pids.push_back(p);
  }
  return pids;
}

}  // namespace loadlab::testing
