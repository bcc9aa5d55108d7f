#pragma once
// Interleaved A/B (the scenario's "ab"): build B against build A, cell by cell, from pairs of
// repetitions run one after the other (A B, B A, ...). What drifts over the run (the host, a
// neighbour) moves both of a pair alike, so the log ratio of each pair is the evidence: a
// one-sided paired t test at the cell's level, beyond the threshold, as in verdict.hpp. No
// history is needed, and no confirmation: the pairs are it.
#include <string>
#include <utility>
#include <vector>

#include "loadlab/controller/compare.hpp"
#include "loadlab/controller/plan.hpp"
#include "loadlab/controller/results.hpp"
#include "loadlab/v1/result.pb.h"

namespace loadlab::controller {

// The cells of an A/B scenario as pairs of indices into `cells` (A's, B's): the cells of
// targets `a` and `b` whose other axes agree, in the order of A's cells.
std::vector<std::pair<size_t, size_t>> ab_pairs(const std::vector<Cell>& cells, const std::string& a,
                                                const std::string& b);

// Each pair (A's result, B's result) judged; method "a/b", a cell verdict per pair keyed by B's
// cell, with A's key and the pairs. `cells`: how many pairs the run has (the level's share).
v1::Verdicts judge_ab(const std::vector<std::pair<const CellResult*, const CellResult*>>& pairs,
                      const RegressionDef& r, size_t cells);

// The pairs as the terminal shows them after the verdicts: a line per pair of each cell.
void write_ab_pairs(std::ostream& out, const v1::Verdicts& v);

}  // namespace loadlab::controller
