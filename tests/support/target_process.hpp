#pragma once
// The real loadlab-target binary as a child process for truth tests: started on
// 127.0.0.1:0, its port read from the first stdout line, stopped by pid (SIGTERM, then
// SIGKILL if it lingers) and its own request count read from its last line.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace loadlab::load::testing {

class TargetProcess {
 public:
  // `args`: extra flags, e.g. {"--threads", "1", "--delay-ms", "10"}.
  explicit TargetProcess(std::vector<std::string> args) {
    std::vector<std::string> argv_s = {LOADLAB_BIN_DIR "/loadlab-target", "--listen", "127.0.0.1:0"};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    if (posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    out_ = fds[0];
    if (pid_ <= 0) return;
    std::string line = read_line(std::chrono::seconds(5));
    auto colon = line.rfind(':');
    if (line.rfind("listening on ", 0) == 0 && colon != std::string::npos)
      port_ = static_cast<uint16_t>(std::stoi(line.substr(colon + 1)));
  }
  ~TargetProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (out_ >= 0) close(out_);
  }
  TargetProcess(const TargetProcess&) = delete;
  TargetProcess& operator=(const TargetProcess&) = delete;

  // 0 when the target did not start.
  uint16_t port() const { return port_; }
  std::string url(const std::string& path = "/") const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }

  // SIGTERM; returns the count from its final `requests N` line (nullopt if it did not
  // exit cleanly within 5 s, in which case it is killed).
  std::optional<int64_t> stop() {
    if (pid_ <= 0) return std::nullopt;
    kill(pid_, SIGTERM);
    std::optional<int64_t> count;
    for (;;) {
      std::string line = read_line(std::chrono::seconds(5));
      if (line.empty()) break;
      if (line.rfind("requests ", 0) == 0) count = std::stoll(line.substr(9));
    }
    int status = 0;
    for (int i = 0; i < 500 && waitpid(pid_, &status, WNOHANG) == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (waitpid(pid_, &status, WNOHANG) == 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      count.reset();
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      count.reset();
    }
    pid_ = -1;
    return count;
  }

 private:
  // One line without its newline; empty on EOF or timeout.
  std::string read_line(std::chrono::milliseconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
      if (auto nl = pending_.find('\n'); nl != std::string::npos) {
        std::string line = pending_.substr(0, nl);
        pending_.erase(0, nl + 1);
        return line;
      }
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return {};
      pollfd p{out_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) return {};
      char buf[512];
      ssize_t n = read(out_, buf, sizeof buf);
      if (n <= 0) return {};
      pending_.append(buf, static_cast<size_t>(n));
    }
  }

  pid_t pid_ = -1;
  int out_ = -1;
  uint16_t port_ = 0;
  std::string pending_;
};

// True when `loadlab-target --help` lists `flag`.
inline bool target_has_flag(const std::string& flag) {
  std::string cmd = "timeout 5 " LOADLAB_BIN_DIR "/loadlab-target --help 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return false;
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out.find(flag) != std::string::npos;
}

}  // namespace loadlab::load::testing
