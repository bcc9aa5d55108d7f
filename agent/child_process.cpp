#include "loadlab/agent/child_process.hpp"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <future>
#include <stdexcept>

#include "loadlab/agent/cpu_binding.hpp"
#include "loadlab/agent/descendant_pidfds.hpp"
#include "loadlab/agent/job_cgroup.hpp"
#include "loadlab/agent/job_credentials.hpp"
#include "loadlab/agent/job_processes.hpp"
#include "loadlab/agent/pidfd.hpp"
#include "loadlab/agent/pids_limit.hpp"
#include "loadlab/agent/proc_reader.hpp"
#include "loadlab/agent/usage_window.hpp"
#include "loadlab/shared/environment_error.hpp"
#include "loadlab/shared/logging.hpp"

namespace loadlab::agent {

namespace {
constexpr size_t kTailLines = 200;
constexpr size_t kTailLineChars = 300;  // a line kept for error messages is cut here
constexpr size_t kTailChars = 4096;     // an error message's whole tail (gRPC trailers are small)
// A stdout line (a worker's result with its histograms) may be large; past this it is
// cut and marked, so it can never parse as an event by accident.
constexpr size_t kMaxLine = 64 * 1024 * 1024;
constexpr size_t kMaxQueued = 10000;  // unread stdout lines kept
// ... and their bytes: a target that prints without end is bounded in memory, not only in
// lines (10000 lines of up to kMaxLine would be 640 GiB). Room for two lines of the largest size.
constexpr size_t kMaxQueuedBytes = 2 * kMaxLine;

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

// Where the child failed between fork and exec, sent up the CLOEXEC pipe with errno.
enum class Stage : int {
  kCgroup,
  kCpuset,
  kPids,
  kAffinity,
  kBounding,
  kUser,
  kCapabilities,
  kWayBack,
  kStdio,
  kDescriptors,
  kChdir,
  kExec
};
struct ExecFailure {
  Stage stage;
  int error;
};

// What the child needs between fork and exec, all built before the fork: after it, only
// async-signal-safe calls.
struct ExecPlan {
  char* const* argv;
  char* const* envp;
  const char* cwd;            // nullptr = the agent's
  int cgroup_procs_fd;        // -1 = no job cgroup
  int cpuset_procs_fd;        // -1 = no v1 job cpuset
  int pids_procs_fd;          // -1 = no v1 job pids cgroup
  const cpu_set_t* affinity;  // nullptr = the agent's
  size_t affinity_size;
  const JobUser* user;   // nullptr = the agent's
  bool keep_privileges;  // SpawnOptions::keep_privileges (and no user)
  uid_t agent_uid;       // the uid a job of another user must not get back
  int out_w, err_w, report_w;
  pid_t parent;
};

[[noreturn]] void fail_in_child(int report_w, Stage stage) {
  ExecFailure f{stage, errno};
  ssize_t ignored = write(report_w, &f, sizeof f);
  (void)ignored;
  _exit(127);
}

// Fails the child at `stage` when `error` (an errno from job_credentials.hpp) is not 0.
void check_step(int report_w, Stage stage, int error) {
  if (error == 0) return;
  errno = error;
  fail_in_child(report_w, stage);
}

// The job's credentials: its user (once the cgroups are joined, as the agent: the job cannot
// write them), no capability in any set, no way back to the agent's uid (job_credentials.hpp).
void switch_credentials(const ExecPlan& plan) {
  if (plan.keep_privileges) return;
  check_step(plan.report_w, Stage::kBounding, drop_capability_bounding_set());
  if (plan.user != nullptr && (setgroups(plan.user->groups.size(), plan.user->groups.data()) != 0 ||
                               setgid(plan.user->gid) != 0 || setuid(plan.user->uid) != 0))
    fail_in_child(plan.report_w, Stage::kUser);
  check_step(plan.report_w, Stage::kCapabilities, clear_capabilities());
  if (plan.user != nullptr) check_step(plan.report_w, Stage::kWayBack, check_no_way_back(plan.agent_uid));
}

// The child's side of fork_exec: joins the job cgroup before anything can fork, so no
// descendant ever runs outside it.
[[noreturn]] void exec_child(const ExecPlan& plan) {
  if (plan.cgroup_procs_fd >= 0 && write(plan.cgroup_procs_fd, "0", 1) != 1)
    fail_in_child(plan.report_w, Stage::kCgroup);
  if (plan.cpuset_procs_fd >= 0 && write(plan.cpuset_procs_fd, "0", 1) != 1)
    fail_in_child(plan.report_w, Stage::kCpuset);
  if (plan.pids_procs_fd >= 0 && write(plan.pids_procs_fd, "0", 1) != 1)
    fail_in_child(plan.report_w, Stage::kPids);
  if (plan.affinity && sched_setaffinity(0, plan.affinity_size, plan.affinity) != 0)
    fail_in_child(plan.report_w, Stage::kAffinity);
  setpgid(0, 0);
  switch_credentials(plan);
  // The job's orphans come to its first process, not to the agent: while it lives, every
  // process of the job is in its tree, wherever it moved (the setting survives exec).
  if (!plan.keep_privileges) prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  // Dies with the agent (the forking thread is the launcher, which lives as long). After the
  // changes of credentials, which clear it.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != plan.parent) _exit(127);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  // dup2's copies do not inherit O_CLOEXEC. Output nobody reads would be a job without a voice.
  if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(plan.out_w, 1) < 0 || dup2(plan.err_w, 2) < 0)
    fail_in_child(plan.report_w, Stage::kStdio);
  // Nothing else of the agent's (a listening socket, a file) reaches the job.
  if (!plan.keep_privileges) check_step(plan.report_w, Stage::kDescriptors, mark_descriptors_cloexec());
  if (plan.cwd && chdir(plan.cwd) != 0) fail_in_child(plan.report_w, Stage::kChdir);
  execve(plan.argv[0], plan.argv, plan.envp);
  fail_in_child(plan.report_w, Stage::kExec);
}

std::string describe_failure(const ExecFailure& f, const std::string& path, const char* cwd,
                             const JobCgroup* job, const JobUser* user) {
  switch (f.stage) {
    case Stage::kCgroup:
      return "cannot move " + path + " into job cgroup " + (job ? job->path() : "") + ": " +
             strerror(f.error);
    case Stage::kCpuset:
      return "cannot move " + path + " into its job cpuset: " + strerror(f.error);
    case Stage::kPids:
      return "cannot move " + path + " into its job pids cgroup: " + strerror(f.error);
    case Stage::kAffinity:
      return "cannot set the CPU affinity of " + path + ": " + strerror(f.error);
    case Stage::kBounding:
      return "cannot drop the capability bounding set of " + path + ": " + strerror(f.error);
    case Stage::kUser:
      return "cannot run " + path + " as user " + (user ? user->name : "") +
             " (loadlab-agent --job-user): " + strerror(f.error);
    case Stage::kCapabilities:
      return "cannot clear the capabilities of " + path + ": " + strerror(f.error);
    case Stage::kWayBack:
      return "refusing to run " + path + " as user " + (user ? user->name : "") +
             ": it could still become the agent's user again, or holds a capability";
    case Stage::kDescriptors:
      return "cannot close the agent's descriptors in " + path + ": " + strerror(f.error);
    case Stage::kStdio:
      return "cannot give " + path + " its stdin, stdout and stderr: " + strerror(f.error);
    case Stage::kChdir:
      return "cannot execute " + path + " in " + (cwd ? cwd : ".") + ": " + strerror(f.error);
    case Stage::kExec:
      break;
  }
  return "cannot execute " + path + ": " + strerror(f.error);
}

struct Forked {
  pid_t pid = -1;
  int pidfd = -1;
};

// Runs on the launcher thread. out/err receive the parent's pipe ends. The pidfd is opened
// at once: the child is ours and unreaped, so its pid cannot name anyone else yet.
Forked fork_exec(ExecPlan plan, const std::string& path, const JobCgroup* job, int out[2], int err[2]) {
  int report[2] = {-1, -1};
  out[0] = out[1] = err[0] = err[1] = -1;
  auto close_all = [&] {
    for (int fd : {out[0], out[1], err[0], err[1], report[0], report[1]})
      if (fd >= 0) close(fd);
  };
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0 || pipe2(report, O_CLOEXEC) != 0) {
    int e = errno;
    close_all();
    throw system_failure("pipe", e);
  }
  plan.out_w = out[1];
  plan.err_w = err[1];
  plan.report_w = report[1];
  plan.parent = getpid();
  Forked f;
  f.pid = fork_own_child();  // reaped by its ChildProcess, never by the stray reaper
  if (f.pid < 0) {
    int e = errno;
    close_all();
    throw system_failure("fork", e);
  }
  if (f.pid == 0) exec_child(plan);
  f.pidfd = open_pidfd(f.pid);
  setpgid(f.pid, f.pid);  // also from the parent, so the group exists before we signal it
  close(out[1]);
  close(err[1]);
  close(report[1]);
  ExecFailure failure{};
  ssize_t n;
  do n = read(report[0], &failure, sizeof failure);
  while (n < 0 && errno == EINTR);
  close(report[0]);
  if (n == sizeof failure) {
    int status;
    waitpid(f.pid, &status, 0);
    release_own_child(f.pid);
    if (f.pidfd >= 0) close(f.pidfd);
    close(out[0]);
    close(err[0]);
    throw EnvironmentError(describe_failure(failure, path, plan.cwd, job, plan.user));
  }
  return f;
}

