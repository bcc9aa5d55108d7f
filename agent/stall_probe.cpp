#include "loadlab/agent/stall_probe.hpp"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>

namespace loadlab::agent {

StallProbe::StallProbe(std::vector<uint32_t> cpus) {
  if (cpus.empty()) {
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    for (long c = 0; c < std::max(online, 1L); ++c) cpus.push_back(static_cast<uint32_t>(c));
  }
  if (cpus.size() > kMaxCpus) cpus.resize(kMaxCpus);
  threads_.reserve(cpus.size());
  for (uint32_t cpu : cpus) threads_.emplace_back([this, cpu] { probe(cpu); });
}

StallProbe::~StallProbe() { stop(); }

StallProbe::Figures StallProbe::stop() {
  stop_.store(true);
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  std::lock_guard lock(mutex_);
  return figures_;
}

void StallProbe::probe(uint32_t cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  const bool pinned = pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
  sched_param param{};
  param.sched_priority = kStallProbePriority;
  // Not allowed (no CAP_SYS_NICE, a cgroup without real-time time): the probe runs at normal
  // priority, and beside a busy process wakes up to a few ms late, below kStallMs.
  if (pinned) pthread_setschedparam(pthread_self(), SCHED_FIFO, &param);
  Figures mine;
  using Clock = std::chrono::steady_clock;
  while (!stop_.load(std::memory_order_relaxed)) {
    const auto before = Clock::now();
    std::this_thread::sleep_for(kPeriod);
    const double late_ms = std::chrono::duration<double, std::milli>(Clock::now() - before - kPeriod).count();
    mine.longest_ms = std::max(mine.longest_ms, late_ms);
    if (late_ms >= kStallMs) {
      ++mine.stalls;
      mine.total_ms += late_ms;
    }
  }
  std::lock_guard lock(mutex_);
  figures_.stalls += mine.stalls;
  figures_.longest_ms = std::max(figures_.longest_ms, mine.longest_ms);
  figures_.total_ms += mine.total_ms;
}

}  // namespace loadlab::agent
