#pragma once
// What the stream reader threads of a repetition hand to its thread: an event of the
// target stream or of one load stream, or the end of one. One queue for all streams, so
// that a target agent lost mid-cell is noticed at once, not when the load ends.
#include <grpcpp/support/status.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>

#include "loadlab/v1/agent.pb.h"

namespace loadlab::controller {

struct StreamMessage {
  static constexpr size_t kTarget = SIZE_MAX;
  size_t source = kTarget;  // kTarget, or the index of the load agent
  bool end = false;         // the stream ended; no event
  grpc::Status status;      // a load stream's, with `end` (the target's is read by its owner)
  v1::TargetEvent target_event;
  v1::LoadEvent load_event;
  // When the reader thread read a ClockEcho (controller_now_ns()): the echo's fourth
  // timestamp, taken before the message waits in this queue.
  int64_t read_ns = 0;
};

// Reader threads push; the repetition's thread pops.
class StreamEvents {
 public:
  void push(StreamMessage m) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(m));
    }
    cv_.notify_one();
  }
  // Blocks until a message is there. Never forever: the watchdog cancels the streams.
  StreamMessage pop() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return !queue_.empty(); });
    auto m = std::move(queue_.front());
    queue_.pop_front();
    return m;
  }
  // The same, but none once `until` has passed.
  std::optional<StreamMessage> pop_until(std::chrono::steady_clock::time_point until) {
    std::unique_lock lock(mutex_);
    if (!cv_.wait_until(lock, until, [&] { return !queue_.empty(); })) return std::nullopt;
    auto m = std::move(queue_.front());
    queue_.pop_front();
    return m;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<StreamMessage> queue_;
};

}  // namespace loadlab::controller