// waitid() on the child: by pidfd, or by pid (still ours: only we reap it) where the kernel
// has no pidfds or, before Linux 5.4, cannot wait on one.
int wait_child(pid_t pid, int pidfd, siginfo_t* info, int options, rusage* ru) {
  if (pidfd >= 0) {
    int r = wait_pidfd(pidfd, info, options, ru);
    if (r == 0 || errno != EINVAL) return r;
  }
  return wait_pid(pid, info, options, ru);
}

// The job cgroup for a new child; nullptr on the process-group path, and (logged) when the
// cgroup cannot be made: that child then runs on the process-group path.
std::unique_ptr<JobCgroup> make_job(const ProcControl& control) {
  try {
    return JobCgroup::create(control);
  } catch (const std::exception& e) {
    component_logger("proc")->warn("{}; this child is controlled by its process group only", e.what());
    return nullptr;
  }
}

// The child's environment: the agent's own, with options.env and the job's mark (NAME=VALUE)
// put over it, and who the job runs as (HOME, USER, LOGNAME) unless options.env names them.
std::vector<std::string> child_environment(const SpawnOptions& options, const std::string& mark) {
  const std::string mark_name = mark.substr(0, mark.find('='));
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string entry(*e);
    std::string name = entry.substr(0, entry.find('='));
    bool replaced = name == mark_name;
    for (auto& [k, v] : options.env) replaced = replaced || k == name;
    if (!replaced) env_strings.push_back(std::move(entry));
  }
  for (auto& [k, v] : options.env)
    if (k != mark_name) env_strings.push_back(k + "=" + v);
  env_strings.push_back(mark);
  if (options.user != nullptr) {  // who the job runs as (unless options.env says otherwise)
    const std::pair<std::string, std::string> who[] = {
        {"HOME", options.user->home}, {"USER", options.user->name}, {"LOGNAME", options.user->name}};
    for (const auto& [k, v] : who) {
      if (std::any_of(options.env.begin(), options.env.end(), [&](const auto& e) { return e.first == k; }))
        continue;
      std::erase_if(env_strings, [&](const std::string& e) { return e.rfind(k + "=", 0) == 0; });
      env_strings.push_back(k + "=" + v);
    }
  }
  return env_strings;
}
}  // namespace

