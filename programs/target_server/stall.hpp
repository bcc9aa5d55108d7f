#pragma once
// The `--stall AFTER_MS:DURATION_MS` knob: once, AFTER_MS after the first request arrives,
// every response of every connection is held until DURATION_MS after the stall began.
// A pure function of time and the first request's arrival, shared by all io threads with one
// atomic, so no thread has to tell another that the stall started or ended.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>

namespace loadlab::target {

class Stall {
 public:
  using Clock = std::chrono::steady_clock;

  Stall() = default;
  Stall(std::chrono::milliseconds after, std::chrono::milliseconds duration)
      : enabled_(duration.count() > 0), after_(after), duration_(duration) {}

  bool enabled() const { return enabled_; }

  // Any io thread, on every request read: the first call fixes the stall's start.
  void note_request(Clock::time_point now) {
    if (!enabled_ || first_ns_.load(std::memory_order_relaxed) != 0) return;
    std::int64_t expected = 0;
    first_ns_.compare_exchange_strong(expected, now.time_since_epoch().count() | 1,
                                      std::memory_order_relaxed);
  }

  // Any io thread, when a response is ready at `now`: until when it must be held, if at all.
  std::optional<Clock::time_point> hold_until(Clock::time_point now) const {
    if (!enabled_) return std::nullopt;
    auto first = first_ns_.load(std::memory_order_relaxed);
    if (first == 0) return std::nullopt;
    auto begin = Clock::time_point(Clock::duration(first)) + after_;
    auto end = begin + duration_;
    if (now < begin || now >= end) return std::nullopt;
    return end;
  }

 private:
  bool enabled_ = false;
  std::chrono::milliseconds after_{0};
  std::chrono::milliseconds duration_{0};
  std::atomic<std::int64_t> first_ns_{0};  // steady ns of the first request (| 1), 0 = none yet
};

}  // namespace loadlab::target
