#include "judge/ab_verdicts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ostream>

#include "judge/compare.hpp"
#include "judge/verdict.hpp"
#include "loadlab/shared/format.hpp"
#include "results/quality_flags.hpp"

namespace loadlab::controller {

namespace {

// The key without its target: "server-pr/d0/t1" → "d0/t1".
std::string axes_part(const std::string& key) {
  auto slash = key.find('/');
  return slash == std::string::npos ? "" : key.substr(slash + 1);
}

// The figures of the pairs that gave one on both sides: log(B/A), A's and B's; and how many
// pairs were left out because other work ran on their CPUs.
struct PairFigures {
  std::vector<double> logs, av, bv;
  size_t left_out = 0;
  // "57 pairs" or "57 pairs (3 left out: other work ran on their CPUs)", after `what`.
  std::string count(const std::string& what = "pairs") const {
    std::string s = std::to_string(logs.size()) + " " + what;
    if (left_out > 0) s += " (" + std::to_string(left_out) + " left out: other work ran on their CPUs)";
    return s;
  }
};

// Each repetition pair's figures of `a` and `b` (A's and B's repetitions, or their
// confirmations), recorded in `out` (also those that gave none), and those that gave one on
// both sides. A pair with a busy-machine flag on either side is left out of the figures (and
// marked so in `out`): one such pair, its ratio tens of % off, can widen a cell's band several
// times over, and the flag comes from the machine's CPU, not from the builds' figures (but for a
// metric other work does not move: instructions).
PairFigures pair_figures(const std::vector<v1::Repetition>& a, const std::vector<v1::Repetition>& b,
                         const std::string& metric, google::protobuf::RepeatedPtrField<v1::ABPair>& out) {
  PairFigures f;
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const auto xa = metric_value(metric, a[i]), yb = metric_value(metric, b[i]);
    auto* p = out.Add();
    if (xa) p->set_a(*xa);  // absent where a side's repetition has no figure
    if (yb) p->set_b(*yb);
    p->set_b_first(i % 2 == 1);
    if (!xa || !yb) continue;
    const double x = *xa, y = *yb;
    if (!(std::isfinite(x) && std::isfinite(y) && x > 0 && y > 0)) continue;
    if (!unmoved_by_other_work(metric) && (busy_machine(a[i]) || busy_machine(b[i]))) {
      p->set_left_out(true);
      ++f.left_out;
      continue;
    }
    f.logs.push_back(std::log(y / x));
    f.av.push_back(x);
    f.bv.push_back(y);
  }
  return f;
}

// The share of pairs a trimmed estimate leaves out at each end.
constexpr double kTrim = 0.2;

// The paired test's figures of a set of log ratios (at least two): their estimate of B/A (the
// mean, or with `trimmed` the 20 % trimmed mean), its standard error and degrees of freedom.
// Trimmed is Yuen's test: with g pairs left out at each end and h = n − 2g kept, the standard
// error is √(SSw / (h (h − 1))), SSw the winsorized pairs' sum of squares (each end's g set to
// its neighbour), with h − 1 degrees of freedom; with too few pairs to leave any out (g = 0) it
// is the t test.
struct PairTest {
  double mean = 0, se = 0, df = 0;
  PairTest(std::vector<double> logs, bool trimmed) {
    const size_t n = logs.size();
    const size_t g = trimmed ? static_cast<size_t>(kTrim * static_cast<double>(n)) : 0;
    std::sort(logs.begin(), logs.end());
    for (size_t i = g; i < n - g; ++i) mean += logs[i];
    mean /= static_cast<double>(n - 2 * g);
    double w_mean = 0, ss = 0;
    auto w = [&](size_t i) { return logs[std::clamp(i, g, n - g - 1)]; };
    for (size_t i = 0; i < n; ++i) w_mean += w(i) / static_cast<double>(n);
    for (size_t i = 0; i < n; ++i) ss += (w(i) - w_mean) * (w(i) - w_mean);
    const auto h = static_cast<double>(n - 2 * g);
    df = h - 1;
    se = std::sqrt(ss / (h * (h - 1)));
  }
};

bool trimmed_pairs(const RegressionDef& r) { return r.ab_estimate == kAbEstimateTrimmed; }

// The verdict and its reason from how much worse B is than A (as a log ratio), the pairs' noise
// band (`half`) and the threshold (as a log ratio).
void decide_pair(double worse, double half, double threshold_log, const std::string& pairs,
                 const RegressionDef& r, v1::CellVerdict& v) {
  if (worse > half && worse > threshold_log) {
    set_verdict(v, Verdict::kRegression);
    v.set_reason(pct_text(v.change_pct()) + ": B worse than A beyond the threshold, and the " + pairs +
                 " show it (" + pct_text((std::exp(half) - 1) * 100, false) + " would be noise)");
  } else if (-worse > half && -worse > threshold_log) {
    set_verdict(v, Verdict::kImprovement);
    v.set_reason(pct_text(v.change_pct()) + ": B better than A beyond the threshold, and the " + pairs +
                 " show it");
  } else if (std::abs(v.change_pct()) > r.threshold_pct) {
    set_verdict(v, Verdict::kNoise);
    v.set_reason(pct_text(v.change_pct()) + " is beyond the threshold, but the " + pairs +
                 " spread too much to show it");
  } else {
    set_verdict(v, Verdict::kSame);
    v.set_reason(pct_text(v.change_pct()) + ": within the " + pct_text(r.threshold_pct, false) +
                 " threshold (" + pairs + ")");
  }
}

// A regression of the first pairs against the confirmation's pairs: it holds when they too show
// B worse beyond the threshold and beyond their own band at kConfirmLevel; otherwise `noise`.
void confirm_regression(const CellResult& a, const CellResult& b, const RegressionDef& r,
                        double threshold_log, v1::CellVerdict& v) {
  const bool higher = metric_higher_is_better(r.metric);
  const PairFigures f = pair_figures(a.confirmations, b.confirmations, r.metric, *v.mutable_confirm_pairs());
  if (f.logs.size() < 2) {
    v.set_reason(v.reason() + "; not confirmed (" + f.count("pairs measured again") + ": too few to judge)");
    return;
  }
  const PairTest t(f.logs, trimmed_pairs(r));
  v.set_confirm_value(*night_figure(f.bv));  // f.logs has pairs: each side a figure
  v.set_confirm_change_pct((std::exp(t.mean) - 1) * 100);
  const double worse = higher ? -t.mean : t.mean;
  const double half = t_quantile(1 - kConfirmLevel, t.df) * t.se;
  const std::string again = f.count("more pairs on fresh targets");
  if (worse > half && worse > threshold_log) {
    v.set_reason(v.reason() + "; confirmed by " + again + ": " + pct_text(v.confirm_change_pct()));
    return;
  }
  set_verdict(v, Verdict::kNoise);
  v.set_reason("first " + v.reason() + ", but " + again + " measured " + pct_text(v.confirm_change_pct()) +
               ", which is not beyond the threshold and their " +
               pct_text((std::exp(half) - 1) * 100, false) + " band");
}

void judge_pair(const CellResult& a, const CellResult& b, const RegressionDef& r, double alpha, bool confirms,
                v1::CellVerdict& v) {
  const bool higher = metric_higher_is_better(r.metric);
  v.set_key(b.cell.key());
  v.set_a_key(a.cell.key());
  if (!a.ok() || !b.ok()) {
    set_verdict(v, Verdict::kFailed);
    v.set_reason((!b.ok() ? b.error : a.error));
    return;
  }
  const PairFigures f = pair_figures(a.reps, b.reps, r.metric, *v.mutable_pairs());
  const auto& logs = f.logs;
  if (logs.empty()) {
    set_verdict(v, Verdict::kInconclusive);
    v.set_reason(f.left_out > 0 ? "every pair was left out: other work ran on their CPUs"
                                : "no pair gave the figure");
    return;
  }
  const double a_fig = *night_figure(f.av), b_fig = *night_figure(f.bv);  // logs: pairs of figures
  v.set_baseline(a_fig);
  v.set_value(b_fig);
  if (logs.size() < 2) {
    v.set_change_pct((std::exp(logs.front()) - 1) * 100);
    set_verdict(v, Verdict::kInconclusive);
    v.set_reason(f.count("pair") + ": no spread to judge by");
    return;
  }
  const PairTest t(logs, trimmed_pairs(r));
  v.set_change_pct((std::exp(t.mean) - 1) * 100);  // the pairs' own estimate
  const double half = t_quantile(1 - alpha, t.df) * t.se;
  const double threshold_log =
      higher ? -std::log1p(-std::min(r.threshold_pct, 99.0) / 100) : std::log1p(r.threshold_pct / 100);
  // Caught 95 % of the time: by one measurement, or by both it and its confirmation (each
  // sized for 97.5 %: whatever their correlation, both land beyond their bands 95 % of the time).
  const double mdc = std::max(half, threshold_log) +
                     detect_quantile(t.df, confirms ? kPowerPerPairedMeasurement : 0.95) * t.se;
  v.set_band_low(a_fig * std::exp(-half));
  v.set_band_high(a_fig * std::exp(half));
  v.set_mdc_pct(higher ? (1 - std::exp(-mdc)) * 100 : (std::exp(mdc) - 1) * 100);
  v.set_nights(static_cast<uint32_t>(logs.size()));
  const double worse = higher ? -t.mean : t.mean;
  const std::string pairs = f.count();
  decide_pair(worse, half, threshold_log, pairs, r, v);
  if (!is_verdict(v, Verdict::kRegression)) return;
  v.set_suspect(true);
  if (!a.confirmations.empty() || !b.confirmations.empty())
    confirm_regression(a, b, r, threshold_log, v);
  else if (confirms)
    v.set_reason(v.reason() + "; not confirmed (no confirmation measured)");
}

}  // namespace