std::string ExitStatus::describe() const {
  if (signal != 0) return "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
  return "exit status " + std::to_string(code);
}

std::unique_ptr<ChildProcess> ChildProcess::spawn(const std::vector<std::string>& argv,
                                                  const SpawnOptions& options) {
  if (argv.empty()) throw std::invalid_argument("empty command line");  // the caller's bug
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::unique_ptr<ChildProcess> child(new ChildProcess());
  // The job's mark, inherited by every descendant (job_processes.hpp); an agent that runs as
  // a job itself gives its children marks of their own.
  child->mark_ = new_job_mark();
  const std::vector<std::string> env_strings = child_environment(options, child->mark_);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  const ProcControl control = proc_control();
  child->job_ = make_job(control);
  if (child->job_) child->mode_ = control.mode;
  if (options.max_tasks > 0) child->limit_tasks(options.max_tasks);
  std::optional<AffinityMask> mask;
  if (!options.cpus.empty()) {
    child->bind_cpus(options.cpus);
    mask.emplace(options.cpus);
  }
  ExecPlan plan{.argv = args.data(),
                .envp = envp.data(),
                .cwd = options.cwd.empty() ? nullptr : options.cwd.c_str(),
                .cgroup_procs_fd = child->job_ ? child->job_->procs_fd() : -1,
                .cpuset_procs_fd = child->cpuset_ ? child->cpuset_->procs_fd() : -1,
                .pids_procs_fd = child->pids_ ? child->pids_->procs_fd() : -1,
                .affinity = mask ? mask->set() : nullptr,
                .affinity_size = mask ? mask->size() : 0,
                .user = options.user,
                .keep_privileges = options.keep_privileges && options.user == nullptr,
                .agent_uid = geteuid(),
                .out_w = -1,  // fork_exec's pipes
                .err_w = -1,
                .report_w = -1,
                .parent = 0};
  // The reader's wake-up, made before the fork: a child is never started without a way to
  // stop its reader.
  child->wake_fd_ = eventfd(0, EFD_CLOEXEC);
  if (child->wake_fd_ < 0) throw system_failure("eventfd");
  int out[2], err[2];
  Forked forked;
  try {
    launcher().run([&] { forked = fork_exec(plan, argv[0], child->job_.get(), out, err); });
  } catch (...) {
    if (child->job_) child->job_->remove();
    child->cpuset_.reset();
    child->pids_.reset();
    throw;
  }
  child->pid_ = forked.pid;
  child->pidfd_ = forked.pidfd;
  if (!options.output_log.empty())
    child->log_fd_ = open(options.output_log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  child->reader_ = std::thread([c = child.get(), o = out[0], r = err[0]] { c->reader_loop(o, r); });
  return child;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0) {
    terminate();
    remove_job();
  }
  uint64_t one = 1;
  ssize_t ignored = write(wake_fd_, &one, sizeof one);
  (void)ignored;
  if (reader_.joinable()) reader_.join();
  close(wake_fd_);
  if (pidfd_ >= 0) close(pidfd_);
  if (log_fd_ >= 0) close(log_fd_);
}

