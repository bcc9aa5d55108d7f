#include "judge/verdict.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <boost/math/distributions/chi_squared.hpp>
#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <boost/math/special_functions/erf.hpp>
#include <boost/math/special_functions/owens_t.hpp>
#include <cmath>
#include <map>
#include <mutex>
#include <sstream>

#include "judge/level_model.hpp"
#include "results/quality_flags.hpp"

namespace loadlab::controller {

std::string pct_text(double v, bool sign) {
  return sign ? fmt::format("{:+.1f} %", v) : fmt::format("{:.1f} %", v);
}

double detect_quantile(double df, double power) {
  static std::map<std::pair<double, double>, double> cache;
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  auto key = std::make_pair(df, power);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  const boost::math::chi_squared_distribution<double> chi(df);
  const boost::math::normal_distribution<double> normal;
  constexpr int kPoints = 400;
  std::vector<double> w(kPoints);
  for (int i = 0; i < kPoints; ++i) w[i] = std::sqrt(boost::math::quantile(chi, (i + 0.5) / kPoints) / df);
  auto expected = [&](double q) {
    double sum = 0;
    for (double x : w) sum += boost::math::cdf(normal, q * x);
    return sum / kPoints;
  };
  double lo = 0, hi = 50;
  for (int i = 0; i < 60; ++i) ((expected((lo + hi) / 2) < power) ? lo : hi) = (lo + hi) / 2;
  return cache[key] = hi;
}

namespace {

// Points of W = s/σ = √(χ²(df)/df), equally likely, denser in the lower tail where a narrow
// band's false alarms come from: p = u⁴ over midpoints u, each point weighted by dp.
struct SpreadPoints {
  std::vector<double> w, weight;
};

const SpreadPoints& spread_points(double df) {
  static std::map<double, SpreadPoints> cache;
  auto [it, added] = cache.try_emplace(df);
  if (!added) return it->second;
  const boost::math::chi_squared_distribution<double> chi(df);
  constexpr int kPoints = 200;
  for (int i = 0; i < kPoints; ++i) {
    const double u = (i + 0.5) / kPoints;
    const double p = std::pow(u, 4);
    it->second.w.push_back(std::sqrt(boost::math::quantile(chi, p) / df));
    it->second.weight.push_back(4 * std::pow(u, 3) / kPoints);
  }
  return it->second;
}

// P(Z₁ > h, Z₂ > h) for standard normals correlated by r (Owen's T: Φ̄(h) − 2 T(h, √((1−r)/(1+r)))).
double both_beyond(double h, double r) {
  using Fast = boost::math::policies::policy<boost::math::policies::promote_double<false>>;
  const double a = std::sqrt((1 - r) / (1 + r));
  return boost::math::erfc(h / std::sqrt(2.0), Fast()) / 2 - 2 * boost::math::owens_t(h, a, Fast());
}

}  // namespace

double confirmed_quantile(double alpha, double df, double n, double rho) {
  static std::map<std::array<double, 4>, double> cache;
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  const std::array<double, 4> key{alpha, df, n, rho};
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  const double r = std::min(1.0, (rho + 1 / n) / (1 + 1 / n));
  if (r >= 1) return cache[key] = t_quantile(1 - alpha, df);
  const SpreadPoints& points = spread_points(df);
  auto level = [&](double c) {
    double sum = 0;
    // W ascending: beyond c·W = 9 both tails are below 1e-19.
    for (size_t i = 0; i < points.w.size() && c * points.w[i] < 9; ++i)
      sum += points.weight[i] * both_beyond(c * points.w[i], r);
    return sum;
  };
  double lo = 0, hi = t_quantile(1 - alpha, df);  // the single measurement's is the widest
  for (int i = 0; i < 40; ++i) ((level((lo + hi) / 2) > alpha) ? lo : hi) = (lo + hi) / 2;
  return cache[key] = hi;
}

namespace {

// The band of a cell's baseline, in log space around its level.
struct Band {
  uint32_t nights = 0;  // the K baseline nights (outliers included)
  LevelModel model;     // centre, spread, spells, outliers, a second level
  double pred_sd = 0;   // the spread of a night around the centre's estimate
  double half = 0;      // worse side: the first measurement and its confirmation both beyond
  double alone = 0;     // worse side for one measurement alone; the better side
  double mdc = 0;       // the minimum detectable change (log)
  double rho = 1;       // the correlation of a night's two measurements the band assumed
  double better() const { return model.better.value_or(model.centre); }
};

// The band of `m` at level `alpha` (confirmations correlating by `rho`), and its minimum
// detectable change for a threshold of `threshold_log`. A change on a cell of two levels shows
// surely only when it brings the better level beyond the worse one's band.
Band band_of(const LevelModel& m, uint32_t nights, double rho, const VerdictOptions& o,
             double threshold_log) {
  Band b;
  b.nights = nights;
  b.model = m;
  b.rho = rho;
  const double n = static_cast<double>(m.centre_nights);
  b.pred_sd = m.sd * std::sqrt(1 + 1.0 / n);
  b.half = confirmed_quantile(o.alpha, m.df, n, rho) * b.pred_sd;
  b.alone = t_quantile(1 - o.alpha, m.df) * b.pred_sd;
  const double gap = std::abs(b.better() - m.centre);
  b.mdc = gap + std::max(b.half, threshold_log) + detect_quantile(m.df, kPowerPerMeasurement) * b.pred_sd;
  return b;
}

// "worse" and "better" as changes in log space for the metric's direction: positive = worse.
double worse_log(double y, double mean, bool higher_is_better) {
  return higher_is_better ? mean - y : y - mean;
}

// A change in log space as the percentage of the metric: worse for qps is a drop.
double change_pct_of(double y, double mean) { return (std::exp(y - mean) - 1) * 100; }

double mdc_pct_of(double mdc_log, bool higher_is_better) {
  return higher_is_better ? (1 - std::exp(-mdc_log)) * 100 : (std::exp(mdc_log) - 1) * 100;
}

// "cpu_model=AMD EPYC;cpus=2" per agent, lines "agent|key=value;..." → the fields that differ.
std::map<std::string, std::string> fields_of(const std::string& fp) {
  std::map<std::string, std::string> out;
  std::istringstream in(fp);
  for (std::string line; std::getline(in, line);) {
    auto bar = line.find('|');
    std::string agent = bar == std::string::npos ? "" : line.substr(0, bar);
    std::string rest = bar == std::string::npos ? line : line.substr(bar + 1);
    std::istringstream f(rest);
    for (std::string kv; std::getline(f, kv, ';');) {
      auto eq = kv.find('=');
      if (eq == std::string::npos) continue;
      out[(agent.empty() ? "" : agent + " ") + kv.substr(0, eq)] = kv.substr(eq + 1);
    }
  }
  return out;
}

std::string fingerprint_change(const std::string& before, const std::string& after) {
  auto a = fields_of(before), b = fields_of(after);
  std::string out;
  for (auto& [k, v] : b) {
    auto it = a.find(k);
    const std::string old = it == a.end() ? "(none)" : it->second;
    if (old != v)
      out += (out.empty() ? "" : ", ") + k + " " + (old.empty() ? "(unknown)" : old) + " -> " +
             (v.empty() ? "(unknown)" : v);
  }
  for (auto& [k, v] : a)
    if (!b.count(k)) out += (out.empty() ? "" : ", ") + k + " " + v + " -> (none)";
  return out.empty() ? "the machines changed" : out;
}

// Nights judged same or noise after a change that show the cell came back from it.
constexpr size_t kCameBackNights = 2;

// What the baseline nights say about the machine, beside their figures.
struct BaselineContext {
  std::optional<Band> band;     // none: fewer than two nights, or no spread
  uint32_t nights = 0;          // the K baseline nights
  std::vector<double> logs;     // the baseline nights' log figures
  std::vector<size_t> stretch;  // the nights of the longer stretch (indices, oldest first)
  double steal_max = 0;
  std::optional<double> wait_max;  // none: no baseline night knows its wait
  // The median other work of the baseline nights that ran tonight's target build; none: too
  // few say. The figure is the cell's CPUs' busy time less its own processes' CPU, so it moves
  // with the code too: a heavier build reads as more other work (issue 23).
  std::optional<double> other_level;
  double threshold_log = 0;
};

// The verdict of one night against its baseline (BaselineContext), in words: same, noise, a
// change and its confirmation, or inconclusive when the machine was disturbed.
class NightDecider {
 public:
  NightDecider(const std::vector<Night>& s, const VerdictOptions& o) : s_(s), o_(o) {}

