#pragma once
// A run's verdicts against --baseline: each cell against its earlier nights in the history
// (the noise model, history/night_verdicts.hpp), or against a base run (judge/compare.hpp).
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "loadlab/v1/result.pb.h"
#include "run/run_cells.hpp"
#include "run/scenario_run.hpp"
#include "scenario/scenario.hpp"

namespace loadlab::controller {

// The cells a run's history verdicts judge: all of them, but the last good build's of a nightly
// A/B (regression.ab_last_good).
std::vector<std::string> judged_keys(const Scenario& s, const RunCells& run);

class BaselineJudge {
 public:
  // `options` and `scenario` outlive the judge.
  BaselineJudge(const RunOptions& options, const Scenario& scenario)
      : options_(options), scenario_(scenario) {}

  bool judging() const { return !options_.baseline.empty(); }
  bool against_history() const { return options_.baseline == kHistory || options_.baseline == kLastGood; }
  // Before the run: --baseline names a run that can be read (a history is read at the end).
  void check() const;
  // The verdicts of the run's cells as measured so far (its result.json in `folder`, as
  // saved): against the history (the run is stored in it first, so that tonight is read back
  // as every night is), or against the base run. A cell measured again because it was
  // disturbed says so in its reason.
  void judge(const std::filesystem::path& folder, const RunCells& run);

  // Once the run is judged and confirmed (its result.json in `folder`): against the history,
  // each regression names what grew against its newest baseline night (callgrind's outputs, or
  // perf's profiles: CellVerdict.grew) and keeps that night's server profile to be drawn
  // against; then, with a nightly A/B against the last good build (regression.ab_last_good),
  // each cell `ab` judged takes the A/B's verdict (with the A/B's own what grew and profiles),
  // the history's kept beside it without either (CellVerdict.by_history), and `note` (what the
  // nightly A/B did, or why there was none) goes to the verdicts' note.
  void finish(const std::filesystem::path& folder, const v1::Verdicts* ab, const std::string& note);

  const std::optional<v1::Verdicts>& verdicts() const { return verdicts_; }
  // The first verdict alone calls the cell a regression: it is measured again to confirm.
  bool suspect(const std::string& key) const;
  RegressionDef regression() const;  // the scenario's, with --baseline-nights
  // The history verdict found the cell's measurement, as it stands, disturbed.
  bool disturbed(const std::string& key) const { return disturbed_.count(key) > 0; }

 private:
  void judge_against_history(const std::filesystem::path& folder, const RunCells& run);
  void explain_growth(const std::filesystem::path& folder, const v1::Verdicts* ab);
  void adopt_ab(const v1::Verdicts* ab, const std::string& note);

  const RunOptions& options_;
  const Scenario& scenario_;
  std::optional<v1::Verdicts> verdicts_;
  std::set<std::string> disturbed_;
};

}  // namespace loadlab::controller
