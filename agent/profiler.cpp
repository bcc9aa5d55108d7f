#include "loadlab/agent/profiler.hpp"

#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <thread>

#include "loadlab/agent/child_process.hpp"
#include "loadlab/agent/job_user.hpp"
#include "loadlab/shared/environment_error.hpp"
#include "loadlab/shared/limits.hpp"
#include "loadlab/shared/search_path.hpp"

namespace loadlab::agent {

namespace {

std::string program_path(const std::string& perf) {
  return perf.find('/') != std::string::npos ? perf : find_on_path(perf);
}

// perf runs with the agent's privileges: it must open perf events on processes that are not
// its own.
SpawnOptions helper_options() {
  SpawnOptions options;
  options.keep_privileges = true;
  return options;
}

// The helper's exit within `timeout`, waited for in slices while `cancelled` says no; none
// when it did not end in time. Throws EnvironmentError (the helper stopped) once cancelled.
std::optional<ExitStatus> wait_unless_cancelled(ChildProcess& child, std::chrono::milliseconds timeout,
                                                const std::function<bool()>& cancelled,
                                                const std::string& what) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (cancelled && cancelled()) {
      child.terminate(std::chrono::milliseconds(500));
      throw EnvironmentError(what + " stopped: the job's call was cancelled");
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    const auto status =
        child.wait_exit(std::clamp(left, std::chrono::milliseconds(0), std::chrono::milliseconds(100)));
    if (status || left <= std::chrono::milliseconds(0)) return status;
  }
}

// A helper run to its end, exit code 0, or an EnvironmentError naming it with its last lines on
// one line.
void run_to_end(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                const std::string& what, const std::function<bool()>& cancelled = {}) {
  auto child = ChildProcess::spawn(argv, helper_options());
  const auto status = wait_unless_cancelled(*child, timeout, cancelled, what);
  child->wait_output_end(std::chrono::seconds(2));
  if (!status || status->code != 0) {
    std::string tail = child->output_tail(5);
    std::replace(tail.begin(), tail.end(), '\n', ' ');
    child->terminate(std::chrono::milliseconds(500));
    throw EnvironmentError(what + (status ? " failed: " + status->describe() : " did not end in time") +
                           (tail.empty() ? "" : ": " + tail));
  }
}

int perf_event_paranoid() {
  std::ifstream in("/proc/sys/kernel/perf_event_paranoid");
  int value = 2;
  in >> value;
  return in ? value : 2;
}

// 0 when this process may open a perf event, which perf, its child, inherits the right to: a
// software clock on itself, user space only; otherwise the errno (EPERM under a container's
// seccomp profile without CAP_PERFMON, EACCES by kernel.perf_event_paranoid, ENOSYS).
int perf_event_errno() {
  perf_event_attr attr{};
  attr.type = PERF_TYPE_SOFTWARE;
  attr.size = sizeof attr;
  attr.config = PERF_COUNT_SW_CPU_CLOCK;
  attr.disabled = 1;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  const long fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) return errno;
  close(static_cast<int>(fd));
  return 0;
}

// A folder of its own for one profile, mode 0700, under `parent`.
std::filesystem::path private_dir(const std::filesystem::path& parent) {
  std::string pattern = (parent / "loadlab-profile-XXXXXX").string();
  if (!mkdtemp(pattern.data())) throw system_failure("cannot make a folder in " + parent.string());
  return pattern;
}

// perf record's command line for the request: samples `pids` until it is told to stop.
std::vector<std::string> record_argv(const std::string& perf, const ProfileRequest& request,
                                     const std::string& pids, const std::string& data,
                                     const std::filesystem::path& dir) {
  // -N: no copy of each sampled binary in root's ~/.debug; -B: no build ids, which perf would
  // otherwise collect by reading the whole file through as it stops.
  std::vector<std::string> argv{perf,
                                "record",
                                "-q",
                                "-N",
                                "-B",
                                "-e",
                                "cpu-clock",
                                "-F",
                                std::to_string(request.frequency_hz),
                                "--call-graph",
                                request.call_graph == "dwarf" ? "dwarf" : "fp",
                                "-p",
                                pids,
                                "-o",
                                data};
  if (request.wait_until_sampling)  // events off until "enable" comes through the control FIFO
    argv.insert(argv.begin() + 2, {"-D", "-1", "--control",
                                   "fifo:" + (dir / "control").string() + "," + (dir / "ack").string()});
  return argv;
}

