#pragma once
// A cell's noise model from its baseline nights (docs/verdicts-design.md, "The band and the
// budget"): the level a night
// of unchanged code is judged against and the spread of a night around it, estimated so that one
// odd night moves neither.
//
// - Spells: the stretch (up to noise_nights nights, oldest first) is cut where the history's
//   change points (change_points.hpp: E-divisive, levels of at least 3 nights) find a new level.
//   The centre is the level of the newest spell; the spread keeps the steps between spells (on
//   a real machine a host's new spell looks like a regression on its first night, and the band
//   must hold the steps the history has shown).
// - Outliers: on the nights' distances from their spell's median, Rosner's generalized ESD test
//   (up to a third of the nights, kOutlierAlpha) names the nights far out; they are left out of
//   the centre and the spread, and the verdict names them.
// - Two levels: kSecondLevelNights or more nights out on the same side, or a gap of
//   kLevelGapSpreads spreads splitting the nights in two groups, are a second level the cell
//   recurs to (a placement, a host): it is judged against the worse level, with the spread
//   within a level, and its minimum detectable change holds the gap.
// - The centre is the mean of the kept nights of the newest spell among the K newest, the spread
//   the sd of the kept nights (within each level), with its degrees of freedom, so that Student's
//   t calibrates the band as before.
//
// A pure function of numbers.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace loadlab::controller {

// The probability that a stretch of normal nights loses a night as an outlier (generalized ESD).
inline constexpr double kOutlierAlpha = 0.01;
// The fewest nights out on one side that make a second level rather than outliers, and the fewest
// nights in which an outlier is looked for.
inline constexpr size_t kSecondLevelNights = 3;
inline constexpr size_t kOutlierMinNights = 5;

struct LevelModel {
  double centre = 0;             // log: the level judged against (the worse of two levels)
  uint32_t centre_nights = 0;    // the nights whose mean it is
  std::optional<double> better;  // log: the better level, when the cell moves between two
  uint32_t better_nights = 0;
  double sd = 0;                 // the spread of a night around its level (log), within spells
  double df = 0;                 // its degrees of freedom
  uint32_t spread_nights = 0;    // the kept nights it comes from
  size_t spells = 1;             // the levels the change points found in the stretch
  std::vector<size_t> outliers;  // indices into the stretch of the nights left out
};

// The model of `logs` (log figures, oldest first) whose newest `k` nights give the centre;
// `higher_is_better` says which of two levels is the worse. std::nullopt when fewer than two
// nights are kept (no spread).
std::optional<LevelModel> model_levels(const std::vector<double>& logs, size_t k, bool higher_is_better);

// The correlation of a night's first measurement and its confirmation around the level, from
// the (first, confirmation) residuals (log) of the nights that have both: the slope of the
// confirmation on the first measurement (both spread alike around the level, it is the
// correlation, and a sample chosen on the first measurement, as suspects are, does not bias it),
// at its upper 90 % bound, in [0, 1]. std::nullopt below kCorrelationMinPairs pairs.
inline constexpr size_t kCorrelationMinPairs = 8;
inline constexpr double kCorrelationBoundZ = 1.2816;
std::optional<double> measured_correlation(const std::vector<std::pair<double, double>>& pairs);

}  // namespace loadlab::controller