std::vector<std::pair<size_t, size_t>> ab_pairs(const std::vector<Cell>& cells, const std::string& a,
                                                const std::string& b) {
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t i = 0; i < cells.size(); ++i) {
    if (cells[i].target != a) continue;
    for (size_t j = 0; j < cells.size(); ++j)
      if (cells[j].target == b && axes_part(cells[j].key()) == axes_part(cells[i].key()))
        out.emplace_back(i, j);
  }
  return out;
}

v1::Verdicts judge_ab(const std::vector<std::pair<const CellResult*, const CellResult*>>& pairs,
                      const RegressionDef& r, size_t cells, bool confirms) {
  v1::Verdicts out;
  out.set_method("a/b");
  out.set_metric(r.metric);
  out.set_threshold_pct(r.threshold_pct);
  out.set_false_alarm_pct(r.false_alarm_pct);
  out.set_cell_level(cell_alpha(r.false_alarm_pct, cells));
  for (auto& [a, b] : pairs) {
    out.set_baseline(a->cell.target);
    auto* v = out.add_cells();
    judge_pair(*a, *b, r, out.cell_level(), confirms, *v);
    out.set_regressions(out.regressions() + is_verdict(*v, Verdict::kRegression));
    out.set_failed(out.failed() + is_verdict(*v, Verdict::kFailed));
  }
  if (!pairs.empty())
    out.set_note("build " + pairs.front().second->cell.target + " against build " +
                 pairs.front().first->cell.target + ", interleaved A B, B A, ... in this run" +
                 (trimmed_pairs(r) ? "; the pairs' 20 % trimmed mean (Yuen's test)" : ""));
  return out;
}

