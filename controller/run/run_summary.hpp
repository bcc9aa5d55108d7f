#pragma once
// What `loadlab run` prints when it ends: the table of the finished cells, where the results
// are, how many cells failed, how to resume an interrupted run, and the verdicts.
#include <filesystem>
#include <ostream>

#include "loadlab/v1/result.pb.h"
#include "run/run_cells.hpp"
#include "scenario/scenario.hpp"

namespace loadlab::controller {

// The table of the finished cells and what follows it; returns the exit status
// (loadlab/shared/exit_status.hpp) before the verdicts: 128 + `stopped_by` when a signal
// stopped the run, kCellsFailed when a cell failed, else kOk.
int write_summary(std::ostream& out, const Scenario& s, const RunCells& run,
                  const std::filesystem::path& folder, int stopped_by);

// The verdicts after the table, against the baseline and of the A/B pairs (either may be
// null); returns `status` made worse by kRegression when either found a regression.
int write_verdict_summary(std::ostream& out, const Scenario& s, const v1::Verdicts* baseline,
                          const v1::Verdicts* ab, int status);

}  // namespace loadlab::controller
