#pragma once
// The deadlines of a repetition's phases. The watchdog cancels the repetition's calls when
// the current phase outlives its deadline, so that no blocking Read waits forever, and
// names that phase in the failure; it cancels them too when the run is shutting down.
#include <grpcpp/client_context.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/errors.hpp"

namespace loadlab::controller {

// Time as the watchdog sees it: the steady clock, or a test's simulated clock that moves
// only when the test moves it. (retry.hpp's WaitClock advances when slept, which suits a
// loop that sleeps; the watchdog waits instead, and is woken early by a new phase.)
class DeadlineClock {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~DeadlineClock() = default;
  virtual Clock::time_point now() = 0;
  // Blocks until `cv` is notified or now() reaches `until`; it may also return early, as
  // condition variables do. `lock` holds the mutex that guards cv's condition.
  virtual void wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                          Clock::time_point until) = 0;
  static DeadlineClock& real();
};

// Cancels one call, from the watchdog's thread or the repetition's. gRPC's TryCancel for a
// real stub. A test's fake stub cannot see TryCancel (a ClientContext tells no one), so a
// test passes one that ends the fake stream started with `ctx`.
using CallCanceller = std::function<void(grpc::ClientContext& ctx)>;
void try_cancel(grpc::ClientContext& ctx);

class Watchdog {
 public:
  // `*stop` nonzero (SIGINT/SIGTERM) cancels the calls within kStopPoll, as the phase
  // "interrupted"; `stop` may be null.
  explicit Watchdog(const std::atomic<int>* stop, DeadlineClock& clock = DeadlineClock::real(),
                    CallCanceller cancel = try_cancel);
  ~Watchdog();  // joins its thread; no cancel comes after it returns

  // The calls below are made by the repetition's thread.
  // Cancels `ctx` with the others from now on, until unwatch(ctx).
  void watch(grpc::ClientContext* ctx);
  void unwatch(grpc::ClientContext* ctx);
  // Starts `phase`, which must be over within `seconds` of now.
  void arm(const std::string& phase, double seconds);
  // Cancels every watched call now (the repetition failed and is being torn down).
  void cancel_all();
  // The phase that ran out, "interrupted", or "" if neither happened.
  std::string expired() const;
  // The failure to report: the phase that ran out, or the interruption, when the watchdog
  // cancelled the calls (their errors are its doing); else CellError(phase, message, code).
  CellError error(const std::string& phase, const std::string& message,
                  grpc::StatusCode code = grpc::StatusCode::UNKNOWN) const;

  static constexpr std::chrono::milliseconds kStopPoll{100};  // how soon a signal cancels the cell

 private:
  using Clock = DeadlineClock::Clock;
  static constexpr const char* kInterrupted = "interrupted";

  void loop();
  void expire(const std::string& phase);  // mutex_ held

  const std::atomic<int>* stop_;
  DeadlineClock& clock_;
  CallCanceller cancel_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<grpc::ClientContext*> contexts_;
  std::string phase_, expired_;
  double limit_s_ = 0;
  Clock::time_point deadline_;
  bool done_ = false;
  std::thread thread_;  // last: started once the rest is built
};

}  // namespace loadlab::controller
