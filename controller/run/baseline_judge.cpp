#include "run/baseline_judge.hpp"

#include <algorithm>
#include <optional>

#include "history/history.hpp"
#include "history/night_verdicts.hpp"
#include "judge/compare.hpp"
#include "judge/verdict_kind.hpp"
#include "loadlab/proto/json.hpp"
#include "loadlab/shared/folded_stacks.hpp"
#include "loadlab/shared/json_input.hpp"
#include "results/callgrind_profile.hpp"
#include "run/cpu_profiles.hpp"

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

// Cell `key` as result.json `result` records it; none when it has no such cell, or records it
// in a form this loadlab does not read.
std::optional<v1::CellResult> recorded_cell(const nlohmann::json& result, const std::string& key) {
  for (auto& c : result.value("cells", nlohmann::json::array())) {
    if (c.value("/cell/key"_json_pointer, std::string()) != key) continue;
    v1::CellResult cell;
    try {
      proto::from_json(c.dump(), &cell);
    } catch (const InputError&) {
      return std::nullopt;  // a night of another loadlab version: nothing to compare with
    }
    return cell;
  }
  return std::nullopt;
}

// What grew in cell `key` from the night `base` (its run folder `base_folder`) to tonight's:
// callgrind's counts with the metric `instructions`, else the servers' perf samples when
// tonight's cell was profiled (the history judged it against nights profiled alike).
std::vector<v1::FunctionGrowth> night_growth(const Scenario& s, const std::string& key,
                                             const nlohmann::json& base, const fs::path& base_folder,
                                             const nlohmann::json& tonight, const fs::path& folder) {
  const auto a = recorded_cell(base, key), b = recorded_cell(tonight, key);
  if (!a || !b) return {};
  if (s.regression.metric == "instructions" && s.instructions)
    return what_grew(mean_callgrind(profile_paths(base_folder, a->repetitions(), a->confirmations())),
                     mean_callgrind(profile_paths(folder, b->repetitions(), b->confirmations())),
                     static_cast<double>(s.instructions->requests_high));
  if (b->cell().profile().frequency_hz() == 0) return {};
  const auto before = mean_perf_costs(base_folder, a->repetitions(), a->confirmations());
  const auto after = mean_perf_costs(folder, b->repetitions(), b->confirmations());
  if (before.empty() || after.empty()) return {};  // a night without profiles (perf unavailable, files gone)
  return what_grew(before, after, 1, 10, kCpuUsUnit);
}

// The nightly A/B's verdict that takes cell `key`'s place (adopt_ab), or none: the history's
// stands where the A/B failed or was inconclusive, or where there was no A/B (`ab` null).
const v1::CellVerdict* ab_decision(const v1::Verdicts* ab, const std::string& key) {
  if (!ab) return nullptr;
  for (auto& paired : ab->cells())
    if (paired.key() == key && !is_verdict(paired, Verdict::kFailed) &&
        !is_verdict(paired, Verdict::kInconclusive))
      return &paired;
  return nullptr;
}

// The base night's server profiles, every repetition's and confirmation's summed, kept in
// tonight's folder as profiles/KEY.base.server.folded for the report's differential flame
// graph (tonight's folder holds what the report draws, whatever becomes of that night's);
// `from` names the night. Without any, profile_base_from says why.
void keep_profile_base(v1::CellVerdict& c, const std::optional<v1::CellResult>& base_cell,
                       const fs::path& base_folder, const std::string& from, const fs::path& folder) {
  FoldedStacks sum;
  size_t files = 0;
  if (base_cell)
    for (auto* reps : {&base_cell->repetitions(), &base_cell->confirmations()})
      for (auto& r : *reps) {
        if (r.server().profile().file().empty()) continue;
        try {
          for (auto& [stack, count] :
               parse_folded(read_text_file((base_folder / r.server().profile().file()).string())))
            sum[stack] += count;
          ++files;
        } catch (const std::exception&) {
          // a file gone with its folder: the others still give the night's shares
        }
      }
  if (sum.empty()) {
    c.set_profile_base_from(from +
                            (base_cell ? " left no server profile to draw against (perf was unavailable, or "
                                         "its profiles are gone)"
                                       : "'s result.json is gone, or holds no such cell this loadlab reads"));
    return;
  }
  std::string name = c.key();
  std::replace(name.begin(), name.end(), '/', '_');
  const fs::path file = fs::path("profiles") / (name + ".base.server.folded");
  std::error_code ec;
  fs::create_directories(folder / "profiles", ec);
  if (!write_profile_file(folder / file, folded_text(sum))) {
    c.set_profile_base_from((folder / file).string() + " could not be written");
    return;
  }
  c.set_profile_base(file.string());
  c.set_profile_base_from(from + " (" + std::to_string(files) + " repetitions summed)");
}

}  // namespace

