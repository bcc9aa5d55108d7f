#pragma once
// Ground truth for CPU figures: the scheduler's own count of the run time of every thread
// of a process (/proc/PID/task/TID/schedstat, ns), a source the agent does not read.
#include <sys/types.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace loadlab::testing {

// Seconds of CPU all threads of `pid` have run so far; 0 if it is gone.
inline double schedstat_s(pid_t pid) {
  double total_ns = 0;
  std::error_code ec;
  for (auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream f(task.path() / "schedstat");
    double ns = 0;
    if (f >> ns) total_ns += ns;
  }
  return total_ns / 1e9;
}

}  // namespace loadlab::testing
