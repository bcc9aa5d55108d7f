// The verdict's statistics: Mann-Whitney U against hand-computed values, and the verdict's
// error rates on synthetic nights drawn with a fixed seed (the three promises).
#include "loadlab/controller/stats.hpp"

#include <gtest/gtest.h>

#include <random>

#include "loadlab/controller/compare.hpp"

namespace loadlab::controller {
namespace {

TEST(MannWhitney, AgreesWithTheFormulaByHand) {
  // U = 0, mean 12.5, variance 25 * 11 / 12; z = (12.5 - 0.5) / sqrt(22.917) = 2.5067.
  EXPECT_NEAR(mann_whitney_p({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}), 0.012191, 1e-5);
  EXPECT_NEAR(mann_whitney_p({6, 7, 8, 9, 10}, {1, 2, 3, 4, 5}), 0.012191, 1e-5);  // two-sided
  EXPECT_DOUBLE_EQ(mann_whitney_p({3, 3, 3}, {3, 3}), 1.0);                        // all tied
  EXPECT_GT(mann_whitney_p({1, 3, 5, 7}, {2, 4, 6, 8}), 0.5);                      // interleaved
  EXPECT_DOUBLE_EQ(mann_whitney_p({}, {1}), 1.0);
  EXPECT_NEAR(mann_whitney_p_less({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}), 0.012191 / 2, 1e-5);
  EXPECT_NEAR(mann_whitney_p_less({6, 7, 8, 9, 10}, {1, 2, 3, 4, 5}), 1 - 0.012191 / 2, 1e-5);
  EXPECT_NEAR(mann_whitney_min_p(5, 5), 0.012191 / 2, 1e-5);
  EXPECT_GT(mann_whitney_min_p(3, 3), kSignificance);  // three repetitions a side cannot decide
}

// The per-second QPS samples of one night: 3 repetitions × 10 s around `level`, with normal
// noise of `noise` (a fraction) per second and `rep_noise` per repetition (a repetition's
// own level: seconds of one window are not independent of each other).
std::vector<double> night(std::mt19937_64& rng, double level, double noise, double rep_noise = 0) {
  std::normal_distribution<double> unit(0, 1);
  std::vector<double> out;
  for (int rep = 0; rep < 3; ++rep) {
    const double rep_level = level * (1 + rep_noise * unit(rng));
    for (int s = 0; s < 10; ++s) out.push_back(rep_level * (1 + noise * unit(rng)));
  }
  return out;
}

int regressions(double drop, double noise, double threshold_pct, uint64_t seed, double rep_noise = 0) {
  std::mt19937_64 rng(seed);
  int n = 0;
  for (int i = 0; i < 1000; ++i) {
    CellDelta d;
    decide(night(rng, 1000, noise, rep_noise), night(rng, 1000 * (1 - drop), noise, rep_noise), true,
           threshold_pct, d);
    n += d.verdict == "regression";
  }
  return n;
}

TEST(Verdict, TwoDrawsOfOneNoisyDistributionAreAtMostOnePercentRegressions) {
  // Thresholds at and below the noise, so that the test, not the threshold, decides.
  EXPECT_LE(regressions(0.0, 0.02, 0.5, 1), 10);
  EXPECT_LE(regressions(0.0, 0.05, 1.0, 2), 10);
  // Repetitions with levels of their own: the threshold (here 5 %, above that drift) keeps
  // the false alarms down where the seconds alone would overstate the evidence.
  EXPECT_LE(regressions(0.0, 0.02, 5, 5, 0.01), 10);
}

TEST(Verdict, ATenPercentDropUnderTwoPercentNoiseIsCaughtNinetyNinePercentOfTheTime) {
  EXPECT_GE(regressions(0.10, 0.02, 5, 3), 990);
}

TEST(Verdict, AThreePercentDropUnderAFivePercentThresholdIsTheSame) {
  std::mt19937_64 rng(4);
  int same = 0;
  for (int i = 0; i < 1000; ++i) {
    CellDelta d;
    decide(night(rng, 1000, 0.02), night(rng, 970, 0.02), true, 5, d);
    same += d.verdict == "same";
  }
  EXPECT_GE(same, 990);
}

TEST(Verdict, DirectionFollowsTheMetricAndFewSamplesFallBackToRanges) {
  CellDelta d;
  std::vector<double> base(30, 10.0), worse(30, 12.0);
  for (size_t i = 0; i < base.size(); ++i) base[i] += 0.01 * static_cast<double>(i);
  for (size_t i = 0; i < worse.size(); ++i) worse[i] += 0.01 * static_cast<double>(i);
  decide(base, worse, false, 5, d);  // latency up 20 %: worse
  EXPECT_EQ(d.verdict, "regression");
  EXPECT_EQ(d.method, "mann-whitney");
  EXPECT_LT(d.p_value, kSignificance);
  decide(base, worse, true, 5, d);  // QPS up 20 %: better
  EXPECT_EQ(d.verdict, "improvement");
  decide({100, 101, 99}, {80, 81, 79}, true, 5, d);  // three repetitions: ranges apart
  EXPECT_EQ(d.verdict, "regression");
  EXPECT_EQ(d.method, "ranges");
  decide({100, 70, 110}, {90, 80, 105}, true, 5, d);  // ranges overlap
  EXPECT_EQ(d.verdict, "noise");
}

}  // namespace
}  // namespace loadlab::controller
