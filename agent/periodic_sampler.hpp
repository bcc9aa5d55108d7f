#pragma once
// Samples a usage window periodically on its own thread until destroyed. `on_tick` runs
// on that thread after each sample (e.g. to notice that the child died); returning false
// ends the sampling. Internal to the agent library.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "loadlab/agent/usage_window.hpp"

namespace loadlab::agent {

class PeriodicSampler {
 public:
  PeriodicSampler(UsageWindow& window, int interval_ms, std::function<bool()> on_tick)
      : thread_([this, &window, interval_ms, on_tick = std::move(on_tick)] {
          std::unique_lock lock(mutex_);
          while (!stop_) {
            cv_.wait_for(lock, std::chrono::milliseconds(interval_ms));
            if (stop_) break;
            lock.unlock();
            window.sample();
            bool go_on = !on_tick || on_tick();
            lock.lock();
            if (!go_on) break;
          }
        }) {}
  ~PeriodicSampler() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  PeriodicSampler(const PeriodicSampler&) = delete;
  PeriodicSampler& operator=(const PeriodicSampler&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;  // last: starts after the members it uses
};

}  // namespace loadlab::agent
