#include "judge/compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "judge/verdict.hpp"
#include "loadlab/proto/json.hpp"
#include "loadlab/shared/format.hpp"
#include "loadlab/shared/limits.hpp"

namespace loadlab::controller {

namespace {

struct Metric {
  const char* name;
  bool higher_is_better;
  std::optional<double> (*read)(const v1::Repetition& rep);  // none: not measured
  const char* figure;  // Repetition.unavailable's name of the figure; "" when always given
};

const Metric kMetrics[] = {
    {"qps", true, [](const v1::Repetition& r) -> std::optional<double> { return r.qps(); }, "qps"},
    {"p50_ms", false,
     [](const v1::Repetition& r) -> std::optional<double> { return r.latency().p50_us() / 1000; },
     "latency.p50_us"},
    {"p90_ms", false,
     [](const v1::Repetition& r) -> std::optional<double> { return r.latency().p90_us() / 1000; },
     "latency.p90_us"},
    {"p99_ms", false,
     [](const v1::Repetition& r) -> std::optional<double> { return r.latency().p99_us() / 1000; },
     "latency.p99_us"},
    {"server_cpu_pct", false,
     [](const v1::Repetition& r) -> std::optional<double> { return r.server().cpu_pct(); }, ""},
    {"server_rss_kb", false,
     [](const v1::Repetition& r) -> std::optional<double> {
       return static_cast<double>(r.server().rss_kb_peak());
     },
     ""},
    {"client_cpu_pct", false,
     [](const v1::Repetition& r) -> std::optional<double> { return r.client().cpu_pct(); }, ""},
    // A capacity search's cells (docs/capacity.md): the capacity each repetition's search found.
    {"capacity", true, [](const v1::Repetition& r) -> std::optional<double> { return r.capacity(); }, ""},
    // The cells' instructions per request (a scenario's `instructions`, docs/instructions.md).
    {"instructions", false,
     [](const v1::Repetition& r) -> std::optional<double> {
       if (!r.has_instructions_per_request()) return std::nullopt;
       return r.instructions_per_request();
     },
     ""},
};

const Metric& find_metric(const std::string& name) {
  check_metric_name(name, "--metric");
  for (auto& m : kMetrics)
    if (name == m.name) return m;
  throw std::logic_error("metric " + name + " has no reader in judge/compare.cpp");
}

struct CellValues {
  bool ok = false;
  std::vector<double> values;        // one per repetition
  std::vector<double> confirmation;  // one per confirming repetition
  std::vector<std::string> axes;
};

std::vector<double> figures(const google::protobuf::RepeatedPtrField<v1::Repetition>& reps, const Metric& m) {
  std::vector<double> out;
  for (auto& r : reps) {
    const auto x = metric_value(m.name, r);
    if (x && std::isfinite(*x) && *x > 0) out.push_back(*x);
  }
  return out;
}

std::map<std::string, CellValues> cells_of(const nlohmann::json& result, const Metric& m, const char* which) {
  if (!result.is_object() || !result.contains("cells") || !result["cells"].is_array())
    throw InputError("/cells", std::string(which) + " is not a loadlab result.json (no cells array)");
  std::map<std::string, CellValues> out;
  const auto& cells = result["cells"];
  for (size_t i = 0; i < cells.size(); ++i) {
    v1::CellResult c;
    try {
      proto::from_json(cells[i].dump(), &c);
    } catch (const InputError& e) {
      throw InputError("/cells/" + std::to_string(i), std::string(which) + ": not a loadlab.v1.CellResult (" +
                                                          e.message() +
                                                          "); a result.json of another loadlab version?");
    }
    CellValues v;
    v.values = figures(c.repetitions(), m);
    v.confirmation = figures(c.confirmations(), m);
    for (auto& a : c.cell().axes()) v.axes.push_back(a.axis());
    v.ok = c.ok() && !v.values.empty();
    out[c.cell().key()] = v;
  }
  return out;
}

// Two runs compare when they ran one scenario over a matrix of the same axes.
void check_comparable(const nlohmann::json& base, const nlohmann::json& current,
                      const std::map<std::string, CellValues>& b,
                      const std::map<std::string, CellValues>& n) {
  auto name = [](const nlohmann::json& r) {
    return r.contains("scenario") && r["scenario"].is_object() && r["scenario"].contains("name") &&
                   r["scenario"]["name"].is_string()
               ? r["scenario"]["name"].get<std::string>()
               : std::string();
  };
  if (!name(base).empty() && !name(current).empty() && name(base) != name(current))
    throw InputError("/scenario/name", "BASE ran scenario \"" + name(base) + "\" and NEW \"" + name(current) +
                                           "\": runs of different scenarios cannot be compared");
  auto axes = [](const std::map<std::string, CellValues>& cells) {
    std::string out;
    if (!cells.empty())
      for (auto& a : cells.begin()->second.axes) out += (out.empty() ? "" : ", ") + a;
    return "[" + out + "]";
  };
  if (!b.empty() && !n.empty() && axes(b) != axes(n))
    throw InputError("/cells", "BASE's matrix has the axes " + axes(b) + ", NEW's " + axes(n) +
                                   ": their cells are not the same cells");
}

struct LogStats {
  double mean = 0, var = 0;
  size_t n = 0;
};
LogStats log_stats(const std::vector<double>& v) {
  LogStats s;
  s.n = v.size();
  for (double x : v) s.mean += std::log(x);
  s.mean /= static_cast<double>(std::max<size_t>(1, s.n));
  for (double x : v) s.var += (std::log(x) - s.mean) * (std::log(x) - s.mean);
  s.var = s.n > 1 ? s.var / static_cast<double>(s.n - 1) : 0;
  return s;
}

// NEW's repetitions against BASE's: a two-sample t test on the log figures, one-sided at `alpha`.
class TwoRunJudge {
 public:
  TwoRunJudge(const Metric& m, const RegressionDef& r, double alpha) : m_(m), r_(r), alpha_(alpha) {
    threshold_log_ = m.higher_is_better ? -std::log1p(-std::min(r.threshold_pct, 99.0) / 100)
                                        : std::log1p(r.threshold_pct / 100);
  }

