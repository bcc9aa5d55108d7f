#include "run/nightly_bisect.hpp"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "history/history.hpp"
#include "judge/verdict_kind.hpp"
#include "loadlab/shared/exit_status.hpp"
#include "loadlab/shared/json_input.hpp"
#include "run/bisect.hpp"
#include "run/result_header.hpp"

namespace loadlab::controller {

namespace {

namespace fs = std::filesystem;

// The sha `result` (a result.json) records for target `name`; "" when none.
std::string commit_of(const nlohmann::json& result, const std::string& name) {
  const auto r = recorded_commit(result.value("target_commits", nlohmann::json::array()), name);
  return r ? r->sha : "";
}

// The commit of `target` on the newest earlier night of `scenario` that ran another commit than
// `tonight`; "" when there is none.
std::string earlier_commit(const History& h, const std::string& scenario, const std::string& target,
                           const std::string& tonight, const std::string& run_folder) {
  auto runs = h.runs(scenario);
  std::sort(runs.begin(), runs.end(), [](auto& a, auto& b) { return a.started_at > b.started_at; });
  for (auto& r : runs) {
    if (fs::path(r.run_folder) == fs::path(run_folder) || r.finished_at.empty()) continue;
    std::string sha;
    try {
      sha = commit_of(read_json_file(r.result_path), target);
    } catch (const std::exception&) {
      continue;  // a night whose folder is gone
    }
    if (!sha.empty() && sha != tonight) return sha;
  }
  return "";
}

}  // namespace

int bisect_regressions(const RunOptions& o, const std::string& run_folder, std::ostream& out) {
  const auto result = read_json_file((fs::path(run_folder) / "result.json").string());
  const std::string scenario = result.value("/scenario/name"_json_pointer, std::string());
  const History history = History::open(o.history, History::Mode::kExisting);
  int named = 0;
  for (auto& v : result.value("/verdicts/cells"_json_pointer, nlohmann::json::array())) {
    if (v.value("verdict", "") != verdict_name(Verdict::kRegression)) continue;
    const std::string key = v.value("key", ""), target = key.substr(0, key.find('/'));
    const std::string tonight = commit_of(result, target);
    if (tonight.empty()) continue;  // not built from a commit: nothing to bisect
    // A night's A/B against the last good build (regression.ab_last_good) names its good side;
    // otherwise the newest earlier night of another commit is it.
    const std::string a_key = v.value("a_key", "");
    const std::string good = !a_key.empty() ? commit_of(result, a_key.substr(0, a_key.find('/')))
                                            : earlier_commit(history, scenario, target, tonight, run_folder);
    if (good.empty()) {
      out << "bisect " << key << ": no earlier night in the history ran another commit of " << target << "\n";
      continue;
    }
    BisectOptions b;
    b.run = o;
    b.run.scenario_path = (fs::path(run_folder) / "scenario.json").string();
    if (!fs::exists(b.run.scenario_path)) b.run.scenario_path = o.scenario_path;
    b.run.overrides.clear();
    b.cell = key;
    b.good = good;
    b.bad = tonight;
    std::string folder = key;
    std::replace(folder.begin(), folder.end(), '/', '_');
    b.out_dir = (fs::path(run_folder) / "bisect" / folder).string();
    if (run_bisect(b, out) == exit_status::kOk) ++named;
    if (o.stop && o.stop->load()) break;
  }
  return named;
}

}  // namespace loadlab::controller
