// The A/B judge's two estimates of a cell's pairs (regression.ab_estimate): the mean of their log
// ratios with the paired t test, and the 20 % trimmed mean with Yuen's test, on pairs drawn like
// this VM's: most within a few tenths of a per cent, some tens of per cent off (the host changing
// speed within a pair).
#include "judge/ab_verdicts.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "judge/verdict_kind.hpp"
#include "loadlab/shared/input_error.hpp"
#include "scenario/scenario.hpp"

namespace loadlab::controller::ab_verdicts_test {

// Build A's and B's cells of `pairs` pairs: B's qps a factor exp(`change`) of A's, each pair's
// ratio off by N(0, 1 %), and a share `wild` of pairs off by up to ±40 % more.
struct Pairs {
  CellResult a, b;
  Pairs(size_t pairs, double change, double wild, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> noise(0, 0.01);
    std::uniform_real_distribution<double> off(-0.4, 0.4), u(0, 1);
    a.cell.target = "a";
    b.cell.target = "b";
    for (size_t i = 0; i < pairs; ++i) {
      const double speed = 10000 * (1 + 0.2 * u(rng));  // the pair's host speed
      double log_ratio = change + noise(rng);
      if (u(rng) < wild) log_ratio += off(rng);
      a.reps.emplace_back().set_qps(speed);
      b.reps.emplace_back().set_qps(speed * std::exp(log_ratio));
    }
  }
};

v1::CellVerdict judged(const Pairs& p, const std::string& estimate, double threshold_pct = 2) {
  RegressionDef r;
  r.metric = "qps";
  r.threshold_pct = threshold_pct;
  r.ab_estimate = estimate;
  const auto v = judge_ab({{&p.a, &p.b}}, r, 1, false);
  EXPECT_EQ(v.cells_size(), 1);
  return v.cells(0);
}

// 3 % slower, a fifth of the pairs wild, in 100 draws: the trimmed mean catches it nearly every
// time with a minimum detectable change below 3 %; the mean's band is too wide to.
TEST(AbEstimate, TheTrimmedMeanSeesAChangeThatWildPairsHideFromTheMean) {
  size_t caught_trimmed = 0, caught_mean = 0, resolved_trimmed = 0, resolved_mean = 0;
  for (uint64_t seed = 0; seed < 100; ++seed) {
    const Pairs p(60, std::log(0.97), 0.2, seed);
    const auto mean = judged(p, "mean"), trimmed = judged(p, "trimmed");
    caught_trimmed += trimmed.verdict() == "regression";
    caught_mean += mean.verdict() == "regression";
    resolved_trimmed += trimmed.mdc_pct() < 3;
    resolved_mean += mean.mdc_pct() < 3;
    EXPECT_NEAR(trimmed.change_pct(), -3, 1) << trimmed.reason();
  }
  EXPECT_GE(caught_trimmed, 95u);
  EXPECT_GE(resolved_trimmed, 95u);
  EXPECT_LT(caught_mean, 80u);
  EXPECT_LT(resolved_mean, 20u);
}

// Unchanged code with the same wild pairs, and no threshold to hide behind: of 400 cells, about
// the level's 1 % alarm (4 expected; 12 or more has a chance below 1 in 1000 for a test at its
// level), and with the 2 % threshold none.
TEST(AbEstimate, TrimmedUnchangedCodeAlarmsAtTheLevel) {
  size_t alarms = 0, beyond_threshold = 0;
  const size_t cells = 400;
  for (uint64_t seed = 0; seed < cells; ++seed) {
    const Pairs p(60, 0, 0.2, 1000 + seed);
    alarms += judged(p, "trimmed", 0).verdict() == "regression";
    beyond_threshold += judged(p, "trimmed").verdict() == "regression";
  }
  EXPECT_LT(alarms, 12u);
  EXPECT_EQ(beyond_threshold, 0u);
}

// Too few pairs to leave any out: the trimmed test is the t test.
TEST(AbEstimate, WithThreePairsBothEstimatesAreTheTTest) {
  const Pairs p(3, std::log(0.9), 0, 3);
  const auto mean = judged(p, "mean"), trimmed = judged(p, "trimmed");
  EXPECT_DOUBLE_EQ(trimmed.change_pct(), mean.change_pct());
  EXPECT_DOUBLE_EQ(trimmed.mdc_pct(), mean.mdc_pct());
  EXPECT_EQ(trimmed.verdict(), mean.verdict());
}

TEST(AbEstimate, AnUnknownEstimateIsAnErrorNamingItsPath) {
  const std::string scenario = R"({"name": "x", "targets": [{"name": "a", "builtin": "hello"}],
    "matrix": {"threads": [1]}, "load": {"duration_s": 1}, "regression": {"ab_estimate": "median"}})";
  try {
    (void)parse_scenario(nlohmann::json::parse(scenario));
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/regression/ab_estimate"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("\"mean\" or \"trimmed\""), std::string::npos) << e.what();
  }
}

}  // namespace loadlab::controller::ab_verdicts_test
