#include "loadlab/agent/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <future>
#include <stdexcept>

namespace loadlab::agent {

namespace {
constexpr size_t kTailLines = 200;
constexpr size_t kTailLineChars = 300;  // a line kept for error messages is cut here
constexpr size_t kTailChars = 4096;     // an error message's whole tail (gRPC trailers are small)
// A stdout line (a worker's result with its histograms) may be large; past this it is
// cut and marked, so it can never parse as an event by accident.
constexpr size_t kMaxLine = 64 * 1024 * 1024;
constexpr size_t kMaxQueued = 10000;  // unread stdout lines kept

// PR_SET_PDEATHSIG fires when the *thread* that forked exits, not the process. gRPC's
// handler threads come and go, so every fork happens on this one thread, which lives as
// long as the process: children then die exactly when the agent dies.
class Launcher {
 public:
  Launcher() {
    std::thread([this] { loop(); }).detach();
  }
  void run(std::function<void()> task) {
    std::packaged_task<void()> job(std::move(task));
    auto done = job.get_future();
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(job));
    }
    cv_.notify_one();
    done.get();  // rethrows the task's exception
  }

 private:
  void loop() {
    for (;;) {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [&] { return !queue_.empty(); });
      auto job = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      job();
    }
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::packaged_task<void()>> queue_;
};

Launcher& launcher() {
  static auto* l = new Launcher();  // never destroyed: its thread runs until exit
  return *l;
}

ExitStatus decode(int status, const rusage& ru) {
  ExitStatus s;
  s.user_s = static_cast<double>(ru.ru_utime.tv_sec) + ru.ru_utime.tv_usec / 1e6;
  s.system_s = static_cast<double>(ru.ru_stime.tv_sec) + ru.ru_stime.tv_usec / 1e6;
  s.maxrss_kb = ru.ru_maxrss;
  if (WIFEXITED(status)) {
    s.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    s.signal = WTERMSIG(status);
  }
  return s;
}
}  // namespace

static pid_t fork_exec(std::vector<char*>& args, std::vector<char*>& envp, const char* cwd,
                       const std::string& path, int out[2], int err[2]);

std::string ExitStatus::describe() const {
  if (signal != 0) return "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
  return "exit status " + std::to_string(code);
}

std::unique_ptr<ChildProcess> ChildProcess::spawn(const std::vector<std::string>& argv,
                                                  const SpawnOptions& options) {
  if (argv.empty()) throw std::runtime_error("empty command line");
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // Everything the child needs is built before fork: after it, only async-signal-safe calls.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string entry(*e);
    std::string name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (auto& [k, v] : options.env) replaced = replaced || k == name;
    if (!replaced) env_strings.push_back(std::move(entry));
  }
  for (auto& [k, v] : options.env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const char* cwd = options.cwd.empty() ? nullptr : options.cwd.c_str();

  int out[2], err[2];
  pid_t pid = -1;
  launcher().run([&] { pid = fork_exec(args, envp, cwd, argv[0], out, err); });
  std::unique_ptr<ChildProcess> child(new ChildProcess());
  child->pid_ = pid;
  child->wake_fd_ = eventfd(0, EFD_CLOEXEC);
  child->reader_ = std::thread([c = child.get(), o = out[0], r = err[0]] { c->reader_loop(o, r); });
  return child;
}

// Runs on the launcher thread. Returns the pid; out/err receive the parent's pipe ends.
static pid_t fork_exec(std::vector<char*>& args, std::vector<char*>& envp, const char* cwd,
                       const std::string& path, int out[2], int err[2]) {
  int exec_err[2] = {-1, -1};
  out[0] = out[1] = err[0] = err[1] = -1;
  auto close_all = [&] {
    for (int fd : {out[0], out[1], err[0], err[1], exec_err[0], exec_err[1]})
      if (fd >= 0) close(fd);
  };
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0 || pipe2(exec_err, O_CLOEXEC) != 0) {
    int e = errno;
    close_all();
    throw std::runtime_error(std::string("pipe: ") + strerror(e));
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close_all();
    throw std::runtime_error(std::string("fork: ") + strerror(e));
  }
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    setpgid(0, 0);
    // Dies with the agent (the forking thread is the launcher, which lives as long).
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull >= 0) dup2(devnull, 0);  // dup2's copy does not inherit O_CLOEXEC
    dup2(out[1], 1);
    dup2(err[1], 2);
    if (cwd && chdir(cwd) != 0) {
      int e = errno;
      ssize_t ignored = write(exec_err[1], &e, sizeof e);
      (void)ignored;
      _exit(127);
    }
    execve(args[0], args.data(), envp.data());
    int e = errno;
    ssize_t ignored = write(exec_err[1], &e, sizeof e);
    (void)ignored;
    _exit(127);
  }
  setpgid(pid, pid);  // also from the parent, so the group exists before we signal it
  close(out[1]);
  close(err[1]);
  close(exec_err[1]);
  int e = 0;
  ssize_t n;
  do n = read(exec_err[0], &e, sizeof e);
  while (n < 0 && errno == EINTR);
  close(exec_err[0]);
  if (n == sizeof e) {
    int status;
    waitpid(pid, &status, 0);
    close(out[0]);
    close(err[0]);
    throw std::runtime_error("cannot execute " + path + ": " + strerror(e));
  }
  return pid;
}

