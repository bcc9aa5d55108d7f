#pragma once
// One job of a kind at a time. A job whose stream has ended but whose child is still being
// stopped is "stopping": a new job waits for it (bounded) instead of being refused, so a
// controller that cancels a cell and starts the next one at once is not told "busy".
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace loadlab::agent {

class JobSlot {
 public:
  // True if the slot was taken; waits up to `wait_for_stopping` while the holder is stopping.
  bool acquire(std::chrono::milliseconds wait_for_stopping);
  void mark_stopping();
  void release();
  bool busy() const;
  // The job's process once it runs (0: none yet, or the slot is free): the metrics endpoint
  // reads its tree at a scrape.
  void set_running(pid_t pid) { running_.store(pid); }
  pid_t running() const { return running_.load(); }
  // Jobs accepted and jobs that ended in an error, since the agent started.
  uint64_t starts() const { return starts_.load(); }
  uint64_t failures() const { return failures_.load(); }
  void count_failure() { ++failures_; }

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool busy_ = false, stopping_ = false;
  std::atomic<pid_t> running_{0};
  std::atomic<uint64_t> starts_{0}, failures_{0};
};

// Calls ended by their deadlines (call_deadlines.hpp: the controller's hold on a job lapsed,
// or the job outlived its lifetime) since the agent started: its metrics.
struct LeaseExpiries {
  std::atomic<uint64_t> idle{0}, lifetime{0};
};

// Holds a job slot for the lifetime of a job (the gRPC thread serving its stream).
class JobLease {
 public:
  JobLease(JobSlot& slot, std::chrono::milliseconds wait) : slot_(slot), owned_(slot.acquire(wait)) {}
  ~JobLease() {
    if (owned_) slot_.release();
  }
  JobLease(const JobLease&) = delete;
  JobLease& operator=(const JobLease&) = delete;
  bool owned() const { return owned_; }
  // The job's stream has ended; its child is being stopped.
  void stopping() {
    if (owned_) slot_.mark_stopping();
  }
  // The job's process runs.
  void running(pid_t pid) {
    if (owned_) slot_.set_running(pid);
  }

 private:
  JobSlot& slot_;
  bool owned_;
};

}  // namespace loadlab::agent
