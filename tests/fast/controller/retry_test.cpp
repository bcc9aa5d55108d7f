// Retry policy in simulated time: the backoff schedule, its jitter bounds, the wait for
// agents that ends early, on its budget or on a signal, and which failures are retried.
#include "lab/retry.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <vector>

#include "core/errors.hpp"

namespace loadlab::controller {
namespace {

using namespace std::chrono_literals;

// Time passes only when the code under test sleeps (or a probe says it took time).
class FakeClock : public WaitClock {
 public:
  Clock::time_point now() override { return t_; }
  void sleep_for(Clock::duration d) override {
    sleeps.push_back(d);
    t_ += d;
  }
  void advance(Clock::duration d) { t_ += d; }
  double elapsed_s() const { return std::chrono::duration<double>(t_ - Clock::time_point{}).count(); }
  std::vector<Clock::duration> sleeps;

 private:
  Clock::time_point t_{};
};

TEST(Backoff, DoublesFromTheBaseUpToTheCap) {
  BackoffPolicy p{1, 30};
  std::vector<double> steps;
  for (uint32_t r = 1; r <= 8; ++r) steps.push_back(nominal_backoff_s(p, r));
  EXPECT_EQ(steps, (std::vector<double>{1, 2, 4, 8, 16, 30, 30, 30}));
  EXPECT_EQ(nominal_backoff_s({0.25, 30}, 3), 1.0);
  EXPECT_EQ(nominal_backoff_s(p, 1000), 30.0);    // no overflow far out
  EXPECT_EQ(nominal_backoff_s({0, 30}, 5), 0.0);  // 0 = no wait
}

TEST(Backoff, JitterStaysBetweenHalfTheStepAndTheStep) {
  BackoffPolicy p{1, 30};
  EXPECT_DOUBLE_EQ(jittered_backoff_s(p, 3, 0.0), 2.0);
  EXPECT_DOUBLE_EQ(jittered_backoff_s(p, 3, 1.0), 4.0);
  EXPECT_DOUBLE_EQ(jittered_backoff_s(p, 3, 0.5), 3.0);
  EXPECT_DOUBLE_EQ(jittered_backoff_s(p, 6, 0.0), 15.0);  // the cap is jittered too
  // A generator that strays out of [0, 1] cannot push the wait out of its bounds.
  EXPECT_DOUBLE_EQ(jittered_backoff_s(p, 1, -3), 0.5);
  EXPECT_DOUBLE_EQ(jittered_backoff_s(p, 1, 7), 1.0);
}

TEST(Backoff, FailuresNoAttemptCanFixAreNotRetryable) {
  for (auto c : {grpc::StatusCode::INVALID_ARGUMENT, grpc::StatusCode::NOT_FOUND,
                 grpc::StatusCode::PERMISSION_DENIED, grpc::StatusCode::UNAUTHENTICATED})
    EXPECT_FALSE(retryable(c)) << c;
  for (auto c :
       {grpc::StatusCode::UNAVAILABLE, grpc::StatusCode::UNKNOWN, grpc::StatusCode::DEADLINE_EXCEEDED,
        grpc::StatusCode::RESOURCE_EXHAUSTED, grpc::StatusCode::CANCELLED, grpc::StatusCode::INTERNAL})
    EXPECT_TRUE(retryable(c)) << c;
}

TEST(WaitForAgents, AnAgentThatAnswersEndsTheWaitEarly) {
  FakeClock clock;
  int probes = 0;
  auto ready = [&](std::chrono::milliseconds) { return ++probes == 4; };
  EXPECT_EQ(wait_until_ready(ready, 8, nullptr, clock, 100ms), WaitOutcome::kReady);
  EXPECT_EQ(probes, 4);
  EXPECT_NEAR(clock.elapsed_s(), 0.3, 1e-9);  // three polls, not the 8 s budget
}

TEST(WaitForAgents, ASilentAgentSpendsTheBudgetAndNoMore) {
  FakeClock clock;
  std::vector<std::chrono::milliseconds> deadlines;
  auto ready = [&](std::chrono::milliseconds d) {
    deadlines.push_back(d);
    clock.advance(d < 20ms ? d : 20ms);  // a refused connection fails fast
    return false;
  };
  EXPECT_EQ(wait_until_ready(ready, 1.5, nullptr, clock, 100ms), WaitOutcome::kBudgetSpent);
  EXPECT_NEAR(clock.elapsed_s(), 1.5, 1e-6);
  ASSERT_FALSE(deadlines.empty());
  // A probe's deadline never reaches past the budget, nor past 1 s.
  EXPECT_EQ(deadlines.front(), 1000ms);
  EXPECT_LE(deadlines.back(), 100ms);
}

TEST(WaitForAgents, ZeroBudgetNeitherWaitsNorProbes) {
  FakeClock clock;
  int probes = 0;
  auto ready = [&](std::chrono::milliseconds) { return ++probes > 0; };
  EXPECT_EQ(wait_until_ready(ready, 0, nullptr, clock), WaitOutcome::kBudgetSpent);
  EXPECT_EQ(probes, 0);
  EXPECT_EQ(clock.elapsed_s(), 0);
}

TEST(WaitForAgents, ASignalEndsTheWaitAtTheNextPoll) {
  FakeClock clock;
  std::atomic<int> stop{0};
  int probes = 0;
  auto ready = [&](std::chrono::milliseconds) {
    if (++probes == 3) stop = SIGINT;
    return false;
  };
  EXPECT_EQ(wait_until_ready(ready, 300, &stop, clock, 100ms), WaitOutcome::kStopped);
  EXPECT_EQ(probes, 3);
  EXPECT_LT(clock.elapsed_s(), 0.5);
  // A null probe is a plain sleep (the cool-down), interruptible the same way.
  stop = 0;
  FakeClock sleep_clock;
  EXPECT_EQ(wait_until_ready(nullptr, 2, &stop, sleep_clock, 100ms), WaitOutcome::kBudgetSpent);
  EXPECT_NEAR(sleep_clock.elapsed_s(), 2, 1e-6);
  stop = 15;
  EXPECT_EQ(wait_until_ready(nullptr, 2, &stop, sleep_clock, 100ms), WaitOutcome::kStopped);
}

// The attempt loop with a scripted sequence of failures.
struct Script {
  FakeClock clock;
  std::atomic<int> stop{0};
  RetryOptions options;
  std::vector<std::string> notes;
  std::vector<uint32_t> attempts, probed;
  Script() {
    options.retries = 5;
    options.backoff = {1, 30};
    options.clock = &clock;
    options.jitter = [] { return 0.0; };  // the lower bound: each wait is half its step
    options.stop = &stop;
  }
  RetryOutcome run(
      const std::function<v1::Repetition(uint32_t)>& attempt,
      const std::function<bool(uint32_t)>& ready = [](uint32_t) { return false; }) {
    return run_with_retries(
        options,
        [&](uint32_t n) {
          attempts.push_back(n);
          return attempt(n);
        },
        [&](uint32_t n, std::chrono::milliseconds) {
          probed.push_back(n);
          return ready(n);
        },
        [&](const std::string& line) { notes.push_back(line); });
  }
};

TEST(RetryLoop, BacksOffOnTheScheduleUntilAnAttemptSucceeds) {
  Script s;
  std::vector<double> started_at;
  auto out = s.run([&](uint32_t n) -> v1::Repetition {
    started_at.push_back(s.clock.elapsed_s());
    if (n < 3)
      throw CellError("measure", "load agent cli1: Connection refused", grpc::StatusCode::UNAVAILABLE);
    return {};
  });
  ASSERT_TRUE(out.rep);
  EXPECT_EQ(out.rep->attempts(), 4u);
  // Nobody answered: each wait ran its whole jittered budget, 0.5, 1 and 2 s.
  ASSERT_EQ(started_at.size(), 4u);
  EXPECT_NEAR(started_at[1] - started_at[0], 0.5, 1e-6);
  EXPECT_NEAR(started_at[2] - started_at[1], 1.0, 1e-6);
  EXPECT_NEAR(started_at[3] - started_at[2], 2.0, 1e-6);
  // The probes asked about the agents of the attempt that was to come.
  EXPECT_EQ(s.probed.front(), 1u);
  EXPECT_EQ(s.probed.back(), 3u);
  EXPECT_NE(s.notes.front().find("attempt 1 failed (measure: load agent cli1: Connection refused); retrying"),
            std::string::npos)
      << s.notes.front();
}

TEST(RetryLoop, AnAgentBackEarlyCostsOnlyItsProbe) {
  Script s;
  auto out = s.run(
      [&](uint32_t n) -> v1::Repetition {
        if (n == 0) throw CellError("measure", "lost", grpc::StatusCode::UNAVAILABLE);
        return {};
      },
      [](uint32_t) { return true; });
  ASSERT_TRUE(out.rep);
  EXPECT_EQ(out.rep->attempts(), 2u);
  EXPECT_EQ(s.clock.elapsed_s(), 0);
}

TEST(RetryLoop, GivesUpAfterTheRetriesWithTheCount) {
  Script s;
  s.options.retries = 2;
  auto out = s.run(
      [](uint32_t) -> v1::Repetition { throw CellError("ready", "refused", grpc::StatusCode::UNAVAILABLE); });
  EXPECT_FALSE(out.rep);
  EXPECT_FALSE(out.stopped);
  EXPECT_EQ(out.error, "ready: refused (after 3 attempts)");
  EXPECT_EQ(s.attempts.size(), 3u);
}

TEST(RetryLoop, ARequestNoAgentAcceptsIsNotRetried) {
  Script s;
  auto out = s.run([](uint32_t) -> v1::Repetition {
    throw CellError("start", "load to 10.9.9.9 is not allowed", grpc::StatusCode::PERMISSION_DENIED);
  });
  EXPECT_EQ(s.attempts.size(), 1u);
  EXPECT_TRUE(s.probed.empty());
  EXPECT_EQ(s.clock.elapsed_s(), 0);
  EXPECT_NE(out.error.find("not retried"), std::string::npos) << out.error;
}

TEST(RetryLoop, ASignalDuringTheWaitStopsWithoutAnotherAttempt) {
  Script s;
  auto out = s.run(
      [](uint32_t) -> v1::Repetition { throw CellError("measure", "lost", grpc::StatusCode::UNAVAILABLE); },
      [&](uint32_t) {
        s.stop = 2;
        return false;
      });
  EXPECT_TRUE(out.stopped);
  EXPECT_FALSE(out.rep);
  EXPECT_TRUE(out.error.empty());
  EXPECT_EQ(s.attempts.size(), 1u);
}

TEST(RetryLoop, AnInterruptedAttemptIsNeitherRetriedNorAFailure) {
  Script s;
  auto out = s.run([&](uint32_t) -> v1::Repetition {
    s.stop = 15;
    throw CellError("interrupted", "the run is shutting down", grpc::StatusCode::CANCELLED);
  });
  EXPECT_TRUE(out.stopped);
  EXPECT_EQ(s.attempts.size(), 1u);
}

TEST(RetryLoop, ZeroBackoffRetriesAtOnceWithoutProbing) {
  Script s;
  s.options.backoff.base_s = 0;
  auto out = s.run([](uint32_t n) -> v1::Repetition {
    if (n < 2) throw CellError("measure", "lost", grpc::StatusCode::UNAVAILABLE);
    return {};
  });
  ASSERT_TRUE(out.rep);
  EXPECT_EQ(out.rep->attempts(), 3u);
  EXPECT_TRUE(s.probed.empty());
  EXPECT_EQ(s.clock.elapsed_s(), 0);
}

TEST(RetryLoop, AnUnusableLabEndsTheRepetition) {
  Script s;
  auto out =
      s.run([](uint32_t) -> v1::Repetition { throw EnvironmentError("no reachable agent with role load"); });
  EXPECT_EQ(out.error, "no reachable agent with role load");
  EXPECT_EQ(s.attempts.size(), 1u);
}

}  // namespace
}  // namespace loadlab::controller