  void judge(const CellValues& base, const CellValues& now, v1::CellVerdict& v) const {
    const auto base_figure = night_figure(base.values), new_figure = night_figure(now.values);
    if (base_figure) v.set_baseline(*base_figure);
    if (new_figure) v.set_value(*new_figure);
    if (!base_figure || !new_figure) {
      set_verdict(v, Verdict::kInconclusive);
      v.set_reason(std::string("no figure in ") + (base_figure ? "NEW" : new_figure ? "BASE" : "either run"));
      return;
    }
    const double b = *base_figure, c = *new_figure;
    v.set_change_pct((c / b - 1) * 100);
    const double worse_pct = m_.higher_is_better ? -v.change_pct() : v.change_pct();
    if (base.values.size() < 2 || now.values.size() < 2) {
      const bool beyond = std::abs(worse_pct) > r_.threshold_pct;
      set_verdict(v, beyond ? Verdict::kInconclusive : Verdict::kSame);
      v.set_reason(pct_text(v.change_pct()) +
                   (beyond ? ": beyond the threshold, but one repetition a side shows no "
                             "spread to judge it by"
                           : ": within the threshold"));
      return;
    }
    const LogStats bs = log_stats(base.values);
    double half = 0, mdc = 0;
    const int first = t_test(bs, now.values, &half, &mdc);
    v.set_band_low(b * std::exp(-half));
    v.set_band_high(b * std::exp(half));
    v.set_mdc_pct(m_.higher_is_better ? (1 - std::exp(-mdc)) * 100 : (std::exp(mdc) - 1) * 100);
    v.set_suspect(first > 0);
    if (first == 0) {
      const bool beyond = std::abs(worse_pct) > r_.threshold_pct;
      set_verdict(v, beyond ? Verdict::kNoise : Verdict::kSame);
      v.set_reason(pct_text(v.change_pct()) +
                   (beyond ? ": beyond the threshold, but the two runs' repetitions do not "
                             "show it"
                           : ": within the threshold"));
      return;
    }
    const Verdict change = first > 0 ? Verdict::kRegression : Verdict::kImprovement;
    const std::string seen = pct_text(v.change_pct()) + ": beyond the threshold, and the repetitions show it";
    if (first < 0 || now.confirmation.size() < 2) {  // only a regression is confirmed
      set_verdict(v, change);
      v.set_reason(seen);
      return;
    }
    const std::optional<double> confirm_figure = night_figure(now.confirmation);
    if (confirm_figure) v.set_confirm_value(*confirm_figure);
    const double confirm = confirm_figure.value_or(NAN);  // the same client as the first: it has the figure
    if (t_test(bs, now.confirmation, nullptr, nullptr) == first) {
      set_verdict(v, change);
      v.set_reason(seen + "; confirmed on fresh targets: " + pct_text((confirm / b - 1) * 100));
    } else {
      set_verdict(v, Verdict::kNoise);
      v.set_reason("first " + seen + ", but measured again on fresh targets " +
                   pct_text((confirm / b - 1) * 100) + ", which does not");
    }
  }

