#pragma once
// Interleaved A/B (the scenario's "ab"): build B against build A, cell by cell, from pairs of
// repetitions run one after the other (A B, B A, ...). What drifts over the run (the host, a
// neighbour) moves both of a pair alike, so the log ratio of each pair is the evidence: a
// one-sided paired t test at the cell's level, beyond the threshold, as in verdict.hpp. No
// history is needed. Confirm before alarm: when the pairs say regression, the run measures
// more pairs on fresh targets (execution.confirm), and the regression holds only when they too
// show B worse, beyond the threshold and their own band at kConfirmLevel (the first pairs took
// the false-alarm level; unchanged code must now fool both).
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "judge/compare.hpp"
#include "loadlab/v1/result.pb.h"
#include "results/results.hpp"
#include "scenario/plan.hpp"

namespace loadlab::controller {

// The cells of an A/B scenario as pairs of indices into `cells` (A's, B's): the cells of
// targets `a` and `b` whose other axes agree, in the order of A's cells.
std::vector<std::pair<size_t, size_t>> ab_pairs(const std::vector<Cell>& cells, const std::string& a,
                                                const std::string& b);

// The confirmation's level (one-sided), and the power each of the two measurements is sized for
// when the run confirms: both catch a change 95 % of the time, however they are correlated.
inline constexpr double kConfirmLevel = 0.05;
inline constexpr double kPowerPerPairedMeasurement = 0.975;

// Each pair (A's result, B's result) judged; method "a/b", a cell verdict per pair keyed by B's
// cell, with A's key and the pairs, and the confirmation's pairs where the cells have them.
// `cells`: how many pairs the run has (the level's share); `confirms`: the run measures a
// suspect again (its minimum detectable change counts both measurements).
v1::Verdicts judge_ab(const std::vector<std::pair<const CellResult*, const CellResult*>>& pairs,
                      const RegressionDef& r, size_t cells, bool confirms);

// A pair's order as the tables show it: "A B" or "B A", and ", left out" when other work ran on
// its CPUs (ABPair.left_out).
std::string pair_order(const v1::ABPair& p);

// A pair's figures as the tables show them: A's or B's with two decimals, "n/a" where that
// side's repetition has none; and B against A in %, none unless both have a figure and A's is
// above zero.
std::string pair_figure_text(const v1::ABPair& p, bool b);
std::optional<double> pair_change_pct(const v1::ABPair& p);

// The pairs as the terminal shows them after the verdicts: a line per pair of each cell.
void write_ab_pairs(std::ostream& out, const v1::Verdicts& v);

}  // namespace loadlab::controller
