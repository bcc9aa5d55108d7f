#include "loadlab/controller/cell_executor.hpp"

#include <algorithm>

#include "loadlab/controller/flags.hpp"

namespace loadlab::controller {

CellOptions CellOptions::from(const Scenario& s, const std::atomic<int>* stop) {
  CellOptions o;
  o.repetition.limits = PhaseLimits::from(s.execution);
  o.repetition.stop = stop;
  o.retry.retries = s.execution.retries;
  // Steps double up to 30 s, or up to the base itself when a scenario asks for longer.
  o.retry.backoff = {s.execution.retry_backoff_s, std::max(30.0, s.execution.retry_backoff_s)};
  o.retry.stop = stop;
  return o;
}

CellExecutor::CellExecutor(const Scenario& s, const AgentPool& pool, ProgressReporter& progress,
                           CellOptions options)
    : scenario_(s), pool_(pool), progress_(progress), options_(std::move(options)), cores_(pool.cores()) {
  options_.repetition.progress = [this](const LiveProgress& p) { progress_.live(p); };
}

std::optional<CellResult> CellExecutor::run(const Cell& cell, size_t finished) {
  auto attempt = [&](uint32_t n) {
    return run_repetition(pool_.place(scenario_, cell, n), scenario_, cell, options_.repetition);
  };
  // The agents the next attempt will use, with its rotation, must answer again.
  auto ready = [&](uint32_t n, std::chrono::milliseconds deadline) {
    return pool_.answer(pool_.place(scenario_, cell, n), deadline);
  };
  auto note = [&](const std::string& line) { progress_.note(cell.key() + " " + line); };
  CellResult cr;
  cr.cell = cell;
  for (uint32_t rep = 0; rep < scenario_.repetitions; ++rep) {
    progress_.cell_started(finished, cell.key(), rep, scenario_.repetitions);
    auto outcome = run_with_retries(options_.retry, attempt, ready, note);
    if (outcome.stopped) return std::nullopt;
    if (!outcome.rep) {
      cr.error = outcome.error;
      break;
    }
    for (auto& f : saturation_flags(*outcome.rep, cores_)) outcome.rep->add_flags(f);
    cr.reps.push_back(std::move(*outcome.rep));
  }
  return cr;
}

}  // namespace loadlab::controller