std::string ChildProcess::cgroup_path() const { return job_ ? job_->path() : ""; }

void ChildProcess::bind_cpus(const CpuList& cpus) {
  const CpuBinding binding = loadlab::agent::cpu_binding();
  cpu_binding_ = "affinity";
  try {
    if (binding.mode == CpuBindingMode::kCpusetV2 && job_) {
      if (!write_cpuset_cpus(job_->path(), cpus))
        throw system_failure("cannot write " + job_->path() + "/cpuset.cpus");
      cpu_binding_ = "cpuset-v2";
    } else if (binding.mode == CpuBindingMode::kCpusetV1) {
      cpuset_ = create_cpuset_v1_job(binding, cpus);
      cpu_binding_ = "cpuset-v1";
    }
  } catch (const std::exception& e) {
    component_logger("proc")->warn("{}; this child is held to CPUs {} by its affinity only", e.what(),
                                   cpus.to_string());
  }
}

void ChildProcess::limit_tasks(int64_t max) {
  const PidsLimitPlace place = pids_limit_place();
  try {
    if (place.mode == PidsLimitMode::kV2 && job_) {
      if (!write_pids_max(job_->path(), max))
        throw system_failure("cannot write " + job_->path() + "/pids.max");
      pids_limit_ = "pids-v2";
    } else if (place.mode == PidsLimitMode::kV1) {
      pids_ = create_pids_v1_job(place.v1_jobs_dir, max);
      pids_limit_ = "pids-v1";
    }
  } catch (const std::exception& e) {
    component_logger("proc")->warn("{}; this child's tasks have no kernel ceiling", e.what());
  }
}

