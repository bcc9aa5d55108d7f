#pragma once
// Retries of a failed repetition: which failures another attempt can fix, how long to back
// off before it (exponential with jitter), and the wait for the agents the next attempt
// needs to answer again, so that an agent restarted by its supervisor (systemd's
// Restart=on-failure) is used as soon as it is back instead of being counted as failed.
// Called from the run's thread.
#include <grpcpp/support/status.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "results/results.hpp"

namespace loadlab::controller {

// False for failures no retry can fix: the request is wrong or not allowed.
bool retryable(grpc::StatusCode code);

struct BackoffPolicy {
  double base_s = 1;  // nominal wait before the first retry; 0 = no wait
  double cap_s = 30;  // no nominal step is longer
};

// Nominal wait before retry number `retry` (1 = the first): base · 2^(retry-1), at most cap.
double nominal_backoff_s(const BackoffPolicy& p, uint32_t retry);
// The wait budgeted for that retry: the nominal step scaled into [1/2, 1] by `unit` in
// [0, 1]. Jitter spreads controllers that lost the same agent; the floor keeps the schedule.
double jittered_backoff_s(const BackoffPolicy& p, uint32_t retry, double unit);

// Time as the waits see it: the real clock, or a test's that only advances when slept.
class WaitClock {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~WaitClock() = default;
  virtual Clock::time_point now() = 0;
  virtual void sleep_for(Clock::duration d) = 0;
  static WaitClock& real();
};

enum class WaitOutcome { kReady, kBudgetSpent, kStopped };

// Probe: true when the agents answer; given the most it may take (its gRPC deadline).
using ReadyProbe = std::function<bool(std::chrono::milliseconds deadline)>;

// Calls `ready` every `poll` until it returns true, `budget_s` has passed or `*stop` is
// nonzero (SIGINT/SIGTERM). A budget of 0 waits for nothing and probes nothing. A null
// `ready` never answers: a plain interruptible sleep.
WaitOutcome wait_until_ready(const ReadyProbe& ready, double budget_s, const std::atomic<int>* stop,
                             WaitClock& clock,
                             std::chrono::milliseconds poll = std::chrono::milliseconds(100));

struct RetryOptions {
  uint32_t retries = 2;  // attempts after the first
  BackoffPolicy backoff;
  const std::atomic<int>* stop = nullptr;  // nonzero: shutting down, no more attempts
  WaitClock* clock = &WaitClock::real();
  std::function<double()> jitter;  // uniform in [0, 1]; null = a random generator
  std::chrono::milliseconds poll{100};
};

struct RetryOutcome {
  std::optional<v1::Repetition> rep;  // the successful attempt, its `attempts` set
  std::string error;                  // why the repetition failed for good
  bool stopped = false;               // shutdown came first: neither a result nor a failure
};

// `attempt(n)` runs attempt n (0-based) and throws CellError or EnvironmentError;
// `ready(n, deadline)` probes the agents attempt n will use; `note` tells the person.
using AttemptFn = std::function<v1::Repetition(uint32_t attempt)>;
using AttemptReadyFn = std::function<bool(uint32_t attempt, std::chrono::milliseconds deadline)>;
RetryOutcome run_with_retries(const RetryOptions& options, const AttemptFn& attempt,
                              const AttemptReadyFn& ready,
                              const std::function<void(const std::string&)>& note);

}  // namespace loadlab::controller
