#include "loadlab/agent/profiler.hpp"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
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

// A helper run to its end, exit code 0, or an EnvironmentError naming it with its last lines on
// one line.
void run_to_end(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                const std::string& what) {
  auto child = ChildProcess::spawn(argv, helper_options());
  const auto status = child->wait_exit(timeout);
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

// A folder of its own for one profile, mode 0700, under `parent`.
std::filesystem::path private_dir(const std::filesystem::path& parent) {
  std::string pattern = (parent / "loadlab-profile-XXXXXX").string();
  if (!mkdtemp(pattern.data())) throw system_failure("cannot make a folder in " + parent.string());
  return pattern;
}

// perf record's command line for the request: samples `pids` until it is told to stop.
std::vector<std::string> record_argv(const std::string& perf, const ProfileRequest& request,
                                     const std::string& pids, const std::string& data) {
  // -N: no copy of each sampled binary in root's ~/.debug; -B: no build ids, which perf would
  // otherwise collect by reading the whole file through as it stops.
  return {perf,
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
  s.record = ChildProcess::spawn(record_argv(s.perf, request, pids, s.data), helper_options());
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
  const auto status = s.record->wait_exit(std::chrono::seconds(limits::kProfileStopTimeoutS));
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
  // the reader would fall.
  const std::string text = (s.dir / "perf.script").string();
  run_to_end({"/bin/sh", "-c", "exec \"$0\" script -i \"$1\" > \"$2\"", s.perf, s.data, text},
             std::chrono::seconds(limits::kProfileFoldTimeoutS), "perf script");
  std::ifstream in(text);
  if (!in) throw EnvironmentError("perf script wrote no " + text);
  return fold_perf_script(in, true);
}

FoldedStacks profile_processes(const ProfileRequest& request, const std::filesystem::path& parent_dir,
                               const std::string& perf) {
  auto profile = WindowProfile::start(request, parent_dir, perf);
  std::this_thread::sleep_for(request.duration);
  return profile->stop();
}

}  // namespace loadlab::agent
