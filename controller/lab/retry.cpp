#include "lab/retry.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <thread>

#include "core/errors.hpp"
#include "loadlab/shared/format.hpp"

namespace loadlab::controller {

namespace {

class RealClock : public WaitClock {
 public:
  Clock::time_point now() override { return Clock::now(); }
  void sleep_for(Clock::duration d) override { std::this_thread::sleep_for(d); }
};

bool stopping(const std::atomic<int>* stop) { return stop && stop->load() != 0; }

}  // namespace

bool retryable(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::NOT_FOUND:
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::FAILED_PRECONDITION:  // a target's commit that does not build
      return false;
    default:
      return true;
  }
}

double nominal_backoff_s(const BackoffPolicy& p, uint32_t retry) {
  if (p.base_s <= 0 || retry == 0) return 0;
  // Past 2^31 the cap has long been reached; the exponent is bounded to keep it finite.
  return std::min(p.cap_s, p.base_s * std::ldexp(1.0, static_cast<int>(std::min<uint32_t>(retry - 1, 31))));
}

double jittered_backoff_s(const BackoffPolicy& p, uint32_t retry, double unit) {
  return nominal_backoff_s(p, retry) * (0.5 + 0.5 * std::clamp(unit, 0.0, 1.0));
}

WaitClock& WaitClock::real() {
  static RealClock clock;
  return clock;
}

WaitOutcome wait_until_ready(const ReadyProbe& ready, double budget_s, const std::atomic<int>* stop,
                             WaitClock& clock, std::chrono::milliseconds poll) {
  using namespace std::chrono;
  if (budget_s <= 0) return WaitOutcome::kBudgetSpent;
  const auto end = clock.now() + duration_cast<WaitClock::Clock::duration>(duration<double>(budget_s));
  for (;;) {
    if (stopping(stop)) return WaitOutcome::kStopped;
    auto left = end - clock.now();
    if (left <= WaitClock::Clock::duration::zero()) return WaitOutcome::kBudgetSpent;
    // A probe may take up to a second (a lab across a slow link), never past the budget.
    auto probe = std::max(milliseconds(1), std::min(milliseconds(1000), duration_cast<milliseconds>(left)));
    if (ready && ready(probe)) return WaitOutcome::kReady;
    left = end - clock.now();
    if (left > WaitClock::Clock::duration::zero())
      clock.sleep_for(std::min<WaitClock::Clock::duration>(left, poll));
  }
}

namespace {

double random_unit() {
  static std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0, 1)(rng);
}

// Waits before retry `next` (1-based attempt index) for its agents; false when stopped.
bool back_off(const RetryOptions& o, uint32_t next, const std::string& failure, const AttemptReadyFn& ready,
              const std::function<void(const std::string&)>& note) {
  double budget = jittered_backoff_s(o.backoff, next, o.jitter ? o.jitter() : random_unit());
  note("attempt " + std::to_string(next) + " failed (" + failure + "); retrying" +
       (budget > 0 ? " once its agents answer (at most " + seconds_text(budget) + ")" : ""));
  ReadyProbe probe;
  if (ready) probe = [&](std::chrono::milliseconds deadline) { return ready(next, deadline); };
  auto outcome = wait_until_ready(probe, budget, o.stop, *o.clock, o.poll);
  if (outcome == WaitOutcome::kBudgetSpent && budget > 0)
    note("agents of attempt " + std::to_string(next + 1) + " not answering after " + seconds_text(budget) +
         "; trying anyway");
  return outcome != WaitOutcome::kStopped;
}

}  // namespace

RetryOutcome run_with_retries(const RetryOptions& o, const AttemptFn& attempt, const AttemptReadyFn& ready,
                              const std::function<void(const std::string&)>& note) {
  RetryOutcome out;
  for (uint32_t n = 0;; ++n) {
    std::optional<CellError> failure;
    try {
      if (stopping(o.stop)) break;
      out.rep = attempt(n);
      out.rep->set_attempts(n + 1);
      return out;
    } catch (const CellError& e) {
      failure = e;
    } catch (const EnvironmentError& e) {
      out.error = e.what();
      return out;
    }
    if (stopping(o.stop)) break;  // the failure is the interruption itself
    if (!retryable(failure->code())) {
      out.error = std::string(failure->what()) + " (not retried: no attempt can fix it)";
      return out;
    }
    if (n >= o.retries) {
      out.error = std::string(failure->what()) + " (after " + std::to_string(n + 1) + " attempts)";
      return out;
    }
    try {
      if (!back_off(o, n + 1, failure->what(), ready, note)) break;
    } catch (const EnvironmentError& e) {
      out.error = e.what();
      return out;
    }
  }
  out.stopped = true;
  return out;
}

}  // namespace loadlab::controller
