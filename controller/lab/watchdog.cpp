#include "lab/watchdog.hpp"

#include <algorithm>

namespace loadlab::controller {

namespace {

class SteadyClock : public DeadlineClock {
 public:
  Clock::time_point now() override { return Clock::now(); }
  void wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                  Clock::time_point until) override {
    cv.wait_until(lock, until);
  }
};

}  // namespace

DeadlineClock& DeadlineClock::real() {
  static SteadyClock clock;
  return clock;
}

void try_cancel(grpc::ClientContext& ctx) { ctx.TryCancel(); }

Watchdog::Watchdog(const std::atomic<int>* stop, DeadlineClock& clock, CallCanceller cancel)
    : stop_(stop), clock_(clock), cancel_(std::move(cancel)), thread_([this] { loop(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mutex_);
    done_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Watchdog::watch(grpc::ClientContext* ctx) {
  std::lock_guard lock(mutex_);
  contexts_.push_back(ctx);
}

void Watchdog::unwatch(grpc::ClientContext* ctx) {
  std::lock_guard lock(mutex_);
  contexts_.erase(std::remove(contexts_.begin(), contexts_.end(), ctx), contexts_.end());
}

void Watchdog::arm(const std::string& phase, double seconds) {
  std::lock_guard lock(mutex_);
  phase_ = phase;
  limit_s_ = seconds;
  deadline_ =
      clock_.now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  cv_.notify_all();
}

void Watchdog::cancel_all() {
  std::lock_guard lock(mutex_);
  // Newest first: the load calls before the target call they load.
  for (auto it = contexts_.rbegin(); it != contexts_.rend(); ++it) cancel_(**it);
}

std::string Watchdog::expired() const {
  std::lock_guard lock(mutex_);
  return expired_;
}

CellError Watchdog::error(const std::string& phase, const std::string& message, grpc::StatusCode code) const {
  std::lock_guard lock(mutex_);
  if (expired_ == kInterrupted)
    return CellError(expired_, "the run is shutting down (signal " + std::to_string(stop_->load()) + ")",
                     grpc::StatusCode::CANCELLED);
  if (!expired_.empty())
    return CellError(
        expired_,
        "phase '" + expired_ + "' ran out after " + std::to_string(static_cast<int>(limit_s_)) + " s",
        grpc::StatusCode::DEADLINE_EXCEEDED);
  return CellError(phase, message, code);
}

void Watchdog::loop() {
  std::unique_lock lock(mutex_);
  while (!done_) {
    if (!expired_.empty() || (phase_.empty() && !stop_)) {
      cv_.wait(lock);  // nothing to time until the next arm()
      continue;
    }
    auto wake = phase_.empty() ? clock_.now() + kStopPoll : deadline_;
    if (stop_) wake = std::min(wake, clock_.now() + kStopPoll);
    clock_.wait_until(lock, cv_, wake);
    if (done_ || !expired_.empty()) continue;
    if (stop_ && stop_->load() != 0)
      expire(kInterrupted);
    else if (!phase_.empty() && clock_.now() >= deadline_)
      expire(phase_);
  }
}

void Watchdog::expire(const std::string& phase) {
  expired_ = phase;
  for (auto* c : contexts_) cancel_(*c);
}

}  // namespace loadlab::controller
