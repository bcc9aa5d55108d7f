#pragma once
// One cell of a run: every repetition, each with its retries (retry.hpp) on the agents the
// pool places it on, and the saturation flags of each repetition. Called from the run's
// thread.
#include <atomic>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "lab/agent_pool.hpp"
#include "lab/repetition_runner.hpp"
#include "lab/retry.hpp"
#include "results/results.hpp"
#include "run/progress.hpp"
#include "scenario/plan.hpp"
#include "scenario/scenario.hpp"

namespace loadlab::controller {

struct CellOptions {
  RepetitionOptions repetition;  // its progress is the executor's own
  RetryOptions retry;
  // Where a callgrind probe's profile goes (instructions.hpp); "" = not kept.
  std::string profile_dir;
  // The scenario's deadlines, retries and backoff; `stop` ends repetitions and retry waits.
  [[nodiscard]] static CellOptions from(const Scenario& s, const std::atomic<int>* stop);
};

class CellExecutor {
 public:
  // `pool` and `progress` outlive the executor.
  CellExecutor(const Scenario& s, const AgentPool& pool, ProgressReporter& progress, CellOptions options);
  CellExecutor(const CellExecutor&) = delete;  // its repetitions report progress to `this`
  CellExecutor& operator=(const CellExecutor&) = delete;
  // The cell's result, failed or not; nullopt when the run is stopping (the cell is left
  // for --resume, not recorded as failed). `finished`: cells done so far, for the progress.
  // A scenario with a `search` block: a capacity search per repetition (search()).
  std::optional<CellResult> run(const Cell& cell, size_t finished);
  // `count` more repetitions of a finished cell, each on a fresh target process, into
  // `into.confirmations` (execution.confirm); a capacity search's cell: `count` more searches,
  // their figures (each with its capacity). False when the run is stopping (what was
  // measured is kept); a failed repetition ends the confirmation with what it has.
  bool confirm(CellResult& into, uint32_t count, size_t finished);
  // The scenario's repetitions of a finished cell once more, on fresh target processes: when
  // they all ran, they become the cell's repetitions and the ones it had are added to
  // `into.disturbed` (a capacity search's cell: its searches again, which replace its
  // searches); a failed repetition leaves the cell as it was. False when the run is
  // stopping (the cell is left as it was).
  bool remeasure(CellResult& into, size_t finished);
  // A/B: the scenario's pairs of the finished cells `a` and `b` once more, in the same order (A
  // B, B A, ...) on fresh target processes: when they all ran, they become the cells'
  // repetitions and the ones they had are added to their `disturbed`; a failed repetition
  // leaves both as they were. False when the run is stopping (both are left as they were).
  bool remeasure_pair(CellResult& a, CellResult& b, size_t finished);
  // A/B: the scenario's repetitions of `a` and of `b` as pairs, one repetition of each, A first
  // in the even pairs and B first in the odd ones (A B, B A, A B, ...), so that a drift of the
  // machine weighs on both alike. A failed repetition ends both cells (the pairs are the
  // evidence); nullopt when the run is stopping.
  std::optional<std::pair<CellResult, CellResult>> run_pair(const Cell& a, const Cell& b, size_t finished);
  // A/B's confirmation: `count` more pairs of the finished cells `a` and `b`, in the same order
  // (A B, B A, ...) on fresh target processes, into their `confirmations`. False when the run
  // is stopping (what was measured is kept); a failed repetition ends them with what they have.
  bool confirm_pair(CellResult& a, CellResult& b, uint32_t count, size_t finished);

 private:
  // Where one side of the pairs goes: its repetitions and its error.
  struct Side {
    std::vector<v1::Repetition>* reps;
    std::string* error;
  };
  // `count` capacity searches of the cell (capacity_search.hpp), into `into`: each
  // step one repetition of the cell at the step's rate, load threads, connections and window,
  // with its retries; the search's figures (its last passing step, else its last) into
  // `into.reps`. A step that could not be measured fails the cell. False when the run is
  // stopping.
  bool search(const Cell& cell, uint32_t count, size_t finished, CellResult& into);
  // `count` pairs of `a` and `b` into their sides; false when the run is stopping.
  bool pairs(const Cell& a, const Cell& b, uint32_t count, size_t finished, Side a_side, Side b_side);
  // Repetitions until `count` are in `reps`, or one fails (its error in `error`); false when
  // the run is stopping.
  bool repeat(const Cell& cell, uint32_t count, size_t finished, std::vector<v1::Repetition>& reps,
              std::string& error);
  // Repetition `rep` of `count` of `cell`, with its retries, into `reps`, or its error; false
  // when the run is stopping.
  bool one(const Cell& cell, uint32_t rep, uint32_t count, size_t finished, std::vector<v1::Repetition>& reps,
           std::string& error);
  const Scenario& scenario_;
  const AgentPool& pool_;
  ProgressReporter& progress_;
  CellOptions options_;
  std::map<std::string, uint32_t> cores_;
};

}  // namespace loadlab::controller
