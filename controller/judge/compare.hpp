#pragma once
// Verdicts of a run's cells against a baseline, and how they are printed
// (docs/verdicts-design.md). Two kinds of baseline:
//
//   history   each cell against its earlier nights (night_verdicts.hpp, verdict.hpp): the
//             nights' own spread is the noise model. What a nightly uses.
//   two runs  `loadlab compare BASE NEW`, `loadlab run --baseline DIR`: NEW against one BASE
//             run. A run's repetitions spread less than nights do, so this can only say what
//             two runs show: a one-sided two-sample t test on the log figures of the repetitions
//             (never their per-second intervals, which are not independent) at the cell's
//             level, beyond the threshold; and it says that it cannot tell a slow night.
//
// The metric and the settings come from the scenario's "regression" object (RegressionDef,
// scenario/regression.hpp).
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "loadlab/shared/json_input.hpp"
#include "loadlab/v1/result.pb.h"
#include "scenario/regression.hpp"

namespace loadlab::controller {

// The scenario copy's regression settings of a result.json; the defaults when it has none (a
// capacity search's: the metric capacity).
RegressionDef regression_of_result(const nlohmann::json& result);
// Whether a larger value of the metric is better; InputError naming --metric and the
// allowed names for an unknown one.
bool metric_higher_is_better(const std::string& name);
// A metric other work on the machine does not move (instructions per request, counted): a
// repetition flagged busy-machine still counts, and is not measured again for it.
inline bool unmoved_by_other_work(const std::string& name) { return name == "instructions"; }
// The metric's figure of one repetition; none where the client could not give it.
std::optional<double> metric_value(const std::string& name, const v1::Repetition& r);

// NEW (a result.json) against BASE, cell by cell (method "two runs"). Cells are matched by
// key; a cell that failed or is missing in NEW is "failed"/"missing" (counted in `failed`, not
// as a regression), one that is only in NEW or failed in BASE "new". NEW's confirmations,
// when it has them, must show the change too. Throws InputError for a bad metric, a document
// that is not a loadlab result, or two runs that cannot be compared (other scenarios, or
// matrices of other axes).
v1::Verdicts compare_results(const nlohmann::json& base, const nlohmann::json& current,
                             const RegressionDef& r);

// The verdicts as the terminal shows them: a line per cell, then the count and what the
// method can and cannot show.
void write_verdicts(std::ostream& out, const v1::Verdicts& v);
// A cell a nightly A/B decided (CellVerdict.by_history): which A, and what the history alone said.
std::string history_beside(const v1::CellVerdict& c);

}  // namespace loadlab::controller
