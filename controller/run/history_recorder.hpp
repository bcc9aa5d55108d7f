#pragma once
// --history: a finished run appended to a SQLite history (history/history.hpp), with its
// verdicts, and each cell's trend read back from it.
#include <filesystem>
#include <string>

#include "loadlab/v1/result.pb.h"
#include "run/result_header.hpp"
#include "run/run_cells.hpp"

namespace loadlab::controller {

// Before the run: `path` (--history) is a loadlab history, or a new file in a folder that
// exists. InputError naming --history otherwise.
void check_history_path(const std::string& path);

// Appends the finished run in `folder` (its result.json as saved) to the history at `path`,
// stores its verdicts (when judged), and returns each cell's trend: its median QPS over the
// runs the history holds, this one included. Logs the run's id in the history.
TrendSection record_in_history(const std::string& path, const std::filesystem::path& folder,
                               const std::string& scenario, const v1::Verdicts* verdicts,
                               const RunCells& run);

}  // namespace loadlab::controller