 private:
  // Whether `values` are worse than BASE's (`bs`) beyond both the noise and the threshold (1),
  // better beyond both (-1), or neither (0); the noise band's half width goes to `half_out`
  // and the smallest change the test catches to `mdc_out` (both as log ratios).
  int t_test(const LogStats& bs, const std::vector<double>& values, double* half_out, double* mdc_out) const {
    const LogStats ns = log_stats(values);
    // Student's two-sample test with the pooled variance: a run's repetitions are few, and
    // Welch's degrees of freedom would leave almost none.
    const double df = static_cast<double>(bs.n + ns.n - 2);
    const double pooled = ((bs.n - 1) * bs.var + (ns.n - 1) * ns.var) / df;
    const double se = std::sqrt(pooled * (1.0 / static_cast<double>(bs.n) + 1.0 / static_cast<double>(ns.n)));
    const double half = t_quantile(1 - alpha_, df) * se;
    if (half_out) *half_out = half;
    if (mdc_out) *mdc_out = std::max(half, threshold_log_) + detect_quantile(df, kPowerPerMeasurement) * se;
    const double w = m_.higher_is_better ? bs.mean - ns.mean : ns.mean - bs.mean;
    if (w > half && w > threshold_log_) return 1;
    if (-w > half && -w > threshold_log_) return -1;
    return 0;
  }

