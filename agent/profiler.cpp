#include "loadlab/agent/profiler.hpp"

#include <unistd.h>

#include <fstream>

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

// A helper run to its end: its exit status, or an EnvironmentError naming it with its last
// lines.
void run_to_end(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                const std::string& what) {
  auto child = ChildProcess::spawn(argv, helper_options());
  const auto status = child->wait_exit(timeout);
  child->wait_output_end(std::chrono::seconds(2));
  if (!status || status->code != 0) {
    const std::string tail = child->output_tail(5);
    child->terminate(std::chrono::milliseconds(500));
    throw EnvironmentError(what + (status ? " failed: " + status->describe() : " did not end in time") +
                           (tail.empty() ? "" : ": " + tail));
  }
}

// The capabilities in the agent's effective set, as /proc/self/status gives them.
unsigned long long effective_capabilities() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("CapEff:", 0) == 0) return std::stoull(line.substr(7), nullptr, 16);
  return 0;
}

int perf_event_paranoid() {
  std::ifstream in("/proc/sys/kernel/perf_event_paranoid");
  int value = 2;
  in >> value;
  return in ? value : 2;
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
  // CAP_SYS_ADMIN (21) or CAP_PERFMON (38) lift the kernel's perf_event_paranoid.
  const unsigned long long caps = effective_capabilities();
  const bool capable = geteuid() == 0 || (caps & (1ULL << 21)) != 0 || (caps & (1ULL << 38)) != 0;
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

FoldedStacks profile_processes(const ProfileRequest& request, const std::filesystem::path& work_dir,
                               const std::string& perf) {
  const std::string path = program_path(perf);
  if (path.empty()) throw EnvironmentError(perf + " is not installed (Debian's linux-perf)");
  if (request.pids.empty()) throw EnvironmentError("perf record: no process to profile");
  std::string pids;
  for (pid_t p : request.pids) {
    if (!pids.empty()) pids += ',';
    pids += std::to_string(p);
  }
  const std::string data = (work_dir / "perf.data").string();
  const double seconds = static_cast<double>(request.duration.count()) / 1000;
  // `-- sleep`: perf samples the pids for as long as the command runs, then writes its file.
  run_to_end({path, "record", "-q", "-e", "cpu-clock", "-F", std::to_string(request.frequency_hz),
              "--call-graph", request.call_graph == "dwarf" ? "dwarf" : "fp", "-p", pids, "-o", data, "--",
              "/bin/sleep", std::to_string(seconds)},
             request.duration + std::chrono::seconds(60), "perf record");
  auto script = ChildProcess::spawn({path, "script", "-i", data}, helper_options());
  PerfScriptFolder folder(true);
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  for (;;) {
    const auto got = script->next_line(line, std::chrono::milliseconds(1000));
    if (got == ChildProcess::LineStatus::kEof) break;
    if (got == ChildProcess::LineStatus::kLine) folder.add(line);
    if (std::chrono::steady_clock::now() > deadline) {
      script->terminate(std::chrono::milliseconds(500));
      throw EnvironmentError("perf script did not end in 5 minutes");
    }
  }
  const auto status = script->terminate(std::chrono::milliseconds(2000));
  if (status.code != 0) throw EnvironmentError("perf script failed: " + status.describe());
  return folder.finish();
}

}  // namespace loadlab::agent