  // The verdict of an undisturbed night with a band: same, noise, or a change and its
  // confirmation. A regression needs both measurements beyond the band's worse edge (the
  // budget spent on the pair) or, with no confirmation, the first beyond one measurement's.
  void decide(const Night& n, const BaselineContext& c, NightVerdict& v) const {
    const Band& b = *c.band;
    const int first = side(*v.value, c, b.half);
    if (first == 0) return decide_unchanged(c, v);
    const Verdict change = first > 0 ? Verdict::kRegression : Verdict::kImprovement;
    const std::string where =
        first > 0 ? (o_.higher_is_better ? "below " : "above ") : (o_.higher_is_better ? "above " : "below ");
    v.suspect = first > 0;
    const bool few = c.nights < o_.min_nights;
    const std::string seen = pct_text(*v.change_pct) + ": beyond the " + pct_text(o_.threshold_pct, false) +
                             " threshold and " + where + band_text(b, v) +
                             (few ? " (" + std::to_string(c.nights) + " nights of history (" +
                                        std::to_string(o_.min_nights) + " needed))"
                                  : "");
    // Only a regression is confirmed (an improvement alarms no one): a confirmation measured
    // anyway (confirm.every_cell) is not read for one, as a nightly would not have it.
    if (first < 0 || n.confirmation.empty()) {
      const bool alone = first < 0 || side(*v.value, c, b.alone) > 0;
      v.verdict = alone ? change : Verdict::kInconclusive;
      v.reason =
          seen +
          (first < 0 ? ""
           : alone   ? "; not confirmed (no confirmation measured)"
                     : "; a confirmation would tell: one measurement alone must be beyond " +
                         pct_text(change_pct_of(b.model.centre + (o_.higher_is_better ? -b.alone : b.alone),
                                                b.model.centre)));
      return;
    }
    const double confirm_change = change_pct_of(std::log(*v.confirm_value), b.model.centre);
    // The confirmation's other work against the baseline nights' of this build or, on a new
    // build, against the night's own first measurement (same build, not disturbed).
    const bool own = !c.other_level;
    if (auto why =
            o_.host_insensitive
                ? std::string()
                : disturbance(n.confirm_busy_reps, n.confirmation.size(), n.confirm_wait_pct,
                              n.confirm_other_pct, own ? n.other_pct : c.other_level,
                              own ? "the night's first measurement" : "its baseline nights' median", c);
        !why.empty()) {
      // A suspect that could not be confirmed stays out of later bands, as a regression does:
      // otherwise one such night widens the band until the regression it was reads as noise.
      v.disturbed = true;
      v.verdict = Verdict::kInconclusive;
      v.reason = "first " + seen + ", but the machine was busy when it was measured again (" + why +
                 "): it cannot be confirmed";
      return;
    }
    if (side(*v.confirm_value, c, b.half) == first) {
      v.verdict = change;
      v.reason = seen + "; confirmed on fresh targets: " + pct_text(confirm_change);
    } else {
      v.verdict = Verdict::kNoise;
      v.reason = "first " + seen + ", but measured again on fresh targets " + pct_text(confirm_change) +
                 ", which is not";
      v.band_value = *v.confirm_value;
    }
  }

