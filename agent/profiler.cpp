#include "loadlab/agent/profiler.hpp"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <functional>

#include "loadlab/agent/child_process.hpp"
#include "loadlab/shared/environment_error.hpp"
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

// A helper run to its end; `accept` judges its exit status (by default, exit code 0). Throws
// an EnvironmentError naming it, with its last lines on one line, otherwise.
ExitStatus run_to_end(
    const std::vector<std::string>& argv, std::chrono::milliseconds timeout, const std::string& what,
    const std::function<bool(const ExitStatus&)>& accept = [](const ExitStatus& s) { return s.code == 0; }) {
  auto child = ChildProcess::spawn(argv, helper_options());
  const auto status = child->wait_exit(timeout);
  child->wait_output_end(std::chrono::seconds(2));
  if (!status || !accept(*status)) {
    std::string tail = child->output_tail(5);
    std::replace(tail.begin(), tail.end(), '\n', ' ');
    child->terminate(std::chrono::milliseconds(500));
    throw EnvironmentError(what + (status ? " failed: " + status->describe() : " did not end in time") +
                           (tail.empty() ? "" : ": " + tail));
  }
  return *status;
}

// A capability set of the agent from /proc/self/status ("CapEff", "CapAmb").
unsigned long long capabilities(const std::string& set) {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind(set + ":", 0) == 0) return std::stoull(line.substr(set.size() + 1), nullptr, 16);
  return 0;
}

int perf_event_paranoid() {
  std::ifstream in("/proc/sys/kernel/perf_event_paranoid");
  int value = 2;
  in >> value;
  return in ? value : 2;
}

// A folder of its own for one use, mode 0700, under `parent`; removed with everything in it.
class PrivateDir {
 public:
  explicit PrivateDir(const std::filesystem::path& parent) {
    std::string pattern = (parent / "loadlab-profile-XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw system_failure("cannot make a folder in " + parent.string());
    path_ = pattern;
  }
  ~PrivateDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  PrivateDir(const PrivateDir&) = delete;
  PrivateDir& operator=(const PrivateDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// perf record, to its end: the pids' samples in `data`. perf stops early, and ends by the
// signal it sent its timer command, when every sampled thread has exited: what it wrote is
// kept.
void record(const std::string& perf, const ProfileRequest& request, const std::string& pids,
            const std::string& data) {
  const double seconds = static_cast<double>(request.duration.count()) / 1000;
  // -N: no copy of each sampled binary in root's ~/.debug. `-- sleep`: perf samples the pids
  // for as long as the command runs, then writes its file.
  run_to_end({perf, "record", "-q", "-N", "-e", "cpu-clock", "-F", std::to_string(request.frequency_hz),
              "--call-graph", request.call_graph == "dwarf" ? "dwarf" : "fp", "-p", pids, "-o", data, "--",
              "/bin/sleep", std::to_string(seconds)},
             request.duration + std::chrono::seconds(60), "perf record", [&](const ExitStatus& s) {
               std::error_code ec;
               return s.code == 0 || (s.signal == SIGTERM && std::filesystem::file_size(data, ec) > 0);
             });
}

}  // namespace

ProfilingSupport profiling_support(const std::string& perf) {
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
  const unsigned long long caps = capabilities(geteuid() == 0 ? "CapEff" : "CapAmb");
  const bool capable = (caps & (1ULL << 21)) != 0 || (caps & (1ULL << 38)) != 0;
  const int paranoid = perf_event_paranoid();
  if (!capable && paranoid > 2) {
    s.reason = "kernel.perf_event_paranoid is " + std::to_string(paranoid) +
               " and the agent has neither CAP_PERFMON nor CAP_SYS_ADMIN";
    return s;
  }
  s.available = true;
  s.kernel = capable || paranoid <= 1;
  return s;
}

FoldedStacks profile_processes(const ProfileRequest& request, const std::filesystem::path& parent_dir,
                               const std::string& perf) {
  const std::string path = program_path(perf);
  if (path.empty()) throw EnvironmentError(perf + " is not installed (Debian's linux-perf)");
  std::string pids;
  for (pid_t p : request.pids) {
    if (!std::filesystem::exists("/proc/" + std::to_string(p))) continue;  // gone: nothing to sample
    if (!pids.empty()) pids += ',';
    pids += std::to_string(p);
  }
  if (pids.empty()) throw EnvironmentError("perf record: none of the processes to profile is running");
  const PrivateDir dir(parent_dir);
  const std::string data = (dir.path() / "perf.data").string();
  const std::string text = (dir.path() / "perf.script").string();
  record(path, request, pids, data);
  // perf script's output to a file, not a pipe: nothing of it is dropped, however far behind
  // the reader would fall.
  run_to_end({"/bin/sh", "-c", "exec \"$0\" script -i \"$1\" > \"$2\"", path, data, text},
             std::chrono::minutes(5), "perf script");
  std::ifstream in(text);
  if (!in) throw EnvironmentError("perf script wrote no " + text);
  return fold_perf_script(in, true);
}

}  // namespace loadlab::agent