  const Metric& m_;
  const RegressionDef& r_;
  double alpha_;
  double threshold_log_;
};

}  // namespace

RegressionDef regression_of_result(const nlohmann::json& result) {
  if (!result.is_object() || !result.contains("scenario") || !result["scenario"].is_object()) return {};
  const auto& scenario = result["scenario"];
  RegressionDef d;
  if (scenario.contains("regression"))
    d = parse_regression(ObjectReader(scenario["regression"], "/scenario/regression"));
  // A capacity search's run is judged by what it found, unless its scenario says otherwise.
  if (scenario.contains("search") &&
      !(scenario.contains("regression") && scenario["regression"].is_object() &&
        scenario["regression"].contains("metric")))
    d.metric = "capacity";
  return d;
}

bool metric_higher_is_better(const std::string& name) { return find_metric(name).higher_is_better; }

std::optional<double> metric_value(const std::string& name, const v1::Repetition& r) {
  const Metric& m = find_metric(name);
  if (*m.figure &&
      std::find(r.unavailable().begin(), r.unavailable().end(), m.figure) != r.unavailable().end())
    return std::nullopt;
  return m.read(r);
}

v1::Verdicts compare_results(const nlohmann::json& base, const nlohmann::json& current,
                             const RegressionDef& r) {
  const Metric& m = find_metric(r.metric);
  if (!(r.threshold_pct >= 0 && r.threshold_pct <= limits::kMaxThresholdPct))
    throw InputError("--threshold-pct",
                     "must be a number in [0, " + std::to_string(int(limits::kMaxThresholdPct)) + "]");
  auto b = cells_of(base, m, "BASE");
  auto n = cells_of(current, m, "NEW");
  check_comparable(base, current, b, n);
  v1::Verdicts out;
  out.set_method("two runs");
  out.set_metric(r.metric);
  out.set_threshold_pct(r.threshold_pct);
  out.set_false_alarm_pct(r.false_alarm_pct);
  out.set_cell_level(cell_alpha(r.false_alarm_pct, std::max(b.size(), n.size())));
  out.set_note(
      "one run against one run: a run's repetitions spread less than nights do, so a change shown here may "
      "be "
      "a slow night; a history (--history FILE --baseline history) judges each night against its cell's own "
      "spread between nights");
  const TwoRunJudge judge(m, r, out.cell_level());
  for (auto& [key, bv] : b) {
    auto* v = out.add_cells();
    v->set_key(key);
    auto it = n.find(key);
    if (it == n.end()) {
      set_verdict(*v, Verdict::kMissing);
      v->set_reason("in BASE, not in NEW");
    } else if (!it->second.ok) {
      set_verdict(*v, Verdict::kFailed);
      v->set_reason("the cell failed in NEW");
    } else if (!bv.ok) {
      if (auto figure = night_figure(it->second.values)) v->set_value(*figure);
      set_verdict(*v, Verdict::kNew);
      v->set_reason("the cell failed in BASE: nothing to compare with");
    } else {
      judge.judge(bv, it->second, *v);
    }
    const auto verdict = verdict_of(*v);
    out.set_regressions(out.regressions() + (verdict == Verdict::kRegression));
    out.set_failed(out.failed() + (verdict && is_failure(*verdict)));
  }
  for (auto& [key, nv] : n)
    if (!b.count(key)) {
      auto* v = out.add_cells();
      v->set_key(key);
      if (auto figure = night_figure(nv.values); nv.ok && figure) v->set_value(*figure);
      set_verdict(*v, nv.ok ? Verdict::kNew : Verdict::kFailed);
      v->set_reason(nv.ok ? "not in BASE: nothing to compare with" : "the cell failed in NEW");
      out.set_failed(out.failed() + !nv.ok);
    }
  return out;
}

std::string history_beside(const v1::CellVerdict& c) {
  const auto& h = c.by_history();
  return "(the A/B against " + c.a_key() + " decided; the history alone: " + h.verdict() +
         (h.has_change_pct() ? " " + pct_text(h.change_pct()) : "") +
         (h.has_mdc_pct() ? ", mdc " + pct_text(h.mdc_pct(), false) : "") + ")";
}

void write_verdicts(std::ostream& out, const v1::Verdicts& v) {
  const std::string metric = v.metric();
  out << fmt::format("{:<28} {:>12} {:>12} {:>9} {:>9}  {}\n", "cell", "base " + metric, "new " + metric,
                     "change", "mdc", "verdict");
  auto val = [](bool has, double x) { return has && std::isfinite(x) ? fixed_text(x, 2) : "-"; };
  for (auto& c : v.cells()) {
    std::string change = c.has_change_pct() ? pct_text(c.change_pct()) : "-";
    std::string mdc = c.has_mdc_pct() ? pct_text(c.mdc_pct(), false) : "-";
    std::string verdict = is_verdict(c, Verdict::kRegression) ? "REGRESSION" : c.verdict();
    // The key padded by bytes, as printf did: a target name may hold UTF-8.
    out << fmt::format("{} {:>12} {:>12} {:>9} {:>9}  {}", pad_right(c.key(), 28),
                       val(c.has_baseline(), c.baseline()), val(c.has_value(), c.value()), change, mdc,
                       verdict)
        << (c.reason().empty() ? "" : ": " + c.reason()) << "\n";
    if (c.has_by_history()) out << "  " << history_beside(c) << "\n";
  }
  const std::string level = fmt::format("{:.2g}", v.cell_level());
  out << "\n" << v.regressions() << " regression" << (v.regressions() == 1 ? "" : "s");
  if (v.failed()) out << ", " << v.failed() << " failed cell" << (v.failed() == 1 ? "" : "s");
  out << " (metric " << metric << ", threshold " << v.threshold_pct() << " %, at most " << v.false_alarm_pct()
      << " % of nights of unchanged code alarm: " << level
      << " a cell; mdc: the smallest change each cell could show 95 % of the time; " << v.method() << ")\n";
  if (!v.note().empty()) out << "note: " << v.note() << "\n";
}

}  // namespace loadlab::controller