  // Why a measurement was disturbed, "" when it was not: half its repetitions flagged
  // busy-machine, its processes waited for a CPU far longer than on any baseline night, or the
  // other work on its CPUs stood well above its baseline nights' level (a neighbour that the
  // flag's absolute threshold misses where the cell's own CPU reads above its CPUs' busy time).
  std::string disturbance(uint32_t busy, size_t reps, std::optional<double> wait, std::optional<double> other,
                          std::optional<double> other_level, const char* level_name,
                          const BaselineContext& c) const {
    if (reps > 0 && busy * 2 >= reps)
      return std::to_string(busy) + " of " + std::to_string(reps) +
             " repetitions flagged busy-machine (other work on its CPUs)";
    if (wait && c.wait_max && *wait > *c.wait_max * o_.wait_factor + o_.wait_margin_pct)
      return "its processes waited for a CPU " + pct_text(*wait, false) +
             " of the window, its baseline nights at most " + pct_text(*c.wait_max, false);
    if (other && other_level && *other - *other_level >= kBusyOutlierPct)
      return fmt::format("other work on its CPUs took {:.0f} % of a core, {:.0f} more than {} ({:.0f} %)",
                         *other, *other - *other_level, level_name, *other_level);
    return "";
  }

 private:
  // +1: worse than the centre beyond the threshold and `worse_half`; -1: better than the better
  // level beyond the threshold and one measurement's band; 0: neither.
  int side(double figure, const BaselineContext& c, double worse_half) const {
    const Band& b = *c.band;
    const double y = std::log(figure);
    const double w = worse_log(y, b.model.centre, o_.higher_is_better);
    if (w > worse_half && w > c.threshold_log) return 1;
    const double better = -worse_log(y, b.better(), o_.higher_is_better);
    if (better > b.alone && better > c.threshold_log) return -1;
    return 0;
  }

