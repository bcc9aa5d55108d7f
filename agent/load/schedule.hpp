#pragma once
// The intended send times of one worker in open loop (--rate).
//
// Uniform arrivals (the default): slot m is due at start + m / rate; connection i of n owns
// slots i, i + n, i + 2n, ..., so its k-th request is slot k * n + i and the worker's
// connections take turns at an even pace.
//
// Poisson arrivals (--arrivals poisson): each connection i is a Poisson process of rate / n
// (exponential gaps drawn from its own stream of the run's seed, the worker and i), so the
// worker's requests together are a Poisson process of `rate` (a sum of independent Poisson
// processes is one), and the same seed gives the same send times. A connection asks for its
// times in order, so each keeps its place in its stream.
//
// A connection whose previous request is still in flight when its time comes (HTTP/2: all of
// whose streams are busy) sends late, and its latency still counts from the intended time
// (the correction for coordinated omission). Internal.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <vector>

#include "run_plan.hpp"

namespace loadlab::load {

// SplitMix64's step (Steele, Lea, Flood 2014): a fixed function of its state, so that a stream
// of draws is the same on every machine and library (std::exponential_distribution's is not).
inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class Schedule {
 public:
  // Slot times are capped this far after `start` (about 31 years): any rate the options
  // allow, times any slot number, stays a finite time that a timer and a deadline compare with.
  static constexpr double kHorizonNs = 1e18;

  Schedule() = default;
  Schedule(Clock::time_point start, double rate_per_s, int connections)
      : start_(start), ns_per_slot_(1e9 / rate_per_s), connections_(connections) {}
  // Poisson arrivals: `stream` tells this worker's draws from other workers' of the same seed.
  Schedule(Clock::time_point start, double rate_per_s, int connections, uint64_t seed, uint64_t stream)
      : Schedule(start, rate_per_s, connections) {
    lanes_.resize(static_cast<std::size_t>(std::max(connections, 0)));
    for (std::size_t i = 0; i < lanes_.size(); ++i) {
      uint64_t s = seed ^ (stream * 0xd1b54a32d192ed03ULL);
      const uint64_t a = splitmix64(s);
      uint64_t t = a ^ (static_cast<uint64_t>(i) * 0x8cb92ba72f3d8dd7ULL);
      lanes_[i].seed = splitmix64(t);
      lanes_[i].mean_ns = ns_per_slot_ * connections;
      lanes_[i].reset();
    }
  }

  bool poisson() const { return !lanes_.empty(); }

  // Uniform arrivals: the time of slot `slot`.
  Clock::time_point slot_time(int64_t slot) const {
    double ns = std::min(static_cast<double>(slot) * ns_per_slot_, kHorizonNs);
    return start_ + std::chrono::nanoseconds(static_cast<int64_t>(ns));
  }
  // The time of connection `index`'s `k`-th request (k = 0, 1, 2...). Poisson: in order is
  // O(1) a call; going back starts the connection's stream again.
  Clock::time_point time_of(int index, int64_t k) const {
    if (!poisson()) return slot_time(k * connections_ + index);
    Lane& lane = lanes_[static_cast<std::size_t>(index)];
    if (k < lane.k) lane.reset();
    while (lane.k < k) lane.advance();
    return at(lane.ns);
  }
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
  // Slots due in [from, to), over all connections. Poisson: each connection's stream is
  // drawn again from its start (O(rate × (to - start))), so call it once, at the end.
  int64_t slots_between(Clock::time_point from, Clock::time_point to) const {
    if (to <= from) return 0;
    if (!poisson()) return first_slot_at(to) - first_slot_at(from);
    int64_t due = 0;
    for (const Lane& l : lanes_) {
      Lane lane = l;
      lane.reset();
      while (at(lane.ns) < from) lane.advance();
      const int64_t first = lane.k;
      while (at(lane.ns) < to) lane.advance();
      due += lane.k - first;
    }
    return due;
  }

 private:
  // One connection's Poisson stream: its k-th time, `ns` after the start.
  struct Lane {
    uint64_t seed = 0;
    double mean_ns = 0;  // of a gap: connections / rate
    uint64_t state = 0;
    int64_t k = 0;
    double ns = 0;
    void reset() {
      state = seed;
      k = 0;
      ns = std::min(gap(), kHorizonNs);
    }
    // An exponential gap: -ln(u) × mean for u uniform in (0, 1] (53 bits).
    double gap() {
      const double u = static_cast<double>((splitmix64(state) >> 11) + 1) * 0x1.0p-53;
      return -std::log(u) * mean_ns;
    }
    void advance() {
      ns = std::min(ns + gap(), kHorizonNs);
      ++k;
    }
  };

  Clock::time_point at(double ns) const {
    return start_ + std::chrono::nanoseconds(static_cast<int64_t>(std::min(ns, kHorizonNs)));
  }

  Clock::time_point start_{};
  double ns_per_slot_ = 0;
  int connections_ = 1;
  mutable std::vector<Lane> lanes_;  // Poisson: one per connection; empty for uniform arrivals
};

}  // namespace loadlab::load
