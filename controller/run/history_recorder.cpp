#include "run/history_recorder.hpp"

#include <cmath>

#include "history/history.hpp"
#include "loadlab/shared/logging.hpp"

namespace loadlab::controller {

namespace fs = std::filesystem;

void check_history_path(const std::string& path) {
  if (path.empty()) return;
  if (fs::exists(path)) {
    try {
      History::open(path, History::Mode::kExisting);
    } catch (const InputError& e) {
      throw InputError("--history", e.message()).in_file(path);
    }
    return;
  }
  const fs::path parent = fs::absolute(path).parent_path();
  if (!fs::is_directory(parent))
    throw InputError("--history", "cannot create " + path + ": no folder " + parent.string());
}

TrendSection record_in_history(const std::string& path, const fs::path& folder, const std::string& scenario,
                               const v1::Verdicts* verdicts, const RunCells& run) {
  auto added = append_run_file(path, folder.string());
  component_logger("controller")->info("run {} in history {}", added.run_id, path);
  auto history = History::open(path, History::Mode::kExisting);
  if (verdicts) history.store_verdicts(added.run_id, *verdicts);
  TrendSection trends{"qps", {}};
  for (auto& r : run.results) {
    if (!r) continue;
    auto& points = trends.by_key[r->cell.key()];
    for (auto& p : history.series(scenario, r->cell.key(), history_metric(trends.metric)))
      if (auto median = p.median()) points.push_back({p.started_at, p.git_commit, *median});
  }
  return trends;
}

}  // namespace loadlab::controller