  // "the band of 7 nights (-12.0 % .. +15.1 %; left out as outliers: the nights of ...)".
  std::string band_text(const Band& b, const NightVerdict& v) const {
    const LevelModel& m = b.model;
    std::string notes;
    auto note = [&](const std::string& t) { notes += "; " + t; };
    if (m.spread_nights > b.nights || m.spells > 1)
      note("the spread within " + std::string(m.spells > 1 ? std::to_string(m.spells) + " levels of " : "") +
           std::to_string(m.spread_nights) + " nights");
    if (m.better)
      note(fmt::format("two levels, judged against the worse ({} nights; the better {} on {})",
                       m.centre_nights, pct_text(change_pct_of(*m.better, m.centre)), m.better_nights));
    if (b.rho < 1) note(fmt::format("a night's two measurements taken to correlate by {:.2f}", b.rho));
    if (!v.outlier_index.empty()) {
      std::string names;
      for (size_t j : v.outlier_index) names += (names.empty() ? "" : ", ") + night_name(j);
      note("left out as outliers: " + names);
    }
    return "the band of " + std::to_string(b.nights) + " nights (" +
           pct_text((*v.band_low / *v.baseline - 1) * 100) + " .. " +
           pct_text((*v.band_high / *v.baseline - 1) * 100) + notes + ")";
  }

  std::string night_name(size_t j) const {
    return s_[j].started_at.empty() ? "run " + std::to_string(s_[j].run_id)
                                    : "the night of " + s_[j].started_at;
  }

