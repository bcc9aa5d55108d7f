#include "judge/level_model.hpp"

#include <algorithm>
#include <cmath>

#include "judge/change_points.hpp"
#include "judge/verdict.hpp"

namespace loadlab::controller {

namespace {

// How a night of the stretch enters the model.
enum class NightRole { kKept, kOutlier, kSecondLevel };

// The gap between two recurring levels, in spreads within a level, beyond which the kept nights
// are two levels, and the fewest kept nights to look for one: the widest gap of a normal sample
// with three nights on each side reaches 4 spreads in 2 % of samples of 6 to 8 nights, 0.5 % of
// 10, none in 4000 of 30 (simulated).
constexpr double kLevelGapSpreads = 4;
constexpr size_t kLevelGapMinNights = 10;

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Each night's spell (0 = the oldest), cut where the change points are.
std::vector<size_t> spells_of(const std::vector<double>& logs, size_t* spells) {
  std::vector<size_t> spell(logs.size(), 0);
  *spells = 1;
  if (logs.size() < 2 * ChangePointOptions{}.min_segment) return spell;
  for (const ChangePoint& cp : find_change_points(logs)) {
    for (size_t i = cp.index; i < logs.size(); ++i) ++spell[i];
    ++*spells;
  }
  return spell;
}

// Each night's distance from its spell's median.
std::vector<double> residuals_of(const std::vector<double>& logs, const std::vector<size_t>& spell,
                                 size_t spells) {
  std::vector<double> median(spells);
  for (size_t s = 0; s < spells; ++s) {
    std::vector<double> of;
    for (size_t i = 0; i < logs.size(); ++i)
      if (spell[i] == s) of.push_back(logs[i]);
    median[s] = median_of(of);
  }
  std::vector<double> r(logs.size());
  for (size_t i = 0; i < logs.size(); ++i) r[i] = logs[i] - median[spell[i]];
  return r;
}

// Outliers: Rosner's generalized ESD test (Technometrics 25(2), 1983) on the residuals, up to a
// third of the nights, at kOutlierAlpha for the whole stretch: it names several outliers, on both
// sides, without one hiding another, and leaves a night of normal noise in with probability
// 1 − kOutlierAlpha at any number of nights (a median/MAD rule at a fixed 3.5 does not: with 5 to
// 10 nights the MAD is too noisy, and it left genuine nights out often enough to double the
// false alarms). kSecondLevelNights or more on one side are a second level, not outliers.
std::vector<NightRole> roles_by_esd(const std::vector<double>& r) {
  std::vector<NightRole> role(r.size(), NightRole::kKept);
  if (r.size() < kOutlierMinNights) return role;
  std::vector<size_t> left(r.size()), removed;
  for (size_t i = 0; i < r.size(); ++i) left[i] = i;
  size_t outliers = 0;
  for (size_t i = 1; i <= (r.size() - 1) / 3; ++i) {
    double mean = 0, ss = 0;
    for (size_t j : left) mean += r[j];
    mean /= static_cast<double>(left.size());
    for (size_t j : left) ss += (r[j] - mean) * (r[j] - mean);
    const double n = static_cast<double>(left.size()), sd = std::sqrt(ss / (n - 1));
    auto far = std::max_element(left.begin(), left.end(), [&](size_t a, size_t b) {
      return std::abs(r[a] - mean) < std::abs(r[b] - mean);
    });
    const double t = t_quantile(1 - kOutlierAlpha / (2 * n), n - 2);
    const double lambda = (n - 1) * t / std::sqrt((n - 2 + t * t) * n);
    if (sd > 0 && std::abs(r[*far] - mean) / sd > lambda) outliers = i;
    removed.push_back(*far);
    left.erase(far);
  }
  removed.resize(outliers);
  size_t below = 0, above = 0;
  for (size_t j : removed) (r[j] < 0 ? below : above) += 1;
  // Three levels are not modelled: the larger side is the second level, the other's nights
  // outliers (named).
  const bool below_level = below >= kSecondLevelNights && below >= above;
  const bool above_level = above >= kSecondLevelNights && !below_level;
  for (size_t j : removed)
    role[j] = (r[j] < 0 ? below_level : above_level) ? NightRole::kSecondLevel : NightRole::kOutlier;
  return role;
}

// The sum of squares of `v` around its mean.
double sum_squares(const std::vector<double>& v, size_t from, size_t to) {
  double mean = 0;
  for (size_t i = from; i < to; ++i) mean += v[i];
  mean /= static_cast<double>(to - from);
  double ss = 0;
  for (size_t i = from; i < to; ++i) ss += (v[i] - mean) * (v[i] - mean);
  return ss;
}

// Two levels among the kept nights that the MAD did not separate (about as many nights on each
// side): the widest gap between sorted residuals with kSecondLevelNights on each side, when it
// is kLevelGapSpreads spreads within the two groups wide. The upper group becomes the second.
void roles_by_gap(const std::vector<double>& r, std::vector<NightRole>& role) {
  std::vector<std::pair<double, size_t>> kept;
  for (size_t i = 0; i < r.size(); ++i)
    if (role[i] == NightRole::kKept) kept.emplace_back(r[i], i);
  if (kept.size() < kLevelGapMinNights) return;
  std::sort(kept.begin(), kept.end());
  std::vector<double> v;
  for (auto& [x, i] : kept) v.push_back(x);
  size_t best = 0;
  double best_ratio = 0;
  for (size_t cut = kSecondLevelNights; cut + kSecondLevelNights <= v.size(); ++cut) {
    const double ss = sum_squares(v, 0, cut) + sum_squares(v, cut, v.size());
    const double within = std::sqrt(ss / static_cast<double>(v.size() - 2));
    const double ratio = within > 0 ? (v[cut] - v[cut - 1]) / within : 0;
    if (ratio > best_ratio) best_ratio = ratio, best = cut;
  }
  if (best_ratio < kLevelGapSpreads) return;
  for (size_t j = best; j < kept.size(); ++j) role[kept[j].second] = NightRole::kSecondLevel;
}

struct Group {
  double sum = 0, ss = 0;  // of the log figures, for the mean and the squares around it
  uint32_t n = 0;
  void add(double y) { sum += y, ss += y * y, ++n; }
  double mean() const { return sum / n; }
  double squares() const { return n ? ss - sum * sum / n : 0; }
};

}  // namespace

std::optional<LevelModel> model_levels(const std::vector<double>& logs, size_t k, bool higher_is_better) {
  if (logs.size() < 2) return std::nullopt;
  LevelModel m;
  std::vector<size_t> spell = spells_of(logs, &m.spells);
  std::vector<NightRole> role = roles_by_esd(residuals_of(logs, spell, m.spells));
  if (std::none_of(role.begin(), role.end(), [](NightRole x) { return x == NightRole::kSecondLevel; }))
    roles_by_gap(residuals_of(logs, spell, m.spells), role);
  const bool two =
      std::any_of(role.begin(), role.end(), [](NightRole x) { return x == NightRole::kSecondLevel; });
  // Two recurring levels are levels of the whole stretch, not of its spells.
  if (two) std::fill(spell.begin(), spell.end(), 0), m.spells = 1;
  // The spread is the nights' around their level, the spells' steps included: on a real
  // machine a new spell of the host looks like a regression to the night it starts, and the band
  // must hold the steps its history has shown (one odd night is an outlier; it holds none).
  std::vector<Group> within(2);  // the level, and the second level
  Group newest, second;
  const size_t first_k = logs.size() - std::min(k, logs.size());
  for (size_t i = 0; i < logs.size(); ++i) {
    if (role[i] == NightRole::kOutlier) {
      m.outliers.push_back(i);
      continue;
    }
    const bool other = role[i] == NightRole::kSecondLevel;
    within[other ? 1 : 0].add(logs[i]);
    if (other)
      second.add(logs[i]);
    else if (spell[i] + 1 == m.spells && (i >= first_k || two))
      newest.add(logs[i]);
  }
  double ss = 0;
  size_t groups = 0;
  for (const Group& g : within) ss += g.squares(), groups += g.n > 0;
  m.spread_nights = 0;
  for (const Group& g : within) m.spread_nights += g.n;
  m.df = static_cast<double>(m.spread_nights) - static_cast<double>(groups);
  if (m.df < 1 || newest.n == 0) return std::nullopt;
  m.sd = std::sqrt(std::max(0.0, ss) / m.df);
  m.centre = newest.mean(), m.centre_nights = newest.n;
  if (two) {
    const bool second_worse =
        higher_is_better ? second.mean() < newest.mean() : second.mean() > newest.mean();
    m.better = second_worse ? newest.mean() : second.mean();
    m.better_nights = second_worse ? newest.n : second.n;
    if (second_worse) m.centre = second.mean(), m.centre_nights = second.n;
  }
  return m;
}

}  // namespace loadlab::controller

namespace loadlab::controller {

std::optional<double> measured_correlation(const std::vector<std::pair<double, double>>& pairs) {
  if (pairs.size() < kCorrelationMinPairs) return std::nullopt;
  double xx = 0, xy = 0;
  for (auto [x, y] : pairs) xx += x * x, xy += x * y;
  if (xx <= 0) return std::nullopt;
  const double slope = xy / xx;
  double ss = 0;
  for (auto [x, y] : pairs) ss += (y - slope * x) * (y - slope * x);
  const double se = std::sqrt(ss / static_cast<double>(pairs.size() - 1) / xx);
  return std::clamp(slope + kCorrelationBoundZ * se, 0.0, 1.0);
}

}  // namespace loadlab::controller
