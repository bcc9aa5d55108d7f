#include "loadlab/agent/job_slot.hpp"

namespace loadlab::agent {

bool JobSlot::acquire(std::chrono::milliseconds wait_for_stopping) {
  // A holder whose call was just cancelled notices within its polling period (100 ms) and
  // then stops its child: give it a moment to say so, then wait for the stop to finish.
  const auto now = std::chrono::steady_clock::now();
  const auto notice_deadline = now + std::chrono::milliseconds(500);
  const auto stop_deadline = now + wait_for_stopping;
  std::unique_lock lock(mutex_);
  while (busy_) {
    auto t = std::chrono::steady_clock::now();
    if (t >= stop_deadline || (!stopping_ && t >= notice_deadline)) break;
    cv_.wait_until(lock, stopping_ ? stop_deadline : notice_deadline);
  }
  if (busy_) return false;
  busy_ = true;
  stopping_ = false;
  ++starts_;
  return true;
}

void JobSlot::mark_stopping() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
}

void JobSlot::release() {
  {
    std::lock_guard lock(mutex_);
    busy_ = false;
    stopping_ = false;
    running_.store(0);
  }
  cv_.notify_all();
}

bool JobSlot::busy() const {
  std::lock_guard lock(mutex_);
  return busy_;
}

}  // namespace loadlab::agent