  // A night inside the band (or the threshold): same, noise, or inconclusive with few nights.
  void decide_unchanged(const BaselineContext& c, NightVerdict& v) const {
    const bool few = c.nights < o_.min_nights;
    const std::string few_text =
        std::to_string(c.nights) + " nights of history (" + std::to_string(o_.min_nights) + " needed)";
    // Within the threshold is `same` however few the nights: the figure moved less than what
    // the nightly calls a change. Beyond it, few nights cannot tell noise from a change.
    const double change = *v.change_pct, mdc = *v.mdc_pct;
    if (std::abs(change) <= o_.threshold_pct) {
      v.verdict = Verdict::kSame;
      v.reason =
          pct_text(change) + ": within the " + pct_text(o_.threshold_pct, false) + " threshold" +
          (few ? " (" + few_text + ": only a change beyond " + pct_text(mdc, false) + " would show)" : "");
    } else if (few) {
      v.verdict = Verdict::kInconclusive;
      v.reason = few_text + ": only a change beyond " + pct_text(mdc, false) + " would show; " +
                 pct_text(change) + " is not one";
    } else {
      v.verdict = Verdict::kNoise;
      v.reason = pct_text(change) + " is beyond the " + pct_text(o_.threshold_pct, false) +
                 " threshold but inside " + band_text(*c.band, v);
    }
  }

  const std::vector<Night>& s_;
  const VerdictOptions& o_;
};

// A cell's nights, oldest first, each judged against the baseline of the earlier nights of its
// level (levels start where the user accepted a change, or after accept_after_nights of one).
class SeriesJudge {
 public:
  SeriesJudge(const std::vector<Night>& s, const VerdictOptions& o, std::vector<AcceptedLevel> accepted)
      : s_(s),
        o_(o),
        decider_(s, o),
        accepted_(std::move(accepted)),
        out_(s.size()),
        judged_level_(s.size(), 0) {
    std::sort(accepted_.begin(), accepted_.end(),
              [](auto& a, auto& b) { return a.effective_from < b.effective_from; });
  }

  std::vector<NightVerdict> run() {
    size_t next_accept = 0;
    for (size_t i = 0; i < s_.size(); ++i) {
      for (; next_accept < accepted_.size() && accepted_[next_accept].effective_from <= i; ++next_accept)
        start_level(std::min(accepted_[next_accept].start, i));
      judged_level_[i] = level_;
      judge(i);
      auto_accept(i);
    }
    return std::move(out_);
  }

 private:
  void judge(size_t i) {
    NightVerdict& v = out_[i];
    const Night& n = s_[i];
    v.value = night_figure(n.values);
    if (n.confirmation.size()) v.confirm_value = night_figure(n.confirmation);
    if (!n.ok || !v.value || *v.value <= 0) {
      v.verdict = Verdict::kFailed;
      v.reason = n.ok ? "no figure" : "the cell failed";
      return;
    }
    v.band_value = *v.value;
    const BaselineContext c = context(i);
    // Something else ran on the cell's CPUs during its measurement: its figure is the
    // neighbour's, not the code's, and stays out of later bands.
    if (auto why = o_.host_insensitive
                       ? std::string()
                       : decider_.disturbance(n.busy_reps, n.values.size(), n.wait_pct, n.other_pct,
                                              c.other_level, "its baseline nights' median", c);
        !why.empty()) {
      v.disturbed = true;
      v.verdict = Verdict::kInconclusive;
      v.reason = "the machine was busy while the cell was measured: " + why;
      return;
    }
    v.nights = c.nights;
    if (!c.band) {
      v.verdict = Verdict::kInconclusive;
      v.reason = few_nights_reason(i, c.nights);
      if (c.nights == 1) {
        v.baseline = std::exp(c.logs[0]);
        v.change_pct = change_pct_of(std::log(*v.value), c.logs[0]);
      }
      return;
    }
    const Band& b = *c.band;
    for (size_t k : b.model.outliers) v.outlier_index.push_back(c.stretch[k]);
    const double worse_edge = b.model.centre + (o_.higher_is_better ? -b.half : b.half);
    const double better_edge = b.better() + (o_.higher_is_better ? b.alone : -b.alone);
    v.baseline = std::exp(b.model.centre);
    v.band_low = std::exp(std::min(worse_edge, better_edge));
    v.band_high = std::exp(std::max(worse_edge, better_edge));
    v.mdc_pct = mdc_pct_of(b.mdc, o_.higher_is_better);
    v.change_pct = change_pct_of(std::log(*v.value), b.model.centre);
    if (!o_.host_insensitive && n.steal_pct > o_.steal_limit_pct && c.steal_max * 3 < n.steal_pct) {
      v.verdict = Verdict::kInconclusive;
      v.reason = "the hypervisor took " + pct_text(n.steal_pct, false) +
                 " of a core from the cell's CPUs (its " + std::to_string(c.nights) +
                 " baseline nights at most " + pct_text(c.steal_max, false) + ")";
      return;
    }
    decider_.decide(n, c, v);
  }

