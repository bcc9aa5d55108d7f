#include "loadlab/controller/compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "loadlab/proto/json.hpp"
#include "loadlab/shared/json_input.hpp"
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
  throw InputError("", "--metric: unknown metric \"" + name + "\"; allowed: " + all);
}

struct CellValues {
  bool ok = false;
  std::vector<double> values;  // one per repetition
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
    }
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

CompareOptions options_from_result(const nlohmann::json& result) {
  CompareOptions o;
  if (result.contains("scenario") && result["scenario"].contains("regression")) {
    const auto& r = result["scenario"]["regression"];
    o.metric = r.value("metric", o.metric);
    o.threshold_pct = r.value("threshold_pct", o.threshold_pct);
  }
  return o;
}

Comparison compare_results(const nlohmann::json& base, const nlohmann::json& current,
                           const CompareOptions& o) {
  const Metric& m = find_metric(o.metric);
  if (!(o.threshold_pct >= 0 && o.threshold_pct <= 1000))
    throw InputError("", "--threshold-pct: must be a number in [0, 1000]");
  auto b = cells_of(base, m, "BASE");
  auto n = cells_of(current, m, "NEW");
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
      d.change_pct = d.base != 0 ? (d.current - d.base) / d.base * 100 : 0;
      double worse_pct = m.higher_is_better ? -d.change_pct : d.change_pct;
      // With repetitions on both sides, a change whose ranges still overlap is noise.
      auto [bmin, bmax] = std::minmax_element(bv.values.begin(), bv.values.end());
      auto [nmin, nmax] = std::minmax_element(nv.values.begin(), nv.values.end());
      bool overlap = bv.values.size() > 1 && nv.values.size() > 1 && *nmin <= *bmax && *bmin <= *nmax;
      if (std::abs(worse_pct) <= o.threshold_pct)
        d.verdict = "same";
      else if (overlap)
        d.verdict = "noise";
      else
        d.verdict = worse_pct > 0 ? "regression" : "improvement";
    }
    if (d.verdict == "regression" || d.verdict == "failed" || d.verdict == "missing") ++out.regressions;
    out.cells.push_back(d);
  }
  for (auto& [key, nv] : n)
    if (!b.count(key)) out.cells.push_back({key, NAN, nv.median(), 0, "new"});
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
      << ", threshold " << c.threshold_pct << " %; changes whose repetition ranges overlap are noise)\n";
}

}  // namespace loadlab::controller
