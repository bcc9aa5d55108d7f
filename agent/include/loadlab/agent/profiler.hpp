#pragma once
// CPU profiles of a job's processes with Linux perf (Debian's linux-perf): `perf record -e
// cpu-clock` (no hardware counters needed) on the processes' pids for a time, then `perf
// script` folded into stacks (loadlab/shared/folded_stacks.hpp). perf runs as the agent's own
// helper with the agent's privileges, never as a job: a job holds no capabilities.
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loadlab/shared/folded_stacks.hpp"

namespace loadlab::agent {

// What profiling the agent can do on this machine, and if none, why.
struct ProfilingSupport {
  bool available = false;
  // Whether kernel frames are sampled too (CAP_PERFMON or CAP_SYS_ADMIN in what perf will hold,
  // or a perf_event_paranoid of 1 or less); otherwise only the processes' user space.
  bool kernel = false;
  std::string reason;  // unavailable: why ("perf is not installed (linux-perf)", ...)
};
// Runs `perf --version` and reads /proc/sys/kernel/perf_event_paranoid and the agent's
// capabilities. `perf`: the program (a path, or a name looked up in PATH);
// `jobs_of_another_user`: the jobs run as another user (--job-user), whose processes only
// CAP_PERFMON or CAP_SYS_ADMIN let perf sample.
ProfilingSupport profiling_support(const std::string& perf = "perf", bool jobs_of_another_user = false);

struct ProfileRequest {
  std::vector<pid_t> pids;  // each sampled with all its threads
  std::chrono::milliseconds duration{1000};
  int frequency_hz = 999;  // samples a second of a thread's CPU time; off the kernel's tick
  // How stacks are unwound: "fp" (frame pointers: cheap, but a frame built without them cuts
  // its stack short) or "dwarf" (the stack copied at each sample and unwound from debug
  // information: deeper, dearer).
  std::string call_graph = "fp";
  // Asked every 100 ms while the agent waits for perf: true (the job's call was cancelled)
  // stops perf and throws EnvironmentError, so that no slot is held for perf's time limits.
  std::function<bool()> cancelled;
  // WindowProfile::start returns once perf samples (it starts perf with its events off and
  // turns them on through its control FIFO, waiting for the acknowledgement, at most 10 s), so
  // that a short profile's duration is all sampled however slowly perf starts. Otherwise it
  // returns at once and perf samples from when it has attached.
  bool wait_until_sampling = false;
};

// A profile of a window whose end is not known at its start (a load's measured window): perf
// samples the request's processes (those still running; its duration is not used) from
// start() until stop(). Its files are in a folder of its own (mode 0700) made under
// `parent_dir` and removed with it.
class WindowProfile {
 public:
  // Throws EnvironmentError when perf is not there or no process is left.
  static std::unique_ptr<WindowProfile> start(const ProfileRequest& request,
                                              const std::filesystem::path& parent_dir,
                                              const std::string& perf = "perf");
  ~WindowProfile();  // without stop(): perf is stopped, nothing is kept
  WindowProfile(const WindowProfile&) = delete;
  WindowProfile& operator=(const WindowProfile&) = delete;
  // Ends the recording (perf writes its file and exits): the window's end. Throws
  // EnvironmentError with perf's last lines when perf could not record. Once only.
  void end_recording();
  // Ends the recording if it still runs, and folds it, each stack rooted at its thread's name
  // (`perf script`, which may take seconds for a long window). Throws EnvironmentError as
  // end_recording() does, or when perf script fails.
  FoldedStacks stop();

 private:
  WindowProfile();
  struct State;
  std::unique_ptr<State> state_;
};

// Samples the request's processes (those still running) for its duration, counted from when
// perf samples (wait_until_sampling), and returns the folded stacks, each rooted at its thread's name. perf's
// files go to a folder of their own (mode 0700) made under `parent_dir` and removed before it returns. Throws
// EnvironmentError with perf's last lines when perf cannot record (not installed, not allowed, no process
// left).
FoldedStacks profile_processes(const ProfileRequest& request, const std::filesystem::path& parent_dir,
                               const std::string& perf = "perf");

}  // namespace loadlab::agent
