#pragma once
// A program the tests start by pid, as the agent does: spawned with its stdout and stderr on
// pipes, read with bounded waits, killed by pid (SIGKILL) when the test lets go of it; and the
// shared libraries a process has mapped.
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

extern char** environ;

namespace loadlab::testing {

class SpawnedChild {
 public:
  SpawnedChild(const SpawnedChild&) = delete;
  SpawnedChild& operator=(const SpawnedChild&) = delete;
  SpawnedChild(std::vector<std::string> args, const std::string& binary) {
    args.insert(args.begin(), binary);
    int out[2], err[2];
    if (pipe(out) != 0 || pipe(err) != 0) return;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err[1], 2);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    posix_spawn_file_actions_addclose(&actions, err[0]);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, binary.c_str(), &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    close(err[1]);
    out_ = out[0];
    err_ = err[0];
  }
  ~SpawnedChild() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (out_ >= 0) close(out_);
    if (err_ >= 0) close(err_);
  }

  pid_t pid() const { return pid_; }

  // Next stdout line, or nullopt after `timeout` / at EOF.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      if (auto nl = out_buf_.find('\n'); nl != std::string::npos) {
        std::string line = out_buf_.substr(0, nl);
        out_buf_.erase(0, nl + 1);
        return line;
      }
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now())
              .count();
      if (left <= 0) return std::nullopt;
      pollfd pfd{out_, POLLIN, 0};
      if (poll(&pfd, 1, static_cast<int>(left)) <= 0) return std::nullopt;
      char chunk[256];
      auto n = read(out_, chunk, sizeof chunk);
      if (n <= 0) return std::nullopt;
      out_buf_.append(chunk, static_cast<size_t>(n));
    }
  }

  // Waits for exit; returns the exit status, or -1 if it did not exit in time (then killed).
  int wait_exit(std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }

  // All of stderr (call after exit).
  std::string read_stderr() {
    std::string text;
    char chunk[256];
    pollfd pfd{err_, POLLIN, 0};
    while (poll(&pfd, 1, 1000) > 0) {
      auto n = read(err_, chunk, sizeof chunk);
      if (n <= 0) break;
      text.append(chunk, static_cast<size_t>(n));
    }
    return text;
  }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  int err_ = -1;
  std::string out_buf_;
};

// The shared libraries a process has mapped, by file name ("libssl.so.3").
inline std::vector<std::string> mapped_libraries(pid_t pid) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::vector<std::string> out;
  for (std::string line; std::getline(maps, line);) {
    auto slash = line.rfind('/');
    if (slash == std::string::npos || line.find(".so", slash) == std::string::npos) continue;
    auto name = line.substr(slash + 1);
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  return out;
}

// The shared libraries of `libraries` beyond the C library's own (libc, libm, the dynamic
// loader): what a measured program links in instead (shared/runtime) must not come back as a
// shared object, whose pages count in its RSS. A sanitizer build keeps the shared C++ runtime
// (shared/runtime/CMakeLists.txt): for it the list is empty, the check being the release
// build's.
inline std::vector<std::string> beyond_libc(const std::vector<std::string>& libraries) {
  std::vector<std::string> out;
  for (const char* sanitizer : {"libasan.", "libtsan.", "libubsan."})
    for (const auto& name : libraries)
      if (name.rfind(sanitizer, 0) == 0) return {};
  for (const auto& name : libraries)
    if (name.rfind("libc.so", 0) != 0 && name.rfind("libm.so", 0) != 0 && name.rfind("ld-linux", 0) != 0)
      out.push_back(name);
  return out;
}

// A field of /proc/PID/status in kB ("RssAnon:", "VmHWM:"); -1 when it cannot be read.
inline long status_kb(pid_t pid, const std::string& field) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind(field, 0) == 0) return std::stol(line.substr(field.size()));
  return -1;
}

// The resident size, in kB, of a process's own code: the executable mappings of its program file
// (/proc/PID/smaps); -1 when it cannot be read. The kernel maps a touched page's neighbours with
// it (64 KB windows), so this is what its code layout costs (shared/runtime/CMakeLists.txt).
inline long own_code_kb(pid_t pid) {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec).string();
  std::ifstream smaps("/proc/" + std::to_string(pid) + "/smaps");
  if (ec || !smaps) return -1;
  long kb = 0;
  bool own_code = false;
  for (std::string line; std::getline(smaps, line);) {
    if (!line.empty() && std::isxdigit(static_cast<unsigned char>(line[0])) &&
        line.find('-') < line.find(' ')) {
      std::istringstream fields(line);
      std::string range, perms, offset, device, inode, path;
      fields >> range >> perms >> offset >> device >> inode >> path;
      own_code = path == exe && perms.find('x') != std::string::npos;
    } else if (own_code && line.rfind("Rss:", 0) == 0) {
      kb += std::stol(line.substr(4));
    }
  }
  return kb;
}

inline bool maps_any(const std::vector<std::string>& libraries, const std::string& prefix) {
  return std::any_of(libraries.begin(), libraries.end(), [&](auto& l) { return l.rfind(prefix, 0) == 0; });
}

}  // namespace loadlab::testing
