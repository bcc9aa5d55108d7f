#include "loadlab/controller/compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "loadlab/controller/stats.hpp"
#include "loadlab/proto/json.hpp"
#include "loadlab/shared/json_input.hpp"
#include "loadlab/shared/limits.hpp"
#include "loadlab/v1/result.pb.h"

namespace loadlab::controller {

namespace {

struct Metric {
  const char* name;
  bool higher_is_better;
  double (*read)(const v1::Repetition& rep);
};

const Metric kMetrics[] = {
    {"qps", true, [](const v1::Repetition& r) { return r.qps(); }},
    {"p50_ms", false, [](const v1::Repetition& r) { return r.latency().p50_us() / 1000; }},
    {"p90_ms", false, [](const v1::Repetition& r) { return r.latency().p90_us() / 1000; }},
    {"p99_ms", false, [](const v1::Repetition& r) { return r.latency().p99_us() / 1000; }},
    {"server_cpu_pct", false, [](const v1::Repetition& r) { return r.server().cpu_pct(); }},
    {"server_rss_kb", false,
     [](const v1::Repetition& r) { return static_cast<double>(r.server().rss_kb_peak()); }},
    {"client_cpu_pct", false, [](const v1::Repetition& r) { return r.client().cpu_pct(); }},
};

const Metric& find_metric(const std::string& name) {
  for (auto& m : kMetrics)
    if (name == m.name) return m;
  std::string all;
  for (auto& m : kMetrics) all += (all.empty() ? "" : ", ") + std::string(m.name);
  throw InputError("--metric", "unknown metric \"" + name + "\"; allowed: " + all);
}

struct CellValues {
  bool ok = false;
  std::vector<double> values;   // one per repetition
  std::vector<double> samples;  // per second of every repetition's window (QPS), else empty
  std::vector<std::string> axes;
  double median() const {
    auto v = values;
    std::sort(v.begin(), v.end());
    return v.empty() ? NAN : v[(v.size() - 1) / 2];
  }
};

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
    for (auto& r : c.repetitions()) {
      double x = m.read(r);
      if (std::isfinite(x)) v.values.push_back(x);
      if (std::string(m.name) == "qps")
        for (auto& iv : r.intervals()) v.samples.push_back(iv.qps());
    }
    for (auto& a : c.cell().axes()) v.axes.push_back(a.axis());
    v.ok = c.ok() && !v.values.empty();
    out[c.cell().key()] = v;
  }
  return out;
}

}  // namespace

const std::vector<std::string>& metric_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (auto& m : kMetrics) n.push_back(m.name);
    return n;
  }();
  return names;
}

bool metric_higher_is_better(const std::string& name) { return find_metric(name).higher_is_better; }

CompareOptions options_from_result(const nlohmann::json& result) {
  CompareOptions o;
  if (!result.is_object() || !result.contains("scenario") || !result["scenario"].is_object() ||
      !result["scenario"].contains("regression"))
    return o;
  ObjectReader r(result["scenario"]["regression"], "/scenario/regression");
  o.metric = r.string("metric", o.metric);
  o.threshold_pct = r.number("threshold_pct", 0, limits::kMaxThresholdPct, o.threshold_pct);
  return o;
}

void decide(const std::vector<double>& base, const std::vector<double>& current, bool higher_is_better,
            double threshold_pct, CellDelta& d) {
  const double b = median(base), c = median(current);
  d.change_pct = b != 0 ? (c - b) / b * 100 : 0;
  const double worse_pct = higher_is_better ? -d.change_pct : d.change_pct;
  if (mann_whitney_min_p(base.size(), current.size()) < kSignificance) {
    // Worse by more than the threshold: NEW against BASE moved the threshold's way, one-sided.
    const double t = threshold_pct / 100;
    auto scaled = [&](double f) {
      std::vector<double> out(base);
      for (auto& x : out) x *= f;
      return out;
    };
    const double p_worse = higher_is_better ? mann_whitney_p_less(current, scaled(1 - t))
                                            : mann_whitney_p_less(scaled(1 + t), current);
    const double p_better = higher_is_better ? mann_whitney_p_less(scaled(1 + t), current)
                                             : mann_whitney_p_less(current, scaled(1 - t));
    d.method = "mann-whitney";
    d.p_value = std::min(p_worse, p_better);
    if (p_worse < kSignificance)
      d.verdict = "regression";
    else if (p_better < kSignificance)
      d.verdict = "improvement";
    else
      d.verdict = std::abs(worse_pct) <= threshold_pct ? "same" : "noise";
    return;
  }
  if (std::abs(worse_pct) <= threshold_pct) {
    d.verdict = "same";
    return;
  }
  // Too few samples for the test: the runs' ranges must not overlap (with repetitions on
  // both sides; a single run each is taken as it is).
  d.method = "ranges";
  auto [bmin, bmax] = std::minmax_element(base.begin(), base.end());
  auto [nmin, nmax] = std::minmax_element(current.begin(), current.end());
  bool overlap = base.size() > 1 && current.size() > 1 && *nmin <= *bmax && *bmin <= *nmax;
  d.verdict = overlap ? "noise" : worse_pct > 0 ? "regression" : "improvement";
}