std::vector<pid_t> ChildProcess::job_pids(ProcReader& reader) const {
  if (job_) return job_->pids();
  // No cgroup: the living tree, and every process carrying the job's mark (orphans, setsid
  // daemons, anything that left the group).
  auto pids = tree_pids(reader, pid_);
  for (pid_t p : marked_pids(mark_))
    if (std::find(pids.begin(), pids.end(), p) == pids.end()) pids.push_back(p);
  return pids;
}

void ChildProcess::queue_line(const std::string& line) {
  if (lines_.size() >= kMaxQueued || queued_bytes_ + line.size() > kMaxQueuedBytes)
    return;  // dropped: unread
  lines_.push_back(line);
  queued_bytes_ += line.size();
}

void ChildProcess::push_tail(std::string line) {
  if (log_fd_ >= 0 && logged_bytes_ < kMaxLogBytes) {
    // The whole output, in order (SpawnOptions.output_log), cut at its bound.
    std::string entry = line + "\n";
    logged_bytes_ += entry.size();
    if (logged_bytes_ >= kMaxLogBytes)
      entry += "[log cut at " + std::to_string(kMaxLogBytes >> 20) + " MiB]\n";
    for (size_t done = 0; done < entry.size();) {
      const ssize_t n = write(log_fd_, entry.data() + done, entry.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
  }
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
          if (i == 0) queue_line(partial[i]);
          push_tail(std::move(partial[i]));
        }
        continue;
      }
      partial[i].append(buf, static_cast<size_t>(n));
      size_t start = 0;
      for (size_t nl; (nl = partial[i].find('\n', start)) != std::string::npos; start = nl + 1) {
        std::string line = partial[i].substr(start, nl - start);
        if (i == 0) queue_line(line);
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
    queued_bytes_ -= line.size();
    return LineStatus::kLine;
  }
  return eof_ ? LineStatus::kEof : LineStatus::kTimeout;
}

ExitStatus ChildProcess::exit_status(const siginfo_t& info, const rusage& ru) const {
  ExitStatus s;
  s.user_s = static_cast<double>(ru.ru_utime.tv_sec) + ru.ru_utime.tv_usec / 1e6;
  s.system_s = static_cast<double>(ru.ru_stime.tv_sec) + ru.ru_stime.tv_usec / 1e6;
  s.maxrss_kb = ru.ru_maxrss;
  if (info.si_code == CLD_EXITED)
    s.code = info.si_status;
  else
    s.signal = info.si_status;
  if (auto cpu = job_ ? job_->cpu() : std::nullopt) {
    s.user_s = cpu->user_s();
    s.system_s = cpu->system_s();
  }
  return s;
}

std::optional<ExitStatus> ChildProcess::poll_exit() {
  std::lock_guard lock(exit_mutex_);
  if (exit_ || reaped_) return exit_;
  siginfo_t info{};
  rusage ru{};
  // WNOWAIT: seen but not reaped, so the pid and group stay reserved for terminate().
  const int options = WEXITED | WNOHANG | WNOWAIT;
  int r = wait_child(pid_, pidfd_, &info, options, &ru);
  if (r == 0 && info.si_pid == pid_) {
    exit_ = exit_status(info, ru);
  } else if (r < 0 && errno == ECHILD) {  // reaped elsewhere: the pid is no longer ours
    exit_ = ExitStatus{};
    reaped_ = true;
  }
  return exit_;
}

