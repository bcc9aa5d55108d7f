// The nightly band and budget (issue 45): one odd night does not widen a cell's band, a spell is
// a level, a cell of two levels is modelled, and a large matrix keeps a small minimum detectable
// change at the run's false-alarm budget.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>

#include "judge/verdict.hpp"

namespace loadlab::controller {
namespace {

Night night_of(std::vector<double> values, std::vector<double> confirmation = {}) {
  Night n;
  n.ok = true;
  n.fingerprint = "a|kernel=6.1";
  n.values = std::move(values);
  n.confirmation = std::move(confirmation);
  return n;
}

// A night whose level is `level` · e^(between · z), its three repetitions 0.5 % apart, and a
// confirmation drawn the same way, independently (the synthetic model of issue 45).
Night synthetic_night(double level, double between, std::mt19937_64& rng) {
  std::normal_distribution<double> z(0, 1);
  auto measure = [&] {
    const double at = level * std::exp(between * z(rng));
    std::vector<double> v;
    for (int r = 0; r < 3; ++r) v.push_back(at * std::exp(0.005 * z(rng)));
    return v;
  };
  auto first = measure();
  return night_of(first, measure());
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// 100 cells, 200 nights, independent 3 % noise between nights, every night confirmed (as
// confirm.every_cell records): the budget of 1 % of nights split over the cells keeps the median
// minimum detectable change at most 16 % and at most 1 night in 100 alarming.
TEST(NightlyBand, AHundredCellMatrixKeepsItsMdcAndItsFalseAlarmBudget) {
  constexpr size_t kCells = 100, kNights = 200;
  VerdictOptions o;
  o.alpha = cell_alpha(1, kCells);
  std::mt19937_64 rng(45);
  std::vector<size_t> alarms(kNights, 0);
  std::vector<double> mdc;
  for (size_t cell = 0; cell < kCells; ++cell) {
    std::vector<Night> s;
    for (size_t i = 0; i < kNights; ++i) s.push_back(synthetic_night(1000 * (cell + 1), 0.03, rng));
    auto v = judge_series(s, o);
    for (size_t i = 0; i < kNights; ++i) {
      alarms[i] += v[i].verdict == Verdict::kRegression;
      if (i >= 30 && v[i].mdc_pct) mdc.push_back(*v[i].mdc_pct);
    }
  }
  // Every night from the 31st has 30 earlier nights of its cell (none failed, none disturbed,
  // no level accepted): each has a band and its mdc.
  ASSERT_EQ(mdc.size(), kCells * (kNights - 30));
  const size_t alarm_nights = std::count_if(alarms.begin(), alarms.end(), [](size_t a) { return a > 0; });
  std::cout << "median mdc " << median(mdc) << " %, " << alarm_nights << " of " << kNights
            << " nights with a false alarm\n";
  // At least the 5 % threshold plus one night's 3 % spread: the mdc adds to the threshold some
  // 2.3 (99 % power) of the nights' estimated spread, so it is below only if the median cell's
  // estimate were under half the 3 % the nights are drawn with.
  EXPECT_GE(median(mdc), 8);
  EXPECT_LE(median(mdc), 16);
  EXPECT_LE(alarm_nights, kNights / 100);
}

// Issue 45's table: seven nights of four cells (each night's three repetitions, the first two
// nights a host settling), then a night of slowed code, measured again on fresh targets as the
// nightly does for a suspect (the table gives one measurement: the confirmation repeats it).
struct IssueCell {
  const char* key;
  std::vector<std::vector<double>> nights;  // 7 unchanged, then the slowed night
};

std::vector<IssueCell> issue_table() {
  return {
      {"d0/t1",
       {{33475, 45554, 46267},
        {35731, 35489, 39577},
        {33715, 33576, 33438},
        {33567, 33684, 33265},
        {32372, 35006, 36189},
        {35931, 36183, 35651},
        {35908, 33657, 33852},
        {37222, 30820, 31273}}},
      {"d0/t4",
       {{101751, 102077, 103492},
        {49803, 54845, 65116},
        {74536, 73600, 66670},
        {73552, 73462, 73618},
        {76842, 76682, 76774},
        {75013, 76319, 76222},
        {73708, 74234, 73787},
        {61215, 61855, 61687}}},
      {"d2/t1",
       {{474, 458, 464},
        {465, 469, 468},
        {467, 469, 469},
        {468, 461, 467},
        {470, 470, 469},
        {470, 469, 470},
        {468, 468, 466},
        {468}}},
      {"d2/t4",
       {{1845, 1864, 1869},
        {1868, 1873, 1850},
        {1867, 1872, 1794},
        {1855, 1864, 1864},
        {1874, 1876, 1872},
        {1876, 1877, 1873},
        {1824, 1748, 1891},
        {1858}}},
  };
}

std::vector<Night> issue_series(const IssueCell& cell) {
  std::vector<Night> s;
  for (size_t i = 0; i < cell.nights.size(); ++i) {
    const bool slowed = i + 1 == cell.nights.size();
    s.push_back(night_of(cell.nights[i], slowed ? cell.nights[i] : std::vector<double>{}));
    s.back().run_id = static_cast<int64_t>(i + 1);
    s.back().started_at = "night " + std::to_string(i + 1);
  }
  return s;
}

TEST(NightlyBand, TheIssuesSettlingNightsAreLeftOutAndTheSlowedNightIsARegression) {
  VerdictOptions o;
  o.alpha = cell_alpha(1, 4);
  for (const IssueCell& cell : issue_table()) {
    const auto v = judge_series(issue_series(cell), o);
    for (size_t i = 0; i + 1 < v.size(); ++i)
      EXPECT_NE(v[i].verdict, Verdict::kRegression) << cell.key << " night " << i + 1 << ": " << v[i].reason;
    const NightVerdict& slowed = v.back();
    std::cout << cell.key << ": " << slowed.verdict << ": " << slowed.reason << ", mdc "
              << slowed.mdc_pct.value_or(NAN) << " %\n";
    const std::string key = cell.key;
    if (key == "d0/t4") {
      EXPECT_EQ(slowed.verdict, Verdict::kRegression) << slowed.reason;
      EXPECT_NE(slowed.reason.find("left out as outliers: the night of night 1, the night of night 2"),
                std::string::npos)
          << slowed.reason;
      EXPECT_GT(slowed.band_low.value_or(NAN) / slowed.baseline.value_or(NAN), 0.85)
          << "the band stays narrow";
      EXPECT_LT(slowed.mdc_pct.value_or(NAN), 25);
    }
    if (key == "d0/t1") {
      // -9.6 % against nights 2 to 7: six nights 3 % apart cannot show it at this budget (its
      // mdc says so), but the settling night no longer widens the band. The table is fixed: noise.
      EXPECT_EQ(slowed.verdict, Verdict::kNoise) << slowed.reason;
      EXPECT_GT(slowed.band_low.value_or(NAN) / slowed.baseline.value_or(NAN), 0.85)
          << "the band stays narrow";
      EXPECT_NE(slowed.reason.find("left out as outliers: the night of night 1"), std::string::npos)
          << slowed.reason;
    }
    if (key.starts_with("d2")) EXPECT_EQ(slowed.verdict, Verdict::kSame) << slowed.reason;
  }
}

// A cell that moves between two levels (here a placement: 30 % of nights at 20 k, the rest at
// 26 k, 1 % apart within a level) is judged against the worse level with the spread within a
// level, and says so; the mdc holds the gap between the levels.
TEST(NightlyBand, ACellOfTwoRecurringLevelsIsModelledNotGivenABandWideEnoughForBoth) {
  std::mt19937_64 rng(7);
  std::bernoulli_distribution low(0.3);
  std::vector<Night> s;
  for (size_t i = 0; i < 24; ++i) {
    s.push_back(synthetic_night(low(rng) ? 20000 : 26000, 0.01, rng));
    s.back().confirmation.clear();
  }
  VerdictOptions o;
  o.alpha = cell_alpha(1, 4);
  auto judged = [&](double figure) {
    auto t = s;
    t.push_back(night_of({figure}, {figure}));
    return judge_series(t, o).back();
  };
  for (double unchanged : {20000.0, 19700.0, 26000.0, 25500.0}) {
    const NightVerdict v = judged(unchanged);
    EXPECT_TRUE(v.verdict == Verdict::kSame || v.verdict == Verdict::kNoise)
        << unchanged << ": " << v.verdict << ": " << v.reason;
  }
  const NightVerdict slower = judged(17000);  // -15 % of the worse level
  EXPECT_EQ(slower.verdict, Verdict::kRegression) << slower.reason;
  EXPECT_NE(slower.reason.find("two levels, judged against the worse"), std::string::npos) << slower.reason;
  EXPECT_NEAR(slower.baseline.value_or(NAN), 20000, 400);
  EXPECT_GT(slower.mdc_pct.value_or(NAN), 23)
      << "a change shows surely only when the better level falls below the worse";
  std::cout << slower.reason << ", mdc " << slower.mdc_pct.value_or(NAN) << " %\n";
}

// Two odd first nights (a host settling), 18 nights 2 % apart, then three nights 12 % slower,
// each confirmed: a spell of slower nights is a regression every night until it is accepted.
TEST(NightlyBand, ASpellOfThreeSlowerNightsIsARegressionUntilAccepted) {
  std::mt19937_64 rng(11);
  std::vector<Night> s;
  s.push_back(synthetic_night(13500, 0.001, rng));
  s.push_back(synthetic_night(7000, 0.001, rng));
  for (size_t i = 0; i < 18; ++i) s.push_back(synthetic_night(10000, 0.02, rng));
  for (size_t i = 0; i < 3; ++i) s.push_back(synthetic_night(8800, 0.005, rng));
  for (size_t i = 0; i < s.size(); ++i) s[i].started_at = "night " + std::to_string(i + 1);
  VerdictOptions o;
  o.alpha = cell_alpha(1, 4);
  const auto v = judge_series(s, o);
  for (size_t i = 0; i < 20; ++i) EXPECT_NE(v[i].verdict, Verdict::kRegression) << i << ": " << v[i].reason;
  for (size_t i = 20; i < 23; ++i) EXPECT_EQ(v[i].verdict, Verdict::kRegression) << i << ": " << v[i].reason;
  const auto accepted = judge_series(s, o, {{20, 22}});
  EXPECT_NE(accepted[22].verdict, Verdict::kRegression) << accepted[22].reason;
}

TEST(NightlyBand, TheConfirmedCriticalValueSpendsTheLevelOnBothMeasurements) {
  EXPECT_NEAR(confirmed_quantile(1e-4, 29, 10, 1), t_quantile(1 - 1e-4, 29), 1e-9);
  // Independent measurements (but for the shared centre and spread): about 2.71 (computed
  // independently by quadrature over the chi-square spread).
  EXPECT_NEAR(confirmed_quantile(1e-4, 29, 10, 0), 2.71, 0.05);
  EXPECT_LT(confirmed_quantile(1e-4, 29, 10, 0.6), t_quantile(1 - 1e-4, 29));
}

}  // namespace
}  // namespace loadlab::controller
