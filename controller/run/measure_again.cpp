#include "run/measure_again.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "lab/retry.hpp"
#include "loadlab/shared/format.hpp"

namespace loadlab::controller {

uint32_t confirm_count(const Scenario& s) {
  return s.execution.confirm.value_or(std::max<uint32_t>(3, s.repetitions));
}

bool MeasureAgain::pause(double seconds) const {
  return wait_until_ready(nullptr, seconds, stop_, WaitClock::real()) != WaitOutcome::kStopped;
}

bool MeasureAgain::each(const std::vector<Unit>& units, const Measure& measure) const {
  for (const auto& unit : units) {
    if (!pause(execution_.cooldown_s)) return false;
    if (!measure(unit)) return false;  // stopping: kept as measured
    record_(unit);
  }
  return true;
}

bool MeasureAgain::rounds(const Pick& pick, const Measure& measure,
                          const std::function<void()>& rejudge) const {
  for (uint32_t attempt = 1; attempt <= execution_.remeasure_disturbed; ++attempt) {
    const std::vector<Unit> which = pick(attempt);
    if (which.empty()) return true;
    if (attempt > 1) {
      const double wait = execution_.remeasure_wait_s * std::pow(2.0, attempt - 2);
      progress_.info(std::to_string(which.size()) + " still disturbed; waiting " + seconds_text(wait) +
                     " before measuring again");
      if (!pause(wait)) return false;
    }
    if (!each(which, measure)) return false;
    rejudge();
  }
  return true;
}

}  // namespace loadlab::controller