  // The baseline of night `i`: the earlier nights of this level on the same machines, not
  // judged a change against it and not disturbed; at most K of them, the newest.
  BaselineContext context(size_t i) {
    NightVerdict& v = out_[i];
    BaselineContext c;
    const size_t longest = std::max(o_.baseline_nights, o_.noise_nights);
    size_t came_back = 0;  // nights newer than j judged same or noise against this level
    for (size_t j = i; j-- > level_ && c.stretch.size() < longest;) {
      if (out_[j].verdict == Verdict::kFailed || out_[j].disturbed || s_[j].fingerprint != s_[i].fingerprint)
        continue;
      // A change judged against this level stays out of it while it lasts; one judged against
      // an older level, now accepted, is this level's. A change the cell came back from (two
      // newer nights judged same or noise) is its history again: alone, an outlier; with two
      // more on its side, a level it recurs to.
      const bool change = is_change(out_[j].verdict) && judged_level_[j] == level_;
      if (change && came_back < kCameBackNights) continue;
      came_back += out_[j].verdict == Verdict::kSame || out_[j].verdict == Verdict::kNoise;
      if (v.baseline_index.size() < o_.baseline_nights) v.baseline_index.push_back(j);
      c.stretch.push_back(j);
    }
    std::reverse(v.baseline_index.begin(), v.baseline_index.end());
    std::reverse(c.stretch.begin(), c.stretch.end());
    std::vector<double> others;
    for (size_t j : v.baseline_index) {
      c.logs.push_back(std::log(out_[j].band_value));
      if (s_[j].other_pct && s_[j].target_build == s_[i].target_build) others.push_back(*s_[j].other_pct);
      c.steal_max = std::max(c.steal_max, s_[j].steal_pct);
      if (s_[j].wait_pct) c.wait_max = std::max(c.wait_max.value_or(*s_[j].wait_pct), *s_[j].wait_pct);
    }
    if (others.size() >= kOtherWorkMinNights) c.other_level = night_figure(others);  // lower median
    c.threshold_log = o_.higher_is_better ? -std::log1p(-std::min(o_.threshold_pct, 99.0) / 100)
                                          : std::log1p(o_.threshold_pct / 100);
    c.nights = static_cast<uint32_t>(c.logs.size());
    // Few nights: their own band, wide by itself; enough: the model of the longer stretch.
    std::vector<double> stretch_logs;
    if (c.logs.size() < o_.min_nights) c.stretch = v.baseline_index;
    for (size_t j : c.stretch) stretch_logs.push_back(std::log(out_[j].band_value));
    if (auto m = model_levels(stretch_logs, c.logs.size(), o_.higher_is_better); m && c.nights >= 2)
      c.band = band_of(*m, c.nights, correlation(i, m->centre), o_, c.threshold_log);
    return c;
  }

