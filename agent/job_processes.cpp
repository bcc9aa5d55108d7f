#include "loadlab/agent/job_processes.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <set>
#include <string_view>
#include <thread>

#include "loadlab/agent/pidfd.hpp"

namespace loadlab::agent {

namespace {

std::mutex g_own_mutex;
std::set<pid_t> g_own;  // children whose owners reap them

// The numbers of the entries of /proc/DIR that are numbers (pids, task ids).
std::vector<pid_t> numbered_entries(const std::string& dir) {
  std::vector<pid_t> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    long v = std::strtol(e->d_name, &end, 10);
    if (end != e->d_name && *end == '\0' && v > 0) out.push_back(static_cast<pid_t>(v));
  }
  closedir(d);
  return out;
}

// This process's children, as the kernel lists them per thread (orphans adopted by a
// subreaper hang on whichever of its threads the kernel picked).
std::vector<pid_t> own_children() {
  std::vector<pid_t> out;
  for (pid_t tid : numbered_entries("/proc/self/task")) {
    std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/children");
    for (pid_t p; f >> p;) out.push_back(p);
  }
  return out;
}

// Whether /proc/PID/environ holds `mark` as one whole entry.
bool environ_holds(pid_t pid, const std::string& mark) {
  int fd = open(("/proc/" + std::to_string(pid) + "/environ").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  // The mark is read where the kernel keeps the initial environment; 1 MiB is far past any
  // environment a job's process starts with.
  std::string text;
  char buf[16384];
  ssize_t n;
  while (text.size() < (1u << 20) && (n = read(fd, buf, sizeof buf)) > 0)
    text.append(buf, static_cast<size_t>(n));
  close(fd);
  for (size_t at = 0; (at = text.find(mark, at)) != std::string::npos; at += mark.size()) {
    const bool starts = at == 0 || text[at - 1] == '\0';
    const bool ends = at + mark.size() == text.size() || text[at + mark.size()] == '\0';
    if (starts && ends) return true;
  }
  return false;
}

}  // namespace

pid_t fork_own_child() {
  std::lock_guard lock(g_own_mutex);
  pid_t pid = fork();
  if (pid > 0) g_own.insert(pid);
  return pid;
}

void release_own_child(pid_t pid) {
  std::lock_guard lock(g_own_mutex);
  g_own.erase(pid);
}

// Whether the process the pidfd names has exited (a zombie not yet reaped, or gone).
bool pidfd_exited(int fd) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, 0) > 0;
}

// The living processes this one adopted: its children that are not its own.
std::vector<int> adopted_pidfds() {
  std::lock_guard lock(g_own_mutex);  // no own child can be forked (and taken) meanwhile
  std::vector<int> fds;
  for (pid_t pid : own_children()) {
    if (g_own.count(pid)) continue;
    const int fd = open_pidfd(pid);  // a child: its pid is ours until reaped
    if (fd < 0) continue;
    if (pidfd_exited(fd))
      close(fd);
    else
      fds.push_back(fd);
  }
  return fds;
}

size_t reap_strays() {
  std::lock_guard lock(g_own_mutex);  // no own child can be forked (and missed) meanwhile
  size_t reaped = 0;
  for (pid_t pid : own_children()) {
    if (g_own.count(pid)) continue;
    siginfo_t info{};
    if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG) == 0 && info.si_pid == pid) ++reaped;
  }
  return reaped;
}

size_t kill_adopted(int passes) {
  // Only where orphans come to this process is a child that is not one of its own adopted: in
  // another process (the controller's embedded agent, a test) it may be anyone's (popen).
  int subreaper = 0;
  if (getpid() != 1 && (prctl(PR_GET_CHILD_SUBREAPER, &subreaper, 0, 0, 0) != 0 || subreaper == 0)) return 0;
  size_t signalled = 0;
  for (int pass = 0; pass < passes; ++pass) {
    const auto fds = adopted_pidfds();
    if (fds.empty()) break;
    for (int fd : fds) {
      if (signal_pidfd(fd, SIGKILL)) ++signalled;
      close(fd);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(pass < 5 ? 1 : 10));
  }
  return signalled;
}

bool become_subreaper() { return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0; }

std::string new_job_mark() {
  static std::atomic<uint64_t> next{1};
  return "LOADLAB_JOB=" + std::to_string(getpid()) + "-" + std::to_string(next++);
}

std::vector<pid_t> marked_pids(const std::string& mark) {
  std::vector<pid_t> out;
  const pid_t self = getpid();
  for (pid_t pid : numbered_entries("/proc"))
    if (pid != self && environ_holds(pid, mark)) out.push_back(pid);
  return out;
}

size_t kill_marked(const std::string& mark, int passes) {
  size_t signalled = 0;
  for (int pass = 0; pass < passes; ++pass) {
    auto pids = marked_pids(mark);
    if (pids.empty()) break;
    for (pid_t pid : pids) {
      int fd = open_pidfd(pid);
      if (fd < 0) continue;  // gone already
      // The pidfd names one process from here on: if the pid was reused since the scan, the
      // new process lacks the mark and is left alone.
      if (environ_holds(pid, mark) && signal_pidfd(fd, SIGKILL)) ++signalled;
      close(fd);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(pass < 5 ? 1 : 10));
  }
  return signalled;
}

}  // namespace loadlab::agent