ChildProcess::~ChildProcess() {
  if (!poll_exit()) terminate();
  uint64_t one = 1;
  ssize_t ignored = write(wake_fd_, &one, sizeof one);
  (void)ignored;
  if (reader_.joinable()) reader_.join();
  close(wake_fd_);
}

void ChildProcess::push_tail(std::string line) {
  if (line.size() > kTailLineChars) {
    line.resize(kTailLineChars);
    line += " [...]";
  }
  tail_.push_back(std::move(line));
  if (tail_.size() > kTailLines) tail_.pop_front();
}

void ChildProcess::reader_loop(int out_fd, int err_fd) {
  std::string partial[2];
  int fds[2] = {out_fd, err_fd};
  bool open_[2] = {true, true};
  char buf[16384];
  while (open_[0] || open_[1]) {
    pollfd p[3] = {
        {open_[0] ? out_fd : -1, POLLIN, 0}, {open_[1] ? err_fd : -1, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    int r = poll(p, 3, -1);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 || (p[2].revents & POLLIN)) break;
    for (int i = 0; i < 2; ++i) {
      if (!open_[i] || p[i].revents == 0) continue;
      ssize_t n = read(fds[i], buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      std::lock_guard lock(mutex_);
      if (n <= 0) {
        open_[i] = false;
        if (!partial[i].empty()) {
          if (i == 0 && lines_.size() < kMaxQueued) lines_.push_back(partial[i]);
          push_tail(std::move(partial[i]));
        }
        continue;
      }
      partial[i].append(buf, static_cast<size_t>(n));
      size_t start = 0;
      for (size_t nl; (nl = partial[i].find('\n', start)) != std::string::npos; start = nl + 1) {
        std::string line = partial[i].substr(start, nl - start);
        if (i == 0 && lines_.size() < kMaxQueued) lines_.push_back(line);
        push_tail(std::move(line));
      }
      partial[i].erase(0, start);
      if (partial[i].size() > kMaxLine) {
        partial[i].resize(kMaxLine);
        partial[i] += "\n[line cut]";  // no longer valid JSON: never taken for an event
      }
    }
    cv_.notify_all();
  }
  close(out_fd);
  close(err_fd);
  std::lock_guard lock(mutex_);
  eof_ = true;
  cv_.notify_all();
}

ChildProcess::LineStatus ChildProcess::next_line(std::string& line, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  cv_.wait_for(lock, timeout, [&] { return !lines_.empty() || eof_; });
  if (!lines_.empty()) {
    line = std::move(lines_.front());
    lines_.pop_front();
    return LineStatus::kLine;
  }
  return eof_ ? LineStatus::kEof : LineStatus::kTimeout;
}

std::optional<ExitStatus> ChildProcess::poll_exit() {
  std::lock_guard lock(exit_mutex_);
  if (exit_) return exit_;
  int status;
  rusage ru{};
  pid_t r = wait4(pid_, &status, WNOHANG, &ru);
  if (r == pid_)
    exit_ = decode(status, ru);
  else if (r < 0 && errno == ECHILD)
    exit_ = ExitStatus{};  // reaped elsewhere
  return exit_;
}

std::optional<ExitStatus> ChildProcess::wait_exit(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (auto s = poll_exit()) return s;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

ExitStatus ChildProcess::terminate(std::chrono::milliseconds grace) {
  if (!poll_exit()) {
    kill(-pid_, SIGTERM);
    if (!wait_exit(grace)) {
      kill(-pid_, SIGKILL);
      wait_exit(std::chrono::seconds(10));  // SIGKILL is not refused; D state may delay it
    }
  }
  kill(-pid_, SIGKILL);  // whatever else is left in the group
  if (auto st = poll_exit()) return *st;
  ExitStatus unknown;  // still not reaped (stuck in the kernel); the destructor tries again
  unknown.signal = SIGKILL;
  return unknown;
}

void ChildProcess::wait_output_end(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  cv_.wait_for(lock, timeout, [&] { return eof_; });
}

std::string ChildProcess::output_tail(size_t max_lines) const {
  std::lock_guard lock(mutex_);
  std::string out;
  size_t from = tail_.size() > max_lines ? tail_.size() - max_lines : 0;
  for (size_t i = from; i < tail_.size(); ++i) {
    if (!out.empty()) out += '\n';
    out += tail_[i];
  }
  if (out.size() > kTailChars) out = "[...]" + out.substr(out.size() - kTailChars);
  return out;
}

}  // namespace loadlab::agent
