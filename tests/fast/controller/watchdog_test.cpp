// Phase deadlines in simulated time: a phase that outlives its deadline cancels every call
// and names itself; a new phase replaces the old deadline; a signal interrupts.
#include "lab/watchdog.hpp"

#include <gtest/gtest.h>

#include <thread>

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
  // The calls cancelled after the watchdog's thread had time to act (real time).
  std::vector<grpc::ClientContext*> settled() {
    std::this_thread::sleep_for(50ms);
    std::lock_guard lock(mutex_);
    return cancelled_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<grpc::ClientContext*> cancelled_;
};

TEST(Watchdog, APhaseThatOutlivesItsDeadlineCancelsEveryCallAndNamesItself) {
  SimulatedClock clock;
  Cancels cancels;
  grpc::ClientContext target, load;
  Watchdog w(nullptr, clock, cancels.canceller());
  w.watch(&target);
  w.watch(&load);
  w.arm("warmup", 31);
  clock.advance(30s);
  EXPECT_TRUE(cancels.settled().empty());
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
  SimulatedClock clock;
  Cancels cancels;
  grpc::ClientContext call;
  Watchdog w(nullptr, clock, cancels.canceller());
  w.watch(&call);
  w.arm("ready", 5);
  clock.advance(4s);
  w.arm("measure", 10);  // "ready" ended in time
  clock.advance(4s);     // 8 s: past ready's deadline, within measure's
  EXPECT_TRUE(cancels.settled().empty());
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