  // How a night's confirmation follows its first measurement on this cell: measured on every
  // earlier night of the level on these machines that has both (the more, the tighter its
  // bound), else the option's.
  double correlation(size_t i, double centre) const {
    std::vector<std::pair<double, double>> pairs;
    for (size_t j = level_; j < i; ++j) {
      if (s_[j].confirmation.empty() || out_[j].verdict == Verdict::kFailed || out_[j].disturbed ||
          s_[j].fingerprint != s_[i].fingerprint)
        continue;
      const auto first = night_figure(s_[j].values), again = night_figure(s_[j].confirmation);
      if (first && again && *first > 0 && *again > 0)
        pairs.emplace_back(std::log(*first) - centre, std::log(*again) - centre);
    }
    // Rounded up to a twentieth: conservative, and the critical values are computed once each.
    return std::ceil(measured_correlation(pairs).value_or(o_.confirm_correlation) * 20 - 1e-9) / 20;
  }

  std::string few_nights_reason(size_t i, uint32_t nights) const {
    // The newest earlier night of this level that ran: on other machines?
    for (size_t j = i; j-- > level_;) {
      if (out_[j].verdict == Verdict::kFailed) continue;
      if (s_[j].fingerprint != s_[i].fingerprint)
        return "the machines changed since the night of " + s_[j].started_at + ": " +
               fingerprint_change(s_[j].fingerprint, s_[i].fingerprint) + " (" + std::to_string(nights) +
               " earlier nights on these)";
      break;
    }
    if (nights == 0 && level_ > 0)
      return "no earlier night of the level accepted from " + s_[level_].started_at + " to compare with";
    if (nights == 0) return "no earlier night to compare with";
    return "1 night of history: its spread is unknown (" + std::to_string(o_.min_nights) + " needed)";
  }

  // accept_after_nights judged the same change in a row start a level at the first of them.
  void auto_accept(size_t i) {
    const uint32_t n = o_.accept_after_nights;
    if (n == 0 || i + 1 < n || i + 1 - n < level_) return;
    const Verdict v = out_[i].verdict;
    if (!is_change(v)) return;
    for (size_t j = i + 1 - n; j <= i; ++j)
      if (out_[j].verdict != v) return;
    start_level(i + 1 - n);
  }

  void start_level(size_t start) {
    level_ = start;
    if (start < out_.size()) out_[start].new_level = true;
  }

  const std::vector<Night>& s_;
  const VerdictOptions& o_;
  const NightDecider decider_;
  std::vector<AcceptedLevel> accepted_;
  std::vector<NightVerdict> out_;
  std::vector<size_t> judged_level_;  // the level each night was judged against
  size_t level_ = 0;                  // the first night of the current level
};

}  // namespace

std::optional<double> night_figure(const std::vector<double>& values) {
  std::vector<double> v;
  for (double x : values)
    if (std::isfinite(x)) v.push_back(x);
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
}

std::vector<NightVerdict> judge_series(const std::vector<Night>& series, const VerdictOptions& o,
                                       const std::vector<AcceptedLevel>& accepted) {
  return SeriesJudge(series, o, accepted).run();
}

std::string fingerprint_text(const v1::MachineFingerprint& f) {
  // ';' and '|' separate fields and agents: a model name never holds them, but keep it so.
  auto clean = [](std::string v) {
    for (char& c : v)
      if (c == ';' || c == '|' || c == '\n' || c == '=') c = ' ';
    return v;
  };
  return "cpu_model=" + clean(f.cpu_model()) + ";cpus=" + std::to_string(f.cpus()) +
         ";threads_per_core=" + std::to_string(f.threads_per_core()) + ";governor=" + clean(f.governor()) +
         ";boost=" + clean(f.boost()) + ";kernel=" + clean(f.kernel()) +
         ";virtual=" + (f.virtual_machine() ? "yes" : "no");
}

double cell_alpha(double false_alarm_pct, size_t cells) {
  return false_alarm_pct / 100 / static_cast<double>(std::max<size_t>(1, cells));
}

double t_quantile(double p, double df) {
  return boost::math::quantile(boost::math::students_t_distribution<double>(df), p);
}

}  // namespace loadlab::controller
