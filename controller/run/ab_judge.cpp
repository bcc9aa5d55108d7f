#include "run/ab_judge.hpp"

#include <algorithm>

#include "judge/ab_verdicts.hpp"
#include "judge/compare.hpp"
#include "judge/verdict.hpp"
#include "results/callgrind_profile.hpp"
#include "results/quality_flags.hpp"
#include "run/baseline_judge.hpp"

namespace loadlab::controller {

namespace {

// A tenth of the pairs or more (and at least one) with a repetition flagged busy-machine.
bool pairs_disturbed(const CellResult& a, const CellResult& b) {
  const size_t n = std::min(a.reps.size(), b.reps.size());
  size_t disturbed = 0;
  for (size_t i = 0; i < n; ++i) disturbed += busy_machine(a.reps[i]) || busy_machine(b.reps[i]);
  return disturbed > 0 && disturbed * 10 >= n;
}

std::string pairs_text(uint32_t n) { return std::to_string(n) + " pairs on fresh targets"; }

}  // namespace

AbJudge::AbJudge(const Scenario& scenario, RunCells& run, const AgentPool& pool)
    : scenario_(scenario), run_(run), pool_(pool) {
  pair_cells();
}

void AbJudge::pair_cells() {
  pairs_.clear();
  if (active()) pairs_ = ab_pairs(run_.cells, scenario_.ab_a, scenario_.ab_b);
}

std::set<size_t> AbJudge::paired_cells() const {
  std::set<size_t> paired;
  for (auto [a, b] : pairs_) paired.insert({a, b});
  return paired;
}

std::map<size_t, size_t> AbJudge::partners() const { return {pairs_.begin(), pairs_.end()}; }

// The repetitions of an A/B pair of cells whose other work stands out from theirs (both sides'
// first pairs together, and their confirmation pairs together: each set on the same CPUs).
void AbJudge::flag_pair_outliers(CellResult& a, CellResult& b) const {
  for (auto set : {std::pair{&a.reps, &b.reps}, std::pair{&a.confirmations, &b.confirmations}}) {
    std::vector<v1::Repetition*> reps;
    for (auto* side : {set.first, set.second})
      for (auto& r : *side) reps.push_back(&r);
    flag_busy_outliers(reps, pool_.cores());
  }
}

void AbJudge::judge() {
  std::vector<std::pair<const CellResult*, const CellResult*>> pairs;
  for (auto [a, b] : pairs_)
    if (run_.results[a] && run_.results[b]) {
      flag_pair_outliers(*run_.results[a], *run_.results[b]);
      pairs.emplace_back(&*run_.results[a], &*run_.results[b]);
    }
  // A nightly A/B's verdicts stand among the history's: the false alarms split over all those.
  const size_t cells = last_good_ab_target(scenario_) ? judged_keys(scenario_, run_).size() : pairs.size();
  verdicts_ = judge_ab(pairs, scenario_.regression, cells, confirm_count(scenario_) > 0);
  for (size_t k = 0; k < pairs.size() && k < static_cast<size_t>(verdicts_->cells_size()); ++k)
    if (const size_t times = remeasures(*pairs[k].second, scenario_.repetitions); times > 0) {
      auto* c = verdicts_->mutable_cells(static_cast<int>(k));
      c->set_disturbed(true);
      c->set_reason("pairs measured again" +
                    (times > 1 ? " " + std::to_string(times) + " times" : std::string()) +
                    " (other work ran on their CPUs " + (times > 1 ? "each earlier time" : "the first time") +
                    "): " + c->reason());
    }
}

// An A/B cell whose pairs were disturbed (other work on their CPUs during a tenth of them or
// more: a busy-machine flag on either side) has its pairs measured again in the same order,
// on fresh targets, before its verdict and confirmation.
bool AbJudge::remeasure_disturbed(CellExecutor& executor, const MeasureAgain& again,
                                  ProgressReporter& progress) {
  if (unmoved_by_other_work(scenario_.regression.metric)) return true;  // instructions: counted
  auto pick = [&](uint32_t attempt) {
    std::vector<MeasureAgain::Unit> which;
    for (auto [a, b] : pairs_) {
      const auto &ra = run_.results[a], &rb = run_.results[b];
      if (ra && rb && ra->ok() && rb->ok() && rb->confirmations.empty() &&
          remeasures(*rb, scenario_.repetitions) == attempt - 1 && pairs_disturbed(*ra, *rb))
        which.push_back({a, b});
    }
    return which;
  };
  auto measure = [&](const MeasureAgain::Unit& unit) {
    progress.info(run_.cells[unit[1]].key() + " against " + run_.cells[unit[0]].key() +
                  ": other work ran on their CPUs during their pairs; measuring them again (" +
                  pairs_text(scenario_.repetitions) + ")");
    return executor.remeasure_pair(*run_.results[unit[0]], *run_.results[unit[1]], run_.cells.size());
  };
  return again.rounds(pick, measure, [this] { judge(); });
}

bool AbJudge::judge_and_confirm(CellExecutor& executor, const MeasureAgain& again, ProgressReporter& progress,
                                const std::filesystem::path& run_folder) {
  if (!active()) return true;
  judge();
  if (!remeasure_disturbed(executor, again, progress)) return false;
  const uint32_t count = confirm_count(scenario_);
  if (count == 0) {
    explain_growth(run_folder);
    return true;
  }
  std::vector<MeasureAgain::Unit> which;
  for (int k = 0; k < verdicts_->cells_size() && k < static_cast<int>(pairs_.size()); ++k) {
    auto [a, b] = pairs_[static_cast<size_t>(k)];
    if (!run_.results[a]->ok() || !run_.results[b]->ok() || !run_.results[b]->confirmations.empty()) continue;
    if (scenario_.execution.confirm_every_cell || is_verdict(verdicts_->cells(k), Verdict::kRegression))
      which.push_back({a, b});
  }
  if (which.empty()) {
    explain_growth(run_folder);
    return true;
  }
  auto measure = [&](const MeasureAgain::Unit& unit) {
    progress.info(run_.cells[unit[1]].key() + " against " + run_.cells[unit[0]].key() +
                  ": measuring again to confirm (" + pairs_text(count) + ")");
    return executor.confirm_pair(*run_.results[unit[0]], *run_.results[unit[1]], count, run_.cells.size());
  };
  if (!again.each(which, measure)) return false;
  judge();
  explain_growth(run_folder);
  return true;
}

// A named namespace: the run's files are compiled as one unit (a unity build).
namespace ab_judge {

// What grew from A to B: callgrind's counts when the metric is instructions, else perf's
// samples when both cells were profiled; none otherwise.
std::vector<v1::FunctionGrowth> growth(const Scenario& s, const CellResult& ca, const CellResult& cb,
                                       const std::filesystem::path& run_folder) {
  if (s.regression.metric == "instructions" && s.instructions)
    return what_grew(mean_callgrind(profile_paths(run_folder, ca.reps, ca.confirmations)),
                     mean_callgrind(profile_paths(run_folder, cb.reps, cb.confirmations)),
                     static_cast<double>(s.instructions->requests_high));
  if (!ca.cell.profile || !cb.cell.profile) return {};
  const auto a = mean_perf_costs(run_folder, ca.reps, ca.confirmations);
  const auto b = mean_perf_costs(run_folder, cb.reps, cb.confirmations);
  if (a.empty() || b.empty()) return {};  // a side without profiles: nothing to compare
  return what_grew(a, b, 1, 10, kCpuUsUnit);
}

}  // namespace ab_judge

void AbJudge::explain_growth(const std::filesystem::path& run_folder) {
  if (!verdicts_) return;
  for (int k = 0; k < verdicts_->cells_size() && k < static_cast<int>(pairs_.size()); ++k) {
    auto* cell = verdicts_->mutable_cells(k);
    const auto [a, b] = pairs_[static_cast<size_t>(k)];
    if (!is_verdict(*cell, Verdict::kRegression) || !run_.results[a] || !run_.results[b]) continue;
    const auto grew = ab_judge::growth(scenario_, *run_.results[a], *run_.results[b], run_folder);
    cell->clear_grew();
    for (auto& g : grew) *cell->add_grew() = g;
    if (!grew.empty()) cell->set_reason(cell->reason() + "; " + grew_text(grew));
  }
}

}  // namespace loadlab::controller
