// Phase deadlines in simulated time: a phase that outlives its deadline cancels every call
// and names itself; a new phase replaces the old deadline; a signal interrupts.
#include "lab/watchdog.hpp"

#include <gtest/gtest.h>

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

#include "simulated_clock.hpp"

namespace loadlab::controller {
namespace {

using namespace std::chrono_literals;

// Records the calls the watchdog cancels.
class Cancels {
 public:
  CallCanceller canceller() {
    return [this](grpc::ClientContext& ctx) {
      std::lock_guard lock(mutex_);
      cancelled_.push_back(&ctx);
      cv_.notify_all();
    };
  }
  // The calls cancelled once `n` are, or after 5 s of real time.
  std::vector<grpc::ClientContext*> wait_for(size_t n) {
    std::unique_lock lock(mutex_);
    cv_.wait_for(lock, 5s, [&] { return cancelled_.size() >= n; });
    return cancelled_;
  }
  // The calls cancelled so far.
  std::vector<grpc::ClientContext*> so_far() {
    std::lock_guard lock(mutex_);
    return cancelled_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<grpc::ClientContext*> cancelled_;
};

// A simulated clock that counts the waits the watchdog's thread begins on it. The thread
// compares now() with its deadline after each wait returns, then begins the next: once two
// waits have begun after the clock moved, it has compared the new time at least once.
class CountingClock : public SimulatedClock {
 public:
  void wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                  Clock::time_point until) override {
    {
      std::lock_guard count_lock(count_mutex_);
      ++waits_;
    }
    counted_.notify_all();
    SimulatedClock::wait_until(lock, cv, until);
  }
  uint64_t waits() {
    std::lock_guard count_lock(count_mutex_);
    return waits_;
  }
  // True once `n` waits have begun; false after 10 s of real time.
  bool wait_for_waits(uint64_t n) {
    std::unique_lock count_lock(count_mutex_);
    return counted_.wait_for(count_lock, 10s, [&] { return waits_ >= n; });
  }

 private:
  std::mutex count_mutex_;
  std::condition_variable counted_;
  uint64_t waits_ = 0;
};

// The calls cancelled once the watchdog's thread has seen the time `clock` was just moved
// to (by state, not by a pause: a host that stops the vCPUs for 90 ms cannot hide a cancel).
// A watchdog that expired waits on no clock any more: its cancels are there to see.
std::vector<grpc::ClientContext*> settled(CountingClock& clock, Cancels& cancels) {
  const bool seen = clock.wait_for_waits(clock.waits() + 2);
  auto cancelled = cancels.so_far();
  EXPECT_TRUE(seen || !cancelled.empty()) << "the watchdog's thread did not look at the clock in 10 s";
  return cancelled;
}

TEST(Watchdog, APhaseThatOutlivesItsDeadlineCancelsEveryCallAndNamesItself) {
  CountingClock clock;
  Cancels cancels;
  grpc::ClientContext target, load;
  Watchdog w(nullptr, clock, cancels.canceller());
  w.watch(&target);
  w.watch(&load);
  w.arm("warmup", 31);
  clock.advance(30s);
  EXPECT_TRUE(settled(clock, cancels).empty());
  EXPECT_EQ(w.expired(), "");
  clock.advance(2s);
  EXPECT_EQ(cancels.wait_for(2), (std::vector<grpc::ClientContext*>{&target, &load}));
  EXPECT_EQ(w.expired(), "warmup");
  // The calls' own errors are the watchdog's doing: the failure names the phase instead.
  auto e = w.error("measure", "load agent cli: Cancelled", grpc::StatusCode::CANCELLED);
  EXPECT_EQ(e.phase(), "warmup");
  EXPECT_STREQ(e.what(), "warmup: phase 'warmup' ran out after 31 s");
  EXPECT_EQ(e.code(), grpc::StatusCode::DEADLINE_EXCEEDED);
}

TEST(Watchdog, ANewPhaseReplacesTheDeadlineOfThePreviousOne) {
  CountingClock clock;
  Cancels cancels;
  grpc::ClientContext call;
  Watchdog w(nullptr, clock, cancels.canceller());
  w.watch(&call);
  w.arm("ready", 5);
  clock.advance(4s);
  w.arm("measure", 10);  // "ready" ended in time
  clock.advance(4s);     // 8 s: past ready's deadline, within measure's
  EXPECT_TRUE(settled(clock, cancels).empty());
  clock.advance(7s);
  EXPECT_EQ(cancels.wait_for(1).size(), 1u);
  EXPECT_EQ(w.expired(), "measure");
}

TEST(Watchdog, WithoutExpiryTheErrorIsTheCallersOwn) {
  SimulatedClock clock;
  Watchdog w(nullptr, clock, [](grpc::ClientContext&) {});
  w.arm("measure", 60);
  auto e = w.error("measure", "load agent cli: bad spec", grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_STREQ(e.what(), "measure: load agent cli: bad spec");
  EXPECT_EQ(e.code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST(Watchdog, ASignalInterruptsThePhaseWithinAStopPoll) {
  SimulatedClock clock;
  Cancels cancels;
  std::atomic<int> stop{0};
  grpc::ClientContext call;
  Watchdog w(&stop, clock, cancels.canceller());
  w.watch(&call);
  w.arm("measure", 3600);
  stop = 15;  // SIGTERM
  clock.advance(Watchdog::kStopPoll);
  EXPECT_EQ(cancels.wait_for(1).size(), 1u);
  auto e = w.error("measure", "load agent cli: Cancelled");
  EXPECT_EQ(e.phase(), "interrupted");
  EXPECT_STREQ(e.what(), "interrupted: the run is shutting down (signal 15)");
  EXPECT_EQ(e.code(), grpc::StatusCode::CANCELLED);
}

TEST(Watchdog, CancelAllCancelsTheLoadCallsBeforeTheTargetCall) {
  Cancels cancels;
  grpc::ClientContext target, load1, load2;
  Watchdog w(nullptr, DeadlineClock::real(), cancels.canceller());
  w.watch(&target);
  w.watch(&load1);
  w.watch(&load2);
  w.cancel_all();
  EXPECT_EQ(cancels.wait_for(3), (std::vector<grpc::ClientContext*>{&load2, &load1, &target}));
  EXPECT_EQ(w.expired(), "");  // a teardown, not a deadline
}

}  // namespace
}  // namespace loadlab::controller