std::optional<ExitStatus> ChildProcess::wait_exit(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (auto s = poll_exit()) return s;
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    if (pidfd_ >= 0) {
      // Readable once the child has exited; the cap only bounds a missed wake-up.
      pollfd p{pidfd_, POLLIN, 0};
      poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count() + 1, 100)));
    } else {
      std::this_thread::sleep_for(std::min(left, std::chrono::milliseconds(5)));
    }
  }
}

// The group's number is the child's pid, which stays reserved until the child is reaped,
// even while it is a zombie: before the reap the group can only hold the job's processes.
void ChildProcess::signal_group(int sig) {
  std::lock_guard lock(exit_mutex_);
  if (reaped_) return;
  if (kill(-pid_, sig) != 0 && errno == ESRCH && pidfd_ >= 0) signal_pidfd(pidfd_, sig);  // it left its group
}

void ChildProcess::kill_job(const DescendantPidfds& escaped) {
  if (job_)
    job_->kill_all();
  else
    signal_group(SIGKILL);
  escaped.signal_all(SIGKILL);
}

bool ChildProcess::queue_signal(int sig, sigval value) {
  if (pidfd_ >= 0) return queue_signal_pidfd(pidfd_, sig, value);  // open until the destructor
  std::lock_guard lock(exit_mutex_);
  if (reaped_) {
    errno = ESRCH;
    return false;
  }
  return sigqueue(pid_, sig, value) == 0;
}

void ChildProcess::reap() {
  std::lock_guard lock(exit_mutex_);
  if (reaped_) return;
  siginfo_t info{};
  rusage ru{};
  int r = wait_child(pid_, pidfd_, &info, WEXITED | WNOHANG, &ru);
  if (r == 0 && info.si_pid == pid_) {
    if (!exit_) exit_ = exit_status(info, ru);
    reaped_ = true;
  } else if (r < 0 && errno == ECHILD) {
    reaped_ = true;
  }
  if (reaped_) release_own_child(pid_);
}

ExitStatus ChildProcess::terminate(std::chrono::milliseconds grace) {
  DescendantPidfds escaped;
  if (!poll_exit()) {
    // Without a cgroup, descendants that left the group are found now, from the living
    // tree: once their parents die they are re-parented and out of reach.
    if (!job_) {
      ProcFsReader reader;
      escaped = DescendantPidfds::collect(reader, pid_);
    }
    signal_group(SIGTERM);
    if (!wait_exit(grace)) {
      kill_job(escaped);
      wait_exit(std::chrono::seconds(10));  // SIGKILL is not refused; D state may delay it
    }
  }
  kill_job(escaped);  // whatever else is left of the job
  // And whatever left it: a process of the job that moved to another cgroup, group or
  // session, or was re-parented, still carries the job's mark.
  if (size_t n = kill_marked(mark_))
    component_logger("proc")->warn("pid {}: {} processes of the job had left it; killed", pid_, n);
  // And what outlived the job's first process, adopted by the agent (job_processes.hpp): found
  // by where it is, whatever its environment says.
  if (size_t n = kill_adopted())
    component_logger("proc")->warn("pid {}: {} processes outlived their job's first process; killed", pid_,
                                   n);
  reap();
  std::lock_guard lock(exit_mutex_);
  if (exit_) return *exit_;
  ExitStatus unknown;  // still not reaped (stuck in the kernel); the destructor tries again
  unknown.signal = SIGKILL;
  return unknown;
}

void ChildProcess::remove_job() {
  if (job_) {
    if (!job_->wait_empty(std::chrono::seconds(2))) {
      job_->kill_all();  // a descendant forked while the first kill ran
      job_->wait_empty(std::chrono::seconds(3));
    }
    job_->remove();  // logs what it could not remove
  }
  if (cpuset_) cpuset_->remove();  // empty now: its processes were the job's
  if (pids_) pids_->remove();
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
