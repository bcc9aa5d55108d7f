#pragma once
// Simulated time for the watchdog: it moves only when the test calls advance().
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "lab/watchdog.hpp"

namespace loadlab::controller {

class SimulatedClock : public DeadlineClock {
 public:
  Clock::time_point now() override {
    std::lock_guard lock(mutex_);
    return now_;
  }
  // Returns when `until` has come or after a millisecond of real time, whichever is first:
  // the caller re-checks, as after a spurious wakeup. Polling spares the clock from keeping
  // pointers to its waiters' condition variables, which may be gone by the next advance().
  void wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                  Clock::time_point until) override {
    if (now() >= until) return;
    cv.wait_for(lock, std::chrono::milliseconds(1));
  }
  void advance(Clock::duration d) {
    std::lock_guard lock(mutex_);
    now_ += d;
  }

 private:
  std::mutex mutex_;
  Clock::time_point now_{};
};

}  // namespace loadlab::controller
