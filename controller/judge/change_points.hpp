#pragma once
// Change points in a series of nightly figures: the runs where a figure moved to a new
// level and stayed there, found by E-divisive means with a permutation test. A pure
// function over numbers: the history (history.hpp) gives it one cell's per-run medians.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace loadlab::controller {

struct ChangePointOptions {
  // The fewest runs a level must last, on either side of a change. A single outlier night
  // cannot be a level of its own; the price is that a change is named only once this many
  // runs show it. At least 2 (the statistic needs a pair within each side).
  size_t min_segment = 3;
  // The permutation test: a split counts when fewer than max_p_value of the permuted series
  // (values shuffled within their current segments) give as strong a split. The p-value
  // is (k + 1) / (permutations + 1), so 499 permutations resolve p down to 0.002.
  size_t permutations = 499;
  double max_p_value = 0.01;
  uint64_t seed = 20140101;  // the shuffles are deterministic: the same series, the same answer
};

struct ChangePoint {
  size_t index = 0;      // the first element of the new level
  double p_value = 0;    // of the permutation test that accepted it
  double statistic = 0;  // Q̂ of the split (E-divisive's scaled energy distance)
};

// The change points of `series` (finite values, in time order), by index. Deterministic
// for a given `options.seed`. O(permutations × n²) per change point found, plus one more
// round to find that there are no further ones.
[[nodiscard]] std::vector<ChangePoint> find_change_points(const std::vector<double>& series,
                                                          const ChangePointOptions& options = {});

}  // namespace loadlab::controller