std::string pair_order(const v1::ABPair& p) {
  return std::string(p.b_first() ? "B A" : "A B") + (p.left_out() ? ", left out" : "");
}

std::string pair_figure_text(const v1::ABPair& p, bool b) {
  if (b ? !p.has_b() : !p.has_a()) return "n/a";
  return fixed_text(b ? p.b() : p.a(), 2);
}

std::optional<double> pair_change_pct(const v1::ABPair& p) {
  if (!p.has_a() || !p.has_b() || !(p.a() > 0)) return std::nullopt;
  return (p.b() / p.a() - 1) * 100;
}

void write_ab_pairs(std::ostream& out, const v1::Verdicts& v) {
  auto rows = [&](const google::protobuf::RepeatedPtrField<v1::ABPair>& pairs, const std::string& label) {
    for (int i = 0; i < pairs.size(); ++i) {
      const auto& p = pairs[i];
      const auto change = pair_change_pct(p);
      out << fmt::format("  {:>11}  {:>15}  {:>14}  {:>14}  {:>9}\n", label + std::to_string(i + 1),
                         pair_order(p), pair_figure_text(p, false), pair_figure_text(p, true),
                         change ? pct_text(*change) : "-");
    }
  };
  for (auto& c : v.cells()) {
    out << c.key() << " against " << c.a_key() << ":\n";
    out << fmt::format("  {:>11}  {:>15}  {:>14}  {:>14}  {:>9}\n", "pair", "order", "A " + v.metric(),
                       "B " + v.metric(), "B/A");
    rows(c.pairs(), "");
    rows(c.confirm_pairs(), "confirm ");
  }
}

}  // namespace loadlab::controller
