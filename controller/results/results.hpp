#pragma once
// The result model: each repetition's figures are a v1::Repetition (proto/loadlab/v1/
// result.proto, the one definition of every figure); a cell is its repetitions and their
// summary, kept and read back only as a v1::CellResult in the proto's JSON form.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loadlab/v1/result.pb.h"
#include "scenario/plan.hpp"

namespace loadlab::controller {

struct CellResult {
  Cell cell;
  std::vector<v1::Repetition> reps;
  std::vector<v1::Repetition> confirmations;  // CellResult.confirmations
  std::vector<v1::Repetition> disturbed;      // CellResult.disturbed: replaced by `reps`
  std::string error;                          // why the cell failed; empty when it succeeded
  // A capacity search's cell (Scenario::search): one search per repetition, whose figures at
  // the capacity found are the repetition in `reps` of the same index (CellResult.searches).
  std::vector<v1::SearchResult> searches;
  bool ok() const { return error.empty() && !reps.empty(); }
  // The median search's capacity (the lower median), and the spread; 0 without searches.
  double capacity() const;
  double capacity_min() const;
  double capacity_max() const;
  // The search whose capacity is capacity() (the lower median); the cell must have searches.
  const v1::SearchResult& median_search() const;
  // The repetition with the median QPS (lower median for an even count); the cell's
  // figures are that repetition's, so they belong to one real run.
  size_t median_index() const;
  const v1::Repetition& median() const { return reps.at(median_index()); }
  double qps_min() const;
  double qps_max() const;
  std::vector<std::string> flags() const;  // union over repetitions
  // The scenario's `instructions`: the median (lower) of the repetitions' instructions per
  // request; none without a count, and then the first repetition's reason.
  std::optional<double> instructions() const;
  std::string instructions_unavailable() const;
};

// Whether the run was a capacity search (Scenario::search): some cell has searches.
bool any_searched(const std::vector<CellResult>& cells);
// Whether some cell counts its instructions (the scenario's `instructions`).
bool any_counted(const std::vector<CellResult>& cells);

// The cell as result.json and the journal keep it.
v1::CellResult to_proto(const CellResult& c);
// A cell read back from the journal or result.json (for --resume): its repetitions and
// error; `cell` is the one the current expansion has under the same key.
CellResult cell_from_proto(const v1::CellResult& p, const Cell& cell);
v1::CellConfig config_of(const Cell& c);
// The cell a CellConfig describes (config_of's inverse, but `index` and `target_index`, which
// the config does not keep). Its axes must be knobs (find_knob): key() and the reporters
// look them up.
Cell cell_of(const v1::CellConfig& p);

// Adds another load agent's usage into `into`: several load agents are one client. CPU and
// RSS add; the machine figures stay per machine (the busiest is kept).
void add_usage(v1::Usage& into, const v1::Usage& other);
// Adds `o`'s samples to `into`'s (a cell's load agents' profiles, merged): their stacks summed,
// the first reason of a part that had none kept as `unavailable`.
void add_cpu_profile(v1::CpuProfile& into, const v1::CpuProfile& o);

}  // namespace loadlab::controller
