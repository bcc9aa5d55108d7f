#include "loadlab/controller/ab_verdicts.hpp"

#include <fmt/format.h>

#include <cmath>
#include <ostream>

#include "loadlab/controller/verdict.hpp"

namespace loadlab::controller {

namespace {

std::string pct(double v, bool sign = true) { return pct_text(v, sign); }

// The key without its target: "server-pr/d0/t1" → "d0/t1".
std::string axes_part(const std::string& key) {
  auto slash = key.find('/');
  return slash == std::string::npos ? "" : key.substr(slash + 1);
}

// The figures of the pairs that gave one on both sides: log(B/A), A's and B's.
struct PairFigures {
  std::vector<double> logs, av, bv;
};

// Each repetition pair's figures, recorded in `v` (also those that gave none), and those that
// gave one on both sides.
PairFigures pair_figures(const CellResult& a, const CellResult& b, const std::string& metric,
                         v1::CellVerdict& v) {
  PairFigures f;
  const size_t n = std::min(a.reps.size(), b.reps.size());
  for (size_t i = 0; i < n; ++i) {
    const double x = metric_value(metric, a.reps[i]), y = metric_value(metric, b.reps[i]);
    auto* p = v.add_pairs();
    p->set_a(x);
    p->set_b(y);
    p->set_b_first(i % 2 == 1);
    if (!(std::isfinite(x) && std::isfinite(y) && x > 0 && y > 0)) continue;
    f.logs.push_back(std::log(y / x));
    f.av.push_back(x);
    f.bv.push_back(y);
  }
  return f;
}

// The verdict and its reason from how much worse B is than A (as a log ratio), the pairs' noise
// band (`half`) and the threshold (as a log ratio).
void decide_pair(double worse, double half, double threshold_log, const std::string& pairs,
                 const RegressionDef& r, v1::CellVerdict& v) {
  if (worse > half && worse > threshold_log) {
    v.set_verdict(kRegression);
    v.set_reason(pct(v.change_pct()) + ": B worse than A beyond the threshold, and the " + pairs +
                 " show it (" + pct((std::exp(half) - 1) * 100, false) + " would be noise)");
  } else if (-worse > half && -worse > threshold_log) {
    v.set_verdict(kImprovement);
    v.set_reason(pct(v.change_pct()) + ": B better than A beyond the threshold, and the " + pairs +
                 " show it");
  } else if (std::abs(v.change_pct()) > r.threshold_pct) {
    v.set_verdict(kNoise);
    v.set_reason(pct(v.change_pct()) + " is beyond the threshold, but the " + pairs +
                 " spread too much to show it");
  } else {
    v.set_verdict(kSame);
    v.set_reason(pct(v.change_pct()) + ": within the " + pct(r.threshold_pct, false) + " threshold (" +
                 pairs + ")");
  }
}

void judge_pair(const CellResult& a, const CellResult& b, const RegressionDef& r, double alpha,
                v1::CellVerdict& v) {
  const bool higher = metric_higher_is_better(r.metric);
  v.set_key(b.cell.key());
  v.set_a_key(a.cell.key());
  if (!a.ok() || !b.ok()) {
    v.set_verdict("failed");
    v.set_reason((!b.ok() ? b.error : a.error));
    return;
  }
  const PairFigures f = pair_figures(a, b, r.metric, v);
  const auto& logs = f.logs;
  if (logs.empty()) {
    v.set_verdict(kInconclusive);
    v.set_reason("no pair gave the figure");
    return;
  }
  const double a_fig = night_figure(f.av), b_fig = night_figure(f.bv);
  double mean = 0;
  for (double d : logs) mean += d;
  mean /= static_cast<double>(logs.size());
  v.set_baseline(a_fig);
  v.set_value(b_fig);
  v.set_change_pct((std::exp(mean) - 1) * 100);  // the pairs' own estimate
  if (logs.size() < 2) {
    v.set_verdict(kInconclusive);
    v.set_reason("one pair: no spread to judge by");
    return;
  }
  double ss = 0;
  for (double d : logs) ss += (d - mean) * (d - mean);
  const double df = static_cast<double>(logs.size() - 1);
  const double se = std::sqrt(ss / df / static_cast<double>(logs.size()));
  const double half = t_quantile(1 - alpha, df) * se;
  const double threshold_log =
      higher ? -std::log1p(-std::min(r.threshold_pct, 99.0) / 100) : std::log1p(r.threshold_pct / 100);
  // One measurement, no confirmation: caught 95 % of the time.
  const double mdc = std::max(half, threshold_log) + detect_quantile(df, 0.95) * se;
  v.set_band_low(a_fig * std::exp(-half));
  v.set_band_high(a_fig * std::exp(half));
  v.set_mdc_pct(higher ? (1 - std::exp(-mdc)) * 100 : (std::exp(mdc) - 1) * 100);
  v.set_nights(static_cast<uint32_t>(logs.size()));
  const double worse = higher ? -mean : mean;
  const std::string pairs = std::to_string(logs.size()) + " pairs";
  decide_pair(worse, half, threshold_log, pairs, r, v);
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
                      const RegressionDef& r, size_t cells) {
  v1::Verdicts out;
  out.set_method("a/b");
  out.set_metric(r.metric);
  out.set_threshold_pct(r.threshold_pct);
  out.set_false_alarm_pct(r.false_alarm_pct);
  out.set_cell_level(cell_alpha(r.false_alarm_pct, cells));
  for (auto& [a, b] : pairs) {
    out.set_baseline(a->cell.target);
    auto* v = out.add_cells();
    judge_pair(*a, *b, r, out.cell_level(), *v);
    out.set_regressions(out.regressions() + (v->verdict() == kRegression));
    out.set_failed(out.failed() + (v->verdict() == "failed"));
  }
  if (!pairs.empty())
    out.set_note("build " + pairs.front().second->cell.target + " against build " +
                 pairs.front().first->cell.target + ", interleaved A B, B A, ... in this run");
  return out;
}

void write_ab_pairs(std::ostream& out, const v1::Verdicts& v) {
  for (auto& c : v.cells()) {
    out << c.key() << " against " << c.a_key() << ":\n";
    out << fmt::format("  {:>4}  {:>5}  {:>14}  {:>14}  {:>9}\n", "pair", "order", "A " + v.metric(),
                       "B " + v.metric(), "B/A");
    for (int i = 0; i < c.pairs_size(); ++i) {
      const auto& p = c.pairs(i);
      out << fmt::format("  {:4}  {:>5}  {:>14.2f}  {:>14.2f}  {:>9}\n", i + 1, p.b_first() ? "B A" : "A B",
                         p.a(), p.b(), p.a() > 0 ? pct((p.b() / p.a() - 1) * 100) : "-");
    }
  }
}

}  // namespace loadlab::controller
