#pragma once
// The intended send times of one worker in open loop (--rate): a single sequence of slots
// that the worker's connections share as a pool. A connection that is free takes the next
// slot nobody has taken (Worker::take_slot) and sends at its time; a slot that comes while
// every connection is busy goes to the first one to be free, late. A request therefore waits
// in the client only when all of the thread's connections are in use, as with a client's
// connection pool, never behind one busy connection while another is idle (a connection of
// its own per stream of arrivals, as wrk2 has, adds a queue per connection: at 70 % of a
// one-thread server's capacity and as many connections as rate × p99, it put the p99 15-50 %
// above the server's own).
//
// Uniform arrivals (the default): slot m is due at start + m / rate.
//
// Poisson arrivals (--arrivals poisson): the gaps between slots are exponential of mean
// 1 / rate, drawn from the worker's own stream of the run's seed, so the worker's sends are a
// Poisson process of `rate` (and the threads' together one of their summed rates), and the
// same seed gives the same send times.
//
// A request whose slot comes while every connection (HTTP/2, h3: every stream) is busy sends
// late, and its latency still counts from the intended time (the correction for coordinated
// omission). Internal.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>

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
  Schedule(Clock::time_point start, double rate_per_s) : start_(start), ns_per_slot_(1e9 / rate_per_s) {}
  // Poisson arrivals: `stream` tells this worker's draws from other workers' of the same seed.
  Schedule(Clock::time_point start, double rate_per_s, uint64_t seed, uint64_t stream)
      : Schedule(start, rate_per_s) {
    uint64_t s = seed ^ (stream * 0xd1b54a32d192ed03ULL);
    const uint64_t a = splitmix64(s);
    uint64_t t = a;
    lane_.seed = splitmix64(t);
    lane_.mean_ns = ns_per_slot_;
    lane_.reset();
    poisson_ = true;
  }

  bool poisson() const { return poisson_; }

  // Uniform arrivals: the time of slot `slot`.
  Clock::time_point slot_time(int64_t slot) const {
    double ns = std::min(static_cast<double>(slot) * ns_per_slot_, kHorizonNs);
    return start_ + std::chrono::nanoseconds(static_cast<int64_t>(ns));
  }
  // The time of slot `m` (m = 0, 1, 2...), whichever the arrivals. Poisson: in order is O(1)
  // a call; going back draws the stream again from its start.
  Clock::time_point time_of(int64_t m) const {
    if (!poisson_) return slot_time(m);
    if (m < lane_.k) lane_.reset();
    while (lane_.k < m) lane_.advance();
    return at(lane_.ns);
  }
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
  // Slots due in [from, to). Poisson: the stream is drawn again from its start
  // (O(rate × (to - start))), so call it once, at the end.
  int64_t slots_between(Clock::time_point from, Clock::time_point to) const {
    if (to <= from) return 0;
    if (!poisson_) return first_slot_at(to) - first_slot_at(from);
    Lane lane = lane_;
    lane.reset();
    while (at(lane.ns) < from) lane.advance();
    const int64_t first = lane.k;
    while (at(lane.ns) < to) lane.advance();
    return lane.k - first;
  }

 private:
  // The Poisson stream: its k-th time, `ns` after the start.
  struct Lane {
    uint64_t seed = 0;
    double mean_ns = 0;  // of a gap: 1 / rate
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
  bool poisson_ = false;
  mutable Lane lane_;  // Poisson: where the stream was last read
};

}  // namespace loadlab::load
