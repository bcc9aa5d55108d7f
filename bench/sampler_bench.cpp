// The sampler's own CPU cost: a tree of N processes sampled at a given rate.
//
//   sampler_bench [PROCESSES=64] [HZ=10] [SECONDS=10]
//
// Prints the sampling thread's CPU as % of one core, for the default tree walk
// (/proc/PID/task/*/children) and for the fallback full /proc scan, side by side.
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "loadlab/agent/child_process.hpp"
#include "loadlab/agent/usage_window.hpp"

namespace {

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// The real /proc, but pretending the kernel cannot list children: the full-scan path.
class ScanOnlyReader : public loadlab::agent::ProcFsReader {
 public:
  std::optional<std::vector<pid_t>> children(pid_t, uint32_t) override { return std::nullopt; }
};

double measure(loadlab::agent::ProcReader& reader, pid_t root, int hz, double seconds, uint32_t& processes) {
  loadlab::agent::UsageWindow w(reader, root, loadlab::agent::monotonic_seconds);
  double cpu0 = thread_cpu_s();
  w.start();
  auto next = std::chrono::steady_clock::now();
  int n = static_cast<int>(seconds * hz);
  for (int i = 0; i < n; ++i) {
    next += std::chrono::microseconds(1'000'000 / hz);
    std::this_thread::sleep_until(next);
    w.sample();
  }
  auto f = w.finish("bench");
  processes = f.processes();
  return (thread_cpu_s() - cpu0) / seconds * 100.0;
}

}  // namespace

int main(int argc, char** argv) {
  int processes = argc > 1 ? std::atoi(argv[1]) : 64;
  int hz = argc > 2 ? std::atoi(argv[2]) : 10;
  double seconds = argc > 3 ? std::atof(argv[3]) : 10;
  if (processes < 1 || hz < 1 || seconds <= 0) {
    std::fprintf(stderr, "usage: sampler_bench [PROCESSES>=1] [HZ>=1] [SECONDS>0]\n");
    return 2;
  }
  // One shell and processes-1 sleeping children.
  std::string script =
      "for i in $(seq " + std::to_string(processes - 1) + "); do sleep 600 & done; echo ready; wait";
  auto tree = loadlab::agent::ChildProcess::spawn({"/bin/sh", "-c", script});
  std::string line;
  tree->next_line(line, std::chrono::seconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));

  loadlab::agent::ProcFsReader walk;
  ScanOnlyReader scan;
  uint32_t seen_walk = 0, seen_scan = 0;
  double walk_pct = measure(walk, tree->pid(), hz, seconds, seen_walk);
  double scan_pct = measure(scan, tree->pid(), hz, seconds, seen_scan);
  tree->terminate();
  std::printf("sampler cost, %d processes at %d Hz over %.0f s (%% of one core):\n", processes, hz, seconds);
  std::printf("  tree walk (default): %.3f %%  (%u processes seen)\n", walk_pct, seen_walk);
  std::printf("  full /proc scan:     %.3f %%  (%u processes seen)\n", scan_pct, seen_scan);
  std::printf("  ratio scan/walk:     %.2f\n", walk_pct > 0 ? scan_pct / walk_pct : 0.0);
  return 0;
}
