#pragma once
// The one policy by which a run measures cells again at its end, for confirmation before an
// alarm and for cells (or A/B pairs of cells) that other work disturbed: each unit (a cell,
// or an A/B pair) after the scenario's cool-down, recorded (journalled and saved) as soon as
// it is measured, and every wait ended at once by a stopping run.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "run/progress.hpp"
#include "scenario/scenario.hpp"

namespace loadlab::controller {

// execution.confirm's repetitions (or pairs): the scenario's repetitions, at least 3, unless set.
uint32_t confirm_count(const Scenario& s);

class MeasureAgain {
 public:
  using Unit = std::vector<size_t>;                  // cells' indices: one cell, or an A/B pair (A, B)
  using Measure = std::function<bool(const Unit&)>;  // false when the run is stopping
  using Record = std::function<void(const Unit&)>;   // journal the unit's cells and save the run
  // What is still to measure again after `attempt` - 1 rounds.
  using Pick = std::function<std::vector<Unit>(uint32_t attempt)>;

  // `progress` outlives this.
  MeasureAgain(const ExecutionDef& e, const std::atomic<int>* stop, ProgressReporter& progress, Record record)
      : execution_(e), stop_(stop), progress_(progress), record_(std::move(record)) {}

  // Waits `seconds` (a cool-down); false when the run is stopping.
  bool pause(double seconds) const;
  // Each unit once, in order, each after the cool-down: measured and recorded. False when the
  // run is stopping (what was measured is kept).
  bool each(const std::vector<Unit>& units, const Measure& measure) const;
  // Rounds of measuring again what is disturbed: `pick(attempt)` names what still is after
  // attempt - 1 rounds, each is measured again (each()), then `rejudge` judges the run again.
  // At most execution.remeasure_disturbed rounds, the first at once, the second after
  // remeasure_wait_s and each later one after twice the wait before it (a build beside a
  // nightly takes minutes). False when the run is stopping.
  bool rounds(const Pick& pick, const Measure& measure, const std::function<void()>& rejudge) const;

 private:
  const ExecutionDef& execution_;
  const std::atomic<int>* stop_;
  ProgressReporter& progress_;
  Record record_;
};

}  // namespace loadlab::controller
