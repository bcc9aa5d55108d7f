#pragma once
// What the scheduled-start tests read: the machine's CLOCK_MONOTONIC (every clock on one
// machine), a load worker's next event, and the rate bound of a delay-bound cell. Shared by
// tests/process/integration/scheduled_start_test.cpp and
// tests/timing/integration/scheduled_start_truth_test.cpp.
#include <gtest/gtest.h>
#include <time.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "loadlab/agent/child_process.hpp"
#include "loadlab/proto/json.hpp"
#include "loadlab/v1/agent.pb.h"

namespace loadlab::scheduled_start_support {

using namespace std::chrono_literals;

inline int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// N connections to a one-thread server of `delay_ms`: at most N / delay requests a second,
// and at least 3/4 of it even when each request also waits a few ms for a CPU (another
// process busy on a core): what a window measured over a wrong span, or serialized, misses.
inline void expect_delay_bound_qps(double qps, int connections, int delay_ms) {
  const double bound = connections * 1000.0 / delay_ms;
  EXPECT_LE(qps, bound * 1.02);
  EXPECT_GE(qps, bound * 0.75);
}

// The worker's next event, skipping progress; EVENT_NOT_SET when none came in `timeout`.
inline v1::LoadEvent next_event(agent::ChildProcess& worker, std::chrono::milliseconds timeout,
                                std::vector<v1::Progress>* progress = nullptr) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  std::string line;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left <= 0ms || worker.next_line(line, left) != agent::ChildProcess::LineStatus::kLine) return {};
    v1::LoadEvent ev;
    proto::from_json(line, &ev);
    if (!ev.has_progress()) return ev;
    if (progress) progress->push_back(ev.progress());
  }
}

}  // namespace loadlab::scheduled_start_support
