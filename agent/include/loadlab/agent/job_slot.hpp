#pragma once
// One job of a kind at a time. A job whose stream has ended but whose child is still being
// stopped is "stopping": a new job waits for it (bounded) instead of being refused, so a
// controller that cancels a cell and starts the next one at once is not told "busy".
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

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool busy_ = false, stopping_ = false;
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

 private:
  JobSlot& slot_;
  bool owned_;
};

}  // namespace loadlab::agent
