#include "run/baseline_judge.hpp"

#include <algorithm>

#include "history/history.hpp"
#include "history/night_verdicts.hpp"
#include "judge/compare.hpp"
#include "judge/verdict_kind.hpp"
#include "loadlab/shared/json_input.hpp"

namespace loadlab::controller {

namespace fs = std::filesystem;

namespace {

// The result.json a --baseline names: a run folder's, or the file itself.
std::string baseline_result_path(const std::string& baseline) {
  return fs::is_directory(baseline) ? (fs::path(baseline) / "result.json").string() : baseline;
}

nlohmann::json read_baseline(const std::string& baseline) {
  const std::string path = baseline_result_path(baseline);
  nlohmann::json base = read_json_file(path);
  if (!base.is_object() || !base.contains("cells") || !base["cells"].is_array())
    throw InputError("/cells", "is required: --baseline names a run folder or its result.json").in_file(path);
  return base;
}

}  // namespace

void BaselineJudge::check() const {
  if (judging() && !against_history()) read_baseline(options_.baseline);
}

bool BaselineJudge::suspect(const std::string& key) const {
  if (!verdicts_) return false;
  for (auto& c : verdicts_->cells())
    if (c.key() == key) return c.suspect();
  return false;
}

RegressionDef BaselineJudge::regression() const {
  RegressionDef r = scenario_.regression;
  if (options_.baseline_nights) {
    r.baseline_nights = *options_.baseline_nights;
    r.min_nights = std::min(r.min_nights, r.baseline_nights);
  }
  return r;
}

void BaselineJudge::judge(const fs::path& folder, const RunCells& run) {
  if (against_history()) return judge_against_history(folder, run);
  const nlohmann::json base = read_baseline(options_.baseline);
  const auto current = read_json_file((folder / "result.json").string());
  try {
    verdicts_ = compare_results(base, current, regression());
  } catch (const InputError& e) {
    throw e.in_file("--baseline " + options_.baseline);
  }
  verdicts_->set_baseline(baseline_result_path(options_.baseline));
}

void BaselineJudge::judge_against_history(const fs::path& folder, const RunCells& run) {
  auto added = append_run_file(options_.history, folder.string());
  History h = History::open(options_.history, History::Mode::kExisting);
  auto keys = run.keys();
  if (last_good_ab_target(scenario_)) {  // the last good build's cells are A's, judged by none
    const std::string a = scenario_.ab_a + "/";
    keys.erase(std::remove_if(keys.begin(), keys.end(), [&](auto& k) { return k.rfind(a, 0) == 0; }),
               keys.end());
  }
  verdicts_ = judge_run(h, scenario_.name, added.run_id, keys, regression());
  disturbed_.clear();
  for (auto& c : verdicts_->cells())
    if (c.disturbed()) disturbed_.insert(c.key());
  for (auto& c : *verdicts_->mutable_cells())
    for (auto& r : run.results)
      if (r && r->cell.key() == c.key() && !r->disturbed.empty()) {
        const size_t times = remeasures(*r, scenario_.repetitions);
        c.set_disturbed(true);
        c.set_reason("measured again" + (times > 1 ? " " + std::to_string(times) + " times" : std::string()) +
                     " at the end of the run (other work ran on its CPUs " +
                     (times > 1 ? "each earlier time" : "the first time") + "): " + c.reason());
      }
}

void BaselineJudge::adopt_ab(const v1::Verdicts* ab, const std::string& note) {
  if (!verdicts_ || !against_history() || !last_good_ab_target(scenario_)) return;
  if (!note.empty()) verdicts_->set_note(verdicts_->note() + (verdicts_->note().empty() ? "" : "; ") + note);
  if (!ab) return;
  for (auto& c : *verdicts_->mutable_cells())
    for (auto& paired : ab->cells())
      if (paired.key() == c.key()) {
        v1::CellVerdict decided = paired;
        *decided.mutable_by_history() = c;
        c = std::move(decided);
      }
  verdicts_->set_regressions(0);
  verdicts_->set_failed(0);
  for (auto& c : verdicts_->cells()) {
    verdicts_->set_regressions(verdicts_->regressions() + is_verdict(c, Verdict::kRegression));
    verdicts_->set_failed(verdicts_->failed() + is_verdict(c, Verdict::kFailed));
  }
}

}  // namespace loadlab::controller
