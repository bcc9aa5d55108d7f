#pragma once
#include <filesystem>
// An A/B run's cells (the scenario's "ab": build B against build A, pair by pair): judged in
// pairs (judge/ab_verdicts.hpp), pairs that other work disturbed measured again, and pairs
// that look like a regression confirmed, each pair on fresh targets in the same order.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "lab/agent_pool.hpp"
#include "loadlab/v1/result.pb.h"
#include "run/cell_executor.hpp"
#include "run/measure_again.hpp"
#include "run/run_cells.hpp"
#include "scenario/scenario.hpp"

namespace loadlab::controller {

class AbJudge {
 public:
  // `scenario`, `run` and `pool` (the agents, for their cores) outlive the judge.
  AbJudge(const Scenario& scenario, RunCells& run, const AgentPool& pool);

  bool active() const { return !scenario_.ab_a.empty(); }
  // Pairs the run's cells again: after the scenario gained an A/B (last_good_ab.hpp).
  void pair_cells();
  // The pairs' cells: measured, judged and confirmed in pairs, not one by one.
  std::set<size_t> paired_cells() const;
  // B's cell of each of A's cells.
  std::map<size_t, size_t> partners() const;
  // Judges the pairs, measures again those other work disturbed, then confirms those that look
  // like a regression (or every pair, with confirm.every_cell) and judges again; then says what
  // grew (explain_growth, from the profiles in `run_folder`). False when the run is
  // stopping.
  bool judge_and_confirm(CellExecutor& executor, const MeasureAgain& again, ProgressReporter& progress,
                         const std::filesystem::path& run_folder);
  // The pairs' verdicts; none before judge_and_confirm, or after reset().
  const std::optional<v1::Verdicts>& verdicts() const { return verdicts_; }
  void reset() { verdicts_.reset(); }
  // Each regression's functions that grew most, B against A (CellVerdict.grew): with the metric
  // `instructions`, from the callgrind outputs of their repetitions in `run_folder`; else, when
  // both cells were profiled, from the server's perf samples (CPU µs per request).
  void explain_growth(const std::filesystem::path& run_folder);

 private:
  void judge();
  bool remeasure_disturbed(CellExecutor& executor, const MeasureAgain& again, ProgressReporter& progress);
  void flag_pair_outliers(CellResult& a, CellResult& b) const;

  const Scenario& scenario_;
  RunCells& run_;
  const AgentPool& pool_;
  std::vector<std::pair<size_t, size_t>> pairs_;  // (A's cell, B's cell)
  std::optional<v1::Verdicts> verdicts_;
};

}  // namespace loadlab::controller
