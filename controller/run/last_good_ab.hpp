#pragma once
// regression.ab_last_good: a nightly judged against its history also runs, in the same run, the
// last good night's build of its target built from a commit (A) against tonight's (B), pair by
// pair as "ab" does (A B, B A, ...), so that the host's drift between nights cancels. The run's
// scenario gets the last good build as a target of its own (last_good_target_name) and an "ab"
// naming the cells to pair: every cell ("all"), or those whose history cannot resolve the
// threshold ("auto": no minimum detectable change yet, or one above 1.5 ×
// regression.threshold_pct, as the last judged night's verdicts say). Such a cell's verdict is then its
// A/B's, the history's kept beside it (BaselineJudge::adopt_ab).
#include <optional>
#include <string>

#include "scenario/scenario.hpp"

namespace loadlab::controller {

struct LastGoodAb {
  std::optional<Scenario> scenario;  // the scenario with the A/B; none: no A/B tonight
  std::string note;                  // what the A/B is, or why there is none
};

// `s`'s commits resolved (TargetDef::commit_sha); `history_path` the run's --history; `r` the
// regression settings the run judges with.
LastGoodAb plan_last_good_ab(const Scenario& s, const std::string& history_path, const RegressionDef& r);
// The note of the A/B a scenario planned already holds (a resumed run's); "" when it holds none.
std::string planned_ab_note(const Scenario& s);

}  // namespace loadlab::controller
