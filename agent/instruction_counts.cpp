#include "instruction_counts.hpp"

#include <linux/perf_event.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "loadlab/shared/environment_error.hpp"
#include "loadlab/shared/limits.hpp"
#include "loadlab/shared/search_path.hpp"

namespace loadlab::agent {

namespace fs = std::filesystem;

std::string find_valgrind() { return find_on_path("valgrind"); }

CallgrindProbe::CallgrindProbe(std::string valgrind, const JobUser* user) : valgrind_(std::move(valgrind)) {
  char tmpl[] = "/tmp/loadlab-callgrind-XXXXXX";
  if (!mkdtemp(tmpl)) throw system_failure("cannot make a folder for callgrind's output");
  dir_ = tmpl;
  // The job's user writes its files; the agent's group may read and remove them.
  if (user != nullptr && (chown(dir_.c_str(), user->uid, getegid()) != 0 || chmod(dir_.c_str(), 0770) != 0)) {
    const int error = errno;
    std::error_code ec;
    fs::remove_all(dir_, ec);
    throw system_failure("cannot give " + std::string(tmpl) + " to user " + user->name, error);
  }
}

CallgrindProbe::~CallgrindProbe() {
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

std::vector<std::string> CallgrindProbe::wrap(const std::vector<std::string>& argv) const {
  // The target's own output stays its own (the built-in target's "listening on" line):
  // valgrind's messages go to a file.
  std::vector<std::string> out = {valgrind_, "--tool=callgrind", "--trace-children=yes",
                                  "--log-file=" + dir_ + "/valgrind.%p.log",
                                  "--callgrind-out-file=" + dir_ + "/callgrind.out.%p"};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

std::optional<uint64_t> callgrind_total(const std::string& text) {
  std::optional<uint64_t> total;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    for (const char* key : {"summary:", "totals:"}) {
      if (line.rfind(key, 0) != 0) continue;
      // The first event is Ir (callgrind's default events); "totals:" repeats "summary:".
      const uint64_t n = std::strtoull(line.c_str() + std::strlen(key), nullptr, 10);
      total = std::max(total.value_or(0), n);
    }
  }
  return total;
}

namespace {

std::string read_small(const fs::path& file, size_t limit) {
  std::ifstream in(file, std::ios::binary);
  std::string text;
  char buf[1 << 16];
  while (in && text.size() <= limit) {
    in.read(buf, sizeof buf);
    text.append(buf, static_cast<size_t>(in.gcount()));
  }
  return text;
}

// The last lines of valgrind's logs: why the target ran under it without writing output.
std::string valgrind_log_tail(const std::string& dir) {
  std::string tail;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(dir, ec))
    if (e.path().filename().string().rfind("valgrind.", 0) == 0) tail += read_small(e.path(), 4096);
  if (tail.size() > 600) tail = "..." + tail.substr(tail.size() - 600);
  return tail;
}

}  // namespace

InstructionCount CallgrindProbe::collect() const {
  InstructionCount out;
  uint64_t sum = 0, most = 0;
  size_t files = 0;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(dir_, ec)) {
    if (e.path().filename().string().rfind("callgrind.out.", 0) != 0) continue;
    // A job user's file: the agent takes it back before reading it.
    if (access(e.path().c_str(), R_OK) != 0 && chown(e.path().c_str(), geteuid(), getegid()) == 0)
      chmod(e.path().c_str(), 0600);
    const auto size = e.file_size(ec);
    std::string text = read_small(e.path(), static_cast<size_t>(limits::kMaxProfileBytes));
    const auto total = callgrind_total(text);
    if (!total) continue;  // a process still writing when it was killed
    ++files;
    sum += *total;
    if (*total < most) continue;
    most = *total;
    out.profile = !ec && size <= static_cast<uintmax_t>(limits::kMaxProfileBytes) ? std::move(text) : "";
  }
  if (files == 0) {
    out.unavailable = "callgrind wrote no output (the target did not exit by itself when stopped?)";
    const std::string log = valgrind_log_tail(dir_);
    if (!log.empty()) out.unavailable += "; valgrind said: " + log;
    return out;
  }
  out.instructions = sum;
  return out;
}

namespace {

std::string perf_reason(int error, pid_t tid) {
  std::string why =
      "perf_event_open(instructions:u) on thread " + std::to_string(tid) + ": " + std::strerror(error);
  if (error == ENOENT || error == EOPNOTSUPP || error == ENODEV)
    return why +
           ": this machine has no hardware instruction counter (a VM without a virtual PMU?); "
           "use \"method\": \"callgrind\"";
  if (error == EACCES || error == EPERM) {
    std::string level;
    std::ifstream("/proc/sys/kernel/perf_event_paranoid") >> level;
    return why + ": kernel.perf_event_paranoid is " + (level.empty() ? "unknown" : level) +
           "; the agent needs CAP_PERFMON, or root, to count a job's threads (docs/security.md)";
  }
  return why;
}

std::vector<pid_t> threads_of(pid_t pid) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec))
    out.push_back(static_cast<pid_t>(std::strtol(e.path().filename().c_str(), nullptr, 10)));
  return out;
}

}  // namespace

InstructionCounters::~InstructionCounters() { close_all(); }

void InstructionCounters::close_all() {
  for (int fd : fds_) ::close(fd);
  fds_.clear();
}

bool InstructionCounters::open(const std::vector<pid_t>& pids) {
  close_all();
  reason_.clear();
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_HARDWARE;
  attr.config = PERF_COUNT_HW_INSTRUCTIONS;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  attr.inherit = 1;  // threads a counted thread starts are counted with it
  for (pid_t pid : pids) {
    for (pid_t tid : threads_of(pid)) {
      const int fd = static_cast<int>(syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC));
      if (fd >= 0) {
        fds_.push_back(fd);
        continue;
      }
      if (errno == ESRCH) continue;  // the thread ended meanwhile
      reason_ = perf_reason(errno, tid);
      close_all();
      return false;
    }
  }
  if (fds_.empty()) reason_ = "the target had no thread to count";
  return !fds_.empty();
}

std::optional<uint64_t> InstructionCounters::read() {
  if (fds_.empty()) return std::nullopt;
  uint64_t sum = 0;
  for (int fd : fds_) {
    uint64_t n = 0;
    if (::read(fd, &n, sizeof n) != static_cast<ssize_t>(sizeof n)) {
      reason_ = std::string("cannot read an instruction counter: ") + std::strerror(errno);
      close_all();
      return std::nullopt;
    }
    sum += n;
  }
  close_all();
  return sum;
}

}  // namespace loadlab::agent
