// The search of `loadlab bisect` against a known first bad commit: every position of it in
// ranges of every size, with and without commits that cannot be judged.
#include "run/bisect_search.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace loadlab::controller {
namespace {

// Runs the search where commit `first_bad` (and every later one) is bad and the `skipped` ones
// cannot be judged; the steps it took.
size_t search(BisectSearch& s, size_t first_bad, const std::set<size_t>& skipped = {}) {
  size_t steps = 0;
  while (auto next = s.next()) {
    ++steps;
    s.record(*next, skipped.count(*next) ? StepOutcome::kSkip
                    : *next >= first_bad ? StepOutcome::kBad
                                         : StepOutcome::kGood);
  }
  return steps;
}

TEST(BisectSearch, NamesEveryFirstBadCommitWithinLog2Steps) {
  for (size_t n = 1; n <= 40; ++n)
    for (size_t first_bad = 0; first_bad < n; ++first_bad) {
      BisectSearch s(n);
      const size_t steps = search(s, first_bad);
      ASSERT_EQ(s.first_bad(), first_bad) << n;
      EXPECT_LE(steps, static_cast<size_t>(std::ceil(std::log2(static_cast<double>(n)))))
          << n << " " << first_bad;
      EXPECT_EQ(s.worst_steps(), static_cast<size_t>(std::ceil(std::log2(static_cast<double>(n))))) << n;
    }
}

TEST(BisectSearch, ASkippedCommitIsPassedForItsNeighbour) {
  // 7 candidates, the bad from index 4; the first midpoint (2) does not build.
  BisectSearch s(7);
  ASSERT_EQ(s.next(), 2u);
  s.record(2, StepOutcome::kSkip);
  EXPECT_EQ(s.next(), 1u);  // the nearest untested, the earlier on a tie
  EXPECT_EQ(search(s, 4, {2}), 3u);
  EXPECT_EQ(s.first_bad(), 4u);
}

TEST(BisectSearch, SkippedCommitsBesideTheChangeLeaveARange) {
  // The bad from index 3; 2 cannot be judged: the first bad is 2 or 3, and the search says so.
  BisectSearch s(7);
  search(s, 3, {2});
  EXPECT_FALSE(s.next());
  EXPECT_FALSE(s.first_bad());
  EXPECT_EQ(s.range(), (std::vector<size_t>{2, 3}));
}

TEST(BisectSearch, OnlyTheBadCommitNeedsNoStep) {
  BisectSearch s(1);
  EXPECT_FALSE(s.next());
  EXPECT_EQ(s.first_bad(), 0u);
  EXPECT_EQ(s.worst_steps(), 0u);
}

}  // namespace
}  // namespace loadlab::controller
