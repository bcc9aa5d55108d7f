#pragma once
// The search of `loadlab bisect`, apart from how a step is measured: the candidates are the
// first-parent commits after the good one, the bad one last (index n-1, known bad); each step
// tests one, midway between the last known good and the first known bad, as `git bisect` does.
// A commit that cannot be judged (it does not build, or its A/B stayed inconclusive) is
// skipped: the next step takes the untested commit nearest the middle instead.
#include <cstddef>
#include <optional>
#include <vector>

namespace loadlab::controller {

enum class StepOutcome { kGood, kBad, kSkip };

class BisectSearch {
 public:
  explicit BisectSearch(size_t candidates);  // at least 1 (the bad commit)
  void record(size_t index, StepOutcome outcome);

  // The candidate to test next; none when the search is over.
  std::optional<size_t> next() const;
  // When the search is over: the first bad commit's index, if one is named; else (commits that
  // were skipped stand between the last good and the first bad) none.
  std::optional<size_t> first_bad() const;
  // The indexes the first bad commit is among: (last good, first bad], skipped ones included.
  std::vector<size_t> range() const;
  // Steps at most: ceil(log2(candidates + 1)), without skips.
  size_t worst_steps() const;

 private:
  long last_good() const;  // -1: the good commit itself
  size_t first_known_bad() const;
  std::vector<std::optional<StepOutcome>> known_;
};

}  // namespace loadlab::controller
