#pragma once
// The nightly verdicts of a run against the history (verdict.hpp): each cell's night judged
// against the cell's earlier nights, as result.json's "verdicts"; and the replay of the same
// procedure over every night a history holds (`loadlab history FILE --verdicts`).
#include <cstdint>
#include <string>
#include <vector>

#include "history/history.hpp"
#include "judge/compare.hpp"
#include "loadlab/v1/result.pb.h"

namespace loadlab::controller {

// The verdict settings of a regression definition for a run of `cells` cells.
VerdictOptions verdict_options(const RegressionDef& r, size_t cells);

// Run `run_id` of `scenario` (in `h`), cells `keys`: each judged against the nights before it.
v1::Verdicts judge_run(const History& h, const std::string& scenario, int64_t run_id,
                       const std::vector<std::string>& keys, const RegressionDef& r);

// A CellVerdict from the verdict of night `i` of a series (`nights`, judged as `verdicts`).
v1::CellVerdict cell_verdict(const std::string& key, size_t i, const std::vector<Night>& nights,
                             const std::vector<NightVerdict>& verdicts);

}  // namespace loadlab::controller
