#pragma once
// Runs one repetition of one cell: hosts the target on one agent, drives it from one or
// more load agents at once, brackets the measured window with marks on the target stream,
// and merges the load agents' results (histogram buckets add, rates sum).
#include <atomic>

#include "loadlab/controller/errors.hpp"
#include "loadlab/controller/live_progress.hpp"
#include "loadlab/controller/placement.hpp"
#include "loadlab/controller/plan.hpp"
#include "loadlab/controller/results.hpp"
#include "loadlab/controller/scenario.hpp"

namespace loadlab::controller {

// Deadlines of the phases of a repetition, in seconds.
struct PhaseLimits {
  double ready_s = 30;         // target started and accepting
  double warmup_extra_s = 30;  // beyond the scenario's warmup_s
  double measure_s = 0;        // 0 = duration_s + 60 s, or 24 h for request counts
  double stop_s = 15;          // usage answered and target stopped
};

// Throws CellError. Blocks until the repetition is over and the target has stopped. When
// `*stop` turns nonzero (SIGINT/SIGTERM) the calls are cancelled and it throws CellError
// with phase "interrupted" within about 100 ms.
RepResult run_repetition(const Placement& placement, const Scenario& s, const Cell& c,
                         const PhaseLimits& limits, const ProgressFn& progress,
                         const std::atomic<int>* stop = nullptr);

}  // namespace loadlab::controller
