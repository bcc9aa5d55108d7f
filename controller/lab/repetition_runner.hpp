#pragma once
// One repetition of one cell, the protocol of agent.proto: host the target on one agent
// and wait until it is ready, drive it from one or more load agents at once, bracket the
// measured window with marks on the target stream, merge the load agents' results
// (histogram buckets add, rates sum) and stop the target.
#include <atomic>

#include "core/errors.hpp"
#include "core/live_progress.hpp"
#include "lab/placement.hpp"
#include "lab/watchdog.hpp"
#include "results/results.hpp"
#include "scenario/plan.hpp"
#include "scenario/scenario.hpp"

namespace loadlab::controller {

// Deadlines of the phases of a repetition, in seconds.
struct PhaseLimits {
  double ready_s = 30;         // target started and accepting
  double warmup_extra_s = 30;  // beyond the scenario's warmup_s
  double measure_s = 0;        // 0 = duration_s + 60 s, or 24 h for request counts
  double stop_s = 15;          // usage answered and target stopped
  [[nodiscard]] static PhaseLimits from(const ExecutionDef& e) {
    return {e.ready_s, e.warmup_extra_s, e.measure_s, e.stop_s};
  }
};

struct RepetitionOptions {
  PhaseLimits limits;
  ProgressFn progress;  // may be empty
  // Nonzero (SIGINT/SIGTERM): the calls are cancelled and the repetition fails with
  // phase "interrupted" within Watchdog::kStopPoll.
  const std::atomic<int>* stop = nullptr;
  // Seams for tests: simulated time for the phase deadlines, and the cancelling of a
  // fake stub's calls.
  DeadlineClock* clock = &DeadlineClock::real();
  CallCanceller cancel = try_cancel;
  // A callgrind probe (instructions.hpp): the target runs under callgrind, and the event of
  // its exit (the instructions of its whole life, or why there are none) is put here.
  v1::Exited* callgrind_exited = nullptr;
};

// Throws CellError. Blocks until the repetition is over and its target has stopped, or it
// has failed and every call it made has ended.
v1::Repetition run_repetition(const Placement& placement, const Scenario& s, const Cell& c,
                              const RepetitionOptions& options);

}  // namespace loadlab::controller
