#pragma once
// `loadlab run ... --baseline history --bisect`: after a night whose verdicts name regressions,
// each regressed cell whose target is built from a commit is bisected (bisect.hpp) from the
// commit of the newest earlier night in the history that ran another commit (good) to tonight's
// (bad), into RUN_FOLDER/bisect/KEY.
#include <ostream>
#include <string>

#include "run/scenario_run.hpp"

namespace loadlab::controller {

// `o` is the night's run's (its history, lab, stop); `run_folder` its folder. Prints each
// bisect; returns how many named a first bad commit. A cell with no earlier commit to start
// from is said and passed over.
int bisect_regressions(const RunOptions& o, const std::string& run_folder, std::ostream& out);

}  // namespace loadlab::controller
