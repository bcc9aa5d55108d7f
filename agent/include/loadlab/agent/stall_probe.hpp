#pragma once
// Notices a job's CPUs stopping for everything on them: the hypervisor preempting the VM's
// virtual CPU (a host that does not report steal shows nothing else), or a kernel thread that
// does not yield. Neither shows as other work in the busy-machine check, yet a 20 ms stop
// queues every request that arrives meanwhile and moves a p99 by more than its tolerance.
//
// One thread per CPU of the job, pinned to it and at real-time priority when the agent may
// set one (SCHED_FIFO 1: it then runs the moment it wakes, so a wake-up is late only if the
// CPU itself was gone, idle or beside a `yes`; how late it woke on this project's VM:
// docs/measurements/capacity.md), sleeps kPeriod at a time and measures how late it woke. A
// wake-up kStallMs or more late is a stall. Its cost: 200 wake-ups a second a CPU, a few µs each.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace loadlab::agent {

// The real-time priorities (SCHED_FIFO) of the agent's threads, lowest first: the stall
// probe's; a load agent's window opening at a scheduled instant; the target's. At one
// priority, a target agent beside 50 load agents on 2 cores opened its window 10-100 ms late,
// queued behind their windows opening at the same instant, each reading its worker's tree.
constexpr int kStallProbePriority = 1;
constexpr int kLoadWindowPriority = 2;
constexpr int kTargetWindowPriority = 3;

class StallProbe {
 public:
  static constexpr std::chrono::milliseconds kPeriod{5};
  static constexpr double kStallMs = 5;
  static constexpr size_t kMaxCpus = 256;  // a probe on each of the first 256 of a job's CPUs

  struct Figures {
    uint32_t stalls = 0;
    double longest_ms = 0;  // the latest wake-up, a stall or not
    double total_ms = 0;    // summed over the stalls
  };

  // Starts probing `cpus` (every online CPU when empty).
  explicit StallProbe(std::vector<uint32_t> cpus);
  ~StallProbe();
  StallProbe(const StallProbe&) = delete;
  StallProbe& operator=(const StallProbe&) = delete;

  // Stops the threads (at most kPeriod later) and gives what they saw since the start.
  Figures stop();

 private:
  void probe(uint32_t cpu);

  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  Figures figures_;
  std::vector<std::thread> threads_;
};

}  // namespace loadlab::agent
