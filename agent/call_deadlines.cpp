#include "call_deadlines.hpp"

#include <algorithm>

#include "loadlab/shared/logging.hpp"

namespace loadlab::agent {

CallDeadlines::CallDeadlines(grpc::ServerContext& ctx, std::chrono::milliseconds idle, std::string what,
                             LeaseExpiries& expiries)
    : ctx_(ctx), idle_(idle), what_(std::move(what)), expiries_(expiries), thread_([this] { watch(); }) {}

CallDeadlines::~CallDeadlines() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void CallDeadlines::limit_lifetime(std::chrono::milliseconds lifetime) {
  end_of_life_.store(now_ns() + std::chrono::duration_cast<std::chrono::nanoseconds>(lifetime).count());
}

void CallDeadlines::watch() {
  // A tenth of the idle timeout, at most a quarter second: the deadline is kept within 10 %.
  const auto period = std::min<std::chrono::milliseconds>(idle_ / 10, std::chrono::milliseconds(250));
  std::unique_lock lock(mutex_);
  while (!cv_.wait_for(lock, period, [this] { return stop_; })) {
    const int64_t now = now_ns();
    const int64_t idle_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(idle_).count();
    const int64_t reading = reading_since_.load(), writing = writing_since_.load(), end = end_of_life_.load();
    std::string why;
    if ((reading != 0 && now - reading > idle_ns) || (writing != 0 && now - writing > idle_ns)) {
      why = "its peer kept it waiting longer than the idle timeout (" +
            std::to_string(std::chrono::duration_cast<std::chrono::seconds>(idle_).count()) + " s)";
      ++expiries_.idle;
    } else if (end != 0 && now > end) {
      why =
          "it ran past its lifetime (its warm-up and duration, or the agent's --max-duration-s, plus grace)";
      ++expiries_.lifetime;
    }
    if (why.empty()) continue;
    component_logger("agent")->warn("ending {}: {}", what_, why);
    ctx_.TryCancel();
    return;
  }
}

}  // namespace loadlab::agent
