#pragma once
// `loadlab bisect SCENARIO --cell KEY --good C1 --bad C2`: the first commit of a target built
// from a commit (a catalog entry's "source") that makes one cell worse. The first-parent commits
// between C1 and C2 are searched midway (bisect_search.hpp); each step is an interleaved A/B run
// of the cell, the good commit as A and the step's commit as B (the scenario's metric and
// threshold; `instructions` counts when that is the metric), in a run folder of its own. A step
// whose A/B is inconclusive is measured again with twice the pairs, up to kMaxBisectRounds; a
// commit that does not build is skipped. The range and every step are journaled in the bisect's
// folder (result.json), so that a killed bisect resumes (--resume DIR), a step in progress with
// its run's own journal.
#include <cstdint>
#include <ostream>
#include <string>

#include "run/scenario_run.hpp"

namespace loadlab::controller {

inline constexpr uint32_t kMaxBisectRounds = 3;  // an inconclusive step: n, 2n, 4n pairs

struct BisectOptions {
  // The scenario, its --set overrides and include root, the lab (a target built from a commit is
  // an agent catalog's), the embedded agent's factory, quiet, stop: as for a run.
  RunOptions run;
  std::string cell;        // the cell's key
  std::string good, bad;   // refs of the target's repository
  std::string out_dir;     // the bisect's folder; "" = bisects/NAME-TIME
  std::string resume_dir;  // continue the bisect in this folder
  uint32_t pairs = 0;      // pairs of a step's first round; 0 = the scenario's repetitions (at least 5)
};

// Prints each step and the first bad commit to `out`; writes result.json and report.html in the
// bisect's folder. Exit status 0 when a first bad commit is named, 3 when skipped commits leave
// a range, 128 + N when signal N stopped it (resumable). Throws InputError (2) for bad input and
// EnvironmentError (4).
int run_bisect(const BisectOptions& o, std::ostream& out);

}  // namespace loadlab::controller
