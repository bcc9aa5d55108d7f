#pragma once
// The intended send times of one worker in open loop (--rate). Slot m is due at
// start + m / rate; connection i of n owns slots i, i + n, i + 2n, ..., so its k-th request
// is slot k * n + i and the worker's connections take turns at an even pace. A connection
// whose previous request is still in flight when its slot comes sends late, and its latency
// still counts from the slot's time (the correction for coordinated omission). Internal.
#include <chrono>
#include <cstdint>

#include "run_plan.hpp"

namespace loadlab::load {

class Schedule {
 public:
  Schedule() = default;
  Schedule(Clock::time_point start, double rate_per_s, int connections)
      : start_(start), ns_per_slot_(1e9 / rate_per_s), connections_(connections) {}

  Clock::time_point slot_time(int64_t slot) const {
    return start_ + std::chrono::nanoseconds(static_cast<int64_t>(static_cast<double>(slot) * ns_per_slot_));
  }
  // The time of connection `index`'s `k`-th request.
  Clock::time_point time_of(int index, int64_t k) const { return slot_time(k * connections_ + index); }
  int connection_of(int64_t slot) const { return static_cast<int>(slot % connections_); }
  int64_t turn_of(int64_t slot) const { return slot / connections_; }

 private:
  Clock::time_point start_{};
  double ns_per_slot_ = 0;
  int connections_ = 1;
};

}  // namespace loadlab::load