std::vector<std::string> judged_keys(const Scenario& s, const RunCells& run) {
  std::vector<std::string> keys;
  const bool last_good = last_good_ab_target(s) != nullptr;
  for (auto& c : run.cells)  // the last good build's cells are A's of a nightly A/B, judged by none
    if (!last_good || c.target != s.ab_a) keys.push_back(c.key());
  return keys;
}

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
  verdicts_ = judge_run(h, scenario_.name, added.run_id, judged_keys(scenario_, run), regression());
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

void BaselineJudge::finish(const fs::path& folder, const v1::Verdicts* ab, const std::string& note) {
  const bool adopting = verdicts_ && against_history() && last_good_ab_target(scenario_);
  explain_growth(folder, adopting ? ab : nullptr);
  adopt_ab(ab, note);
}

// A cell the nightly A/B decides is not explained against the history: the A/B's own what grew
// and profiles (its A side's) are what its verdict shows.
void BaselineJudge::explain_growth(const fs::path& folder, const v1::Verdicts* ab) {
  if (!verdicts_ || !against_history()) return;
  const History h = History::open(options_.history, History::Mode::kExisting);
  const auto runs = h.runs(scenario_.name);
  const auto tonight = read_json_file((folder / "result.json").string());
  for (auto& c : *verdicts_->mutable_cells()) {
    if (!is_verdict(c, Verdict::kRegression) || c.history().empty() || ab_decision(ab, c.key())) continue;
    const int64_t base_id = c.history(c.history_size() - 1).run_id();  // the newest baseline night
    const auto run = std::find_if(runs.begin(), runs.end(), [&](auto& r) { return r.id == base_id; });
    if (run == runs.end()) continue;
    const auto now = recorded_cell(tonight, c.key());
    const bool profiled = now && now->cell().profile().frequency_hz() > 0;
    const std::string from = "the night of " + run->started_at + ", the newest of the band";
    nlohmann::json base;
    try {
      base = read_json_file(run->result_path);
    } catch (const InputError&) {
      if (profiled) keep_profile_base(c, std::nullopt, run->run_folder, from, folder);
      continue;  // that night's folder is gone
    }
    if (profiled) keep_profile_base(c, recorded_cell(base, c.key()), run->run_folder, from, folder);
    const auto grew = night_growth(scenario_, c.key(), base, run->run_folder, tonight, folder);
    c.clear_grew();
    for (auto& g : grew) *c.add_grew() = g;
    if (!grew.empty())
      c.set_reason(c.reason() + "; against the night of " + run->started_at + ", " + grew_text(grew));
  }
}

void BaselineJudge::adopt_ab(const v1::Verdicts* ab, const std::string& note) {
  if (!verdicts_ || !against_history() || !last_good_ab_target(scenario_)) return;
  if (!note.empty()) verdicts_->set_note(verdicts_->note() + (verdicts_->note().empty() ? "" : "; ") + note);
  if (!ab) return;
  for (auto& c : *verdicts_->mutable_cells())
    if (const v1::CellVerdict* paired = ab_decision(ab, c.key())) {
      v1::CellVerdict decided = *paired;
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