// perf started with its events off (record_argv's -D -1): turns them on through its control
// FIFO in `dir` and returns once perf has acknowledged it. Throws EnvironmentError when perf
// exits first, does not answer within 10 s, or the job's call is cancelled.
void wait_for_sampling(ChildProcess& record, const std::filesystem::path& dir,
                       const std::function<bool()>& cancelled) {
  // Read-write, so that neither open waits for perf to open its end.
  const int control = open((dir / "control").c_str(), O_RDWR | O_CLOEXEC);
  const int ack = open((dir / "ack").c_str(), O_RDWR | O_CLOEXEC | O_NONBLOCK);
  const auto close_both = [&] {
    if (control >= 0) close(control);
    if (ack >= 0) close(ack);
  };
  static constexpr char kEnable[] = "enable\n";
  if (control < 0 || ack < 0 || write(control, kEnable, sizeof kEnable - 1) != sizeof kEnable - 1) {
    close_both();
    throw system_failure("cannot write to perf's control FIFO in " + dir.string());
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::string answer;
  while (answer.find("ack") == std::string::npos) {
    std::string why;
    if (cancelled && cancelled())
      why = "perf record stopped: the job's call was cancelled";
    else if (record.poll_exit())
      why = "perf record exited before it sampled: " + record.output_tail(3);
    else if (std::chrono::steady_clock::now() > deadline)
      why = "perf record did not start sampling within 10 s";
    if (!why.empty()) {
      close_both();
      throw EnvironmentError(why);
    }
    pollfd p{ack, POLLIN, 0};
    char buf[64];
    if (poll(&p, 1, 100) > 0)
      if (const ssize_t n = read(ack, buf, sizeof buf); n > 0) answer.append(buf, static_cast<size_t>(n));
  }
  close_both();
}

// The request's pids still running, as perf's -p takes them.
std::string running_pids(const std::vector<pid_t>& pids) {
  std::string list;
  for (pid_t p : pids) {
    if (!std::filesystem::exists("/proc/" + std::to_string(p))) continue;  // gone: nothing to sample
    if (!list.empty()) list += ',';
    list += std::to_string(p);
  }
  if (list.empty()) throw EnvironmentError("perf record: none of the processes to profile is running");
  return list;
}

}  // namespace

ProfilingSupport profiling_support(const std::string& perf, bool jobs_of_another_user) {
  ProfilingSupport s;
  const std::string path = program_path(perf);
  if (path.empty() || access(path.c_str(), X_OK) != 0) {
    s.reason = perf + " is not installed (Debian's linux-perf)";
    return s;
  }
  try {
    run_to_end({path, "--version"}, std::chrono::seconds(10), path + " --version");
  } catch (const std::exception& e) {
    s.reason = e.what();
    return s;
  }
  // What perf will hold once the agent runs it: root's effective set (a container may have
  // taken CAP_PERFMON and CAP_SYS_ADMIN from root), another user's ambient set. CAP_SYS_ADMIN
  // (21) or CAP_PERFMON (38) lift kernel.perf_event_paranoid.
  const unsigned long long caps = own_capabilities(geteuid() == 0 ? "CapEff" : "CapAmb");
  const bool capable = (caps & (1ULL << 21)) != 0 || (caps & (1ULL << 38)) != 0;
  const int paranoid = perf_event_paranoid();
  if (!capable && paranoid > 2) {
    s.reason = "kernel.perf_event_paranoid is " + std::to_string(paranoid) +
               " and the agent has neither CAP_PERFMON nor CAP_SYS_ADMIN";
    return s;
  }
  if (const int e = perf_event_errno(); e != 0) {
    s.reason = std::string("perf_event_open is refused here (") + strerrorname_np(e) +
               "): a seccomp profile, as a container's default without CAP_PERFMON, or the kernel's settings";
    return s;
  }
  // Another user's processes: perf_event_paranoid aside, the kernel asks for the access ptrace
  // would need, which those capabilities grant.
  if (!capable && jobs_of_another_user) {
    s.reason =
        "the jobs run as another user (--job-user) and the agent has neither CAP_PERFMON nor CAP_SYS_ADMIN";
    return s;
  }
  s.available = true;
  s.kernel = capable || paranoid <= 1;
  return s;
}

