#pragma once
// The intended send times of one worker in open loop (--rate). Slot m is due at
// start + m / rate; connection i of n owns slots i, i + n, i + 2n, ..., so its k-th request
// is slot k * n + i and the worker's connections take turns at an even pace. A connection
// whose previous request is still in flight when its slot comes (HTTP/2: all of whose
// streams are busy) sends late, and its latency still counts from the slot's time (the
// correction for coordinated omission). Internal.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>

#include "run_plan.hpp"

namespace loadlab::load {

class Schedule {
 public:
  // Slot times are capped this far after `start` (about 31 years): any rate the options
  // allow, times any slot number, stays a finite time that a timer and a deadline compare with.
  static constexpr double kHorizonNs = 1e18;

  Schedule() = default;
  Schedule(Clock::time_point start, double rate_per_s, int connections)
      : start_(start), ns_per_slot_(1e9 / rate_per_s), connections_(connections) {}

  Clock::time_point slot_time(int64_t slot) const {
    double ns = std::min(static_cast<double>(slot) * ns_per_slot_, kHorizonNs);
    return start_ + std::chrono::nanoseconds(static_cast<int64_t>(ns));
  }
  // The time of connection `index`'s `k`-th request.
  Clock::time_point time_of(int index, int64_t k) const { return slot_time(k * connections_ + index); }
  int connection_of(int64_t slot) const { return static_cast<int>(slot % connections_); }
  int64_t turn_of(int64_t slot) const { return slot / connections_; }
  // The first slot due at or after `t` (0 before the start).
  int64_t first_slot_at(Clock::time_point t) const {
    if (t <= start_) return 0;
    double ns = static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(t - start_).count());
    if (ns >= kHorizonNs) return static_cast<int64_t>(std::ceil(kHorizonNs / ns_per_slot_)) + 1;
    auto slot = static_cast<int64_t>(std::ceil(ns / ns_per_slot_));
    // Rounding in either division: step to the exact first slot.
    while (slot > 0 && slot_time(slot - 1) >= t) --slot;
    while (slot_time(slot) < t) ++slot;
    return slot;
  }
  // Slots due in [from, to).
  int64_t slots_between(Clock::time_point from, Clock::time_point to) const {
    return to <= from ? 0 : first_slot_at(to) - first_slot_at(from);
  }

 private:
  Clock::time_point start_{};
  double ns_per_slot_ = 0;
  int connections_ = 1;
};

}  // namespace loadlab::load