namespace {

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

}  // namespace

Comparison compare_results(const nlohmann::json& base, const nlohmann::json& current,
                           const CompareOptions& o) {
  const Metric& m = find_metric(o.metric);
  if (!(o.threshold_pct >= 0 && o.threshold_pct <= limits::kMaxThresholdPct))
    throw InputError("--threshold-pct",
                     "must be a number in [0, " + std::to_string(int(limits::kMaxThresholdPct)) + "]");
  auto b = cells_of(base, m, "BASE");
  auto n = cells_of(current, m, "NEW");
  check_comparable(base, current, b, n);
  Comparison out{o.metric, o.threshold_pct, {}, 0};
  for (auto& [key, bv] : b) {
    CellDelta d;
    d.key = key;
    d.base = bv.median();
    auto it = n.find(key);
    if (it == n.end()) {
      d.verdict = "missing";
    } else if (!it->second.ok) {
      d.verdict = "failed";
    } else if (!bv.ok) {
      d.current = it->second.median();
      d.verdict = "new";  // nothing to compare with
    } else {
      const auto& nv = it->second;
      d.current = nv.median();
      // Per-second samples when both runs have them, else the repetitions.
      const bool per_second = !bv.samples.empty() && !nv.samples.empty();
      decide(per_second ? bv.samples : bv.values, per_second ? nv.samples : nv.values, m.higher_is_better,
             o.threshold_pct, d);
      d.change_pct = d.base != 0 ? (d.current - d.base) / d.base * 100 : 0;  // as the medians show it
      const double worse_pct = m.higher_is_better ? -d.change_pct : d.change_pct;
      if (d.verdict == "same" && std::abs(worse_pct) > o.threshold_pct)
        d.verdict = "noise";  // the samples' medians moved less than the repetitions'
      else if (d.verdict == "noise" && std::abs(worse_pct) <= o.threshold_pct)
        d.verdict = "same";
    }
    if (d.verdict == "regression" || d.verdict == "failed" || d.verdict == "missing") ++out.regressions;
    out.cells.push_back(d);
  }
  for (auto& [key, nv] : n)
    if (!b.count(key)) out.cells.push_back({key, NAN, nv.median(), 0, "new", "", NAN});
  return out;
}

void write_comparison(std::ostream& out, const Comparison& c) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-28s %14s %14s %9s  %s\n", "cell", ("base " + c.metric).c_str(),
                ("new " + c.metric).c_str(), "change", "verdict");
  out << buf;
  for (auto& d : c.cells) {
    auto val = [](double v) {
      char b[32];
      if (std::isfinite(v))
        std::snprintf(b, sizeof b, "%.2f", v);
      else
        std::snprintf(b, sizeof b, "-");
      return std::string(b);
    };
    std::string change = "-";
    if (d.verdict != "missing" && d.verdict != "failed" && d.verdict != "new") {
      char b[32];
      std::snprintf(b, sizeof b, "%+.1f%%", d.change_pct);
      change = b;
    }
    std::snprintf(buf, sizeof buf, "%-28s %14s %14s %9s  %s\n", d.key.c_str(), val(d.base).c_str(),
                  d.verdict == "missing" || d.verdict == "failed" ? "-" : val(d.current).c_str(),
                  change.c_str(), d.verdict == "regression" ? "REGRESSION" : d.verdict.c_str());
    out << buf;
  }
  out << "\n"
      << c.regressions << " regression" << (c.regressions == 1 ? "" : "s") << " (metric " << c.metric
      << ", threshold " << c.threshold_pct
      << " %; a regression is a change beyond the threshold that a one-sided Mann-Whitney U test of the "
         "runs' "
         "samples shows at p < "
      << kSignificance << "; beyond it but not shown: noise)\n";
}

nlohmann::json to_json(const Comparison& c) {
  auto number = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  nlohmann::json cells = nlohmann::json::array();
  for (auto& d : c.cells)
    cells.push_back({{"key", d.key},
                     {"base", number(d.base)},
                     {"current", number(d.current)},
                     {"change_pct", number(d.change_pct)},
                     {"verdict", d.verdict},
                     {"method", d.method},
                     {"p_value", number(d.p_value)}});
  return {{"metric", c.metric},
          {"threshold_pct", c.threshold_pct},
          {"regressions", c.regressions},
          {"cells", cells}};
}

}  // namespace loadlab::controller