// perf, and its folder, removed with everything in it when the profile goes.
struct WindowProfile::State {
  std::string perf;
  std::filesystem::path dir;
  std::string data;
  std::unique_ptr<ChildProcess> record;
  std::function<bool()> cancelled;
  std::string failure;  // why the recording failed, once it has
  State(std::string program, const std::filesystem::path& parent)
      : perf(std::move(program)), dir(private_dir(parent)), data((dir / "perf.data").string()) {}
  ~State() {
    if (record) record->terminate(std::chrono::milliseconds(500));
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  State(const State&) = delete;
  State& operator=(const State&) = delete;
};

std::unique_ptr<WindowProfile> WindowProfile::start(const ProfileRequest& request,
                                                    const std::filesystem::path& parent_dir,
                                                    const std::string& perf) {
  std::string path = program_path(perf);
  if (path.empty() || access(path.c_str(), X_OK) != 0)
    throw EnvironmentError(perf + " is not installed (Debian's linux-perf)");
  const std::string pids = running_pids(request.pids);
  auto profile = std::unique_ptr<WindowProfile>(new WindowProfile());
  profile->state_ = std::make_unique<State>(std::move(path), parent_dir);
  State& s = *profile->state_;
  s.cancelled = request.cancelled;
  if (request.wait_until_sampling)
    for (const char* fifo : {"control", "ack"})
      if (mkfifo((s.dir / fifo).c_str(), 0600) != 0)
        throw system_failure("cannot make " + (s.dir / fifo).string());
  s.record = ChildProcess::spawn(record_argv(s.perf, request, pids, s.data, s.dir), helper_options());
  if (request.wait_until_sampling) wait_for_sampling(*s.record, s.dir, s.cancelled);
  return profile;
}

WindowProfile::WindowProfile() = default;

WindowProfile::~WindowProfile() = default;

// perf ends by the signal it was sent once it has written its file (it raises it again), or
// by itself when every sampled thread has exited: what it wrote is kept either way.
void WindowProfile::end_recording() {
  State& s = *state_;
  if (!s.failure.empty()) throw EnvironmentError(s.failure);
  if (!s.record) return;
  s.record->queue_signal(SIGINT, sigval{});
  const auto status = wait_unless_cancelled(*s.record, std::chrono::seconds(limits::kProfileStopTimeoutS),
                                            s.cancelled, "perf record");
  s.record->wait_output_end(std::chrono::seconds(2));
  std::error_code ec;
  const bool wrote = std::filesystem::file_size(s.data, ec) > 0;
  if (!status || !(status->code == 0 || ((status->signal == SIGINT || status->signal == SIGTERM) && wrote))) {
    std::string tail = s.record->output_tail(5);
    std::replace(tail.begin(), tail.end(), '\n', ' ');
    s.failure = "perf record failed: " + (status ? status->describe() : "it did not stop") +
                (tail.empty() ? "" : ": " + tail);
  }
  s.record->terminate(std::chrono::milliseconds(500));
  s.record.reset();
  if (!s.failure.empty()) throw EnvironmentError(s.failure);
}

FoldedStacks WindowProfile::stop() {
  State& s = *state_;
  end_recording();
  // perf script's output to a file, not a pipe: nothing of it is dropped, however far behind
  // the reader would fall. perf names inlined functions through binutils' addr2line, and
  // without it dies of a broken pipe to the addr2line it could not start: then no inlined frames.
  const std::string text = (s.dir / "perf.script").string();
  const char* inline_frames = find_on_path("addr2line").empty() ? "--no-inline" : "--inline";
  run_to_end(
      {"/bin/sh", "-c", "exec \"$0\" script \"$3\" -i \"$1\" > \"$2\"", s.perf, s.data, text, inline_frames},
      std::chrono::seconds(limits::kProfileFoldTimeoutS), "perf script", s.cancelled);
  std::ifstream in(text);
  if (!in) throw EnvironmentError("perf script wrote no " + text);
  return fold_perf_script(in, true);
}

FoldedStacks profile_processes(const ProfileRequest& request, const std::filesystem::path& parent_dir,
                               const std::string& perf) {
  ProfileRequest sampled = request;
  sampled.wait_until_sampling = true;  // the duration counts from the first sample, not perf's start
  auto profile = WindowProfile::start(sampled, parent_dir, perf);
  std::this_thread::sleep_for(request.duration);
  return profile->stop();
}

}  // namespace loadlab::agent
