#pragma once
// `loadlab compare BASE NEW`: per-cell deltas of one metric between two runs, each with a
// verdict from a stated test (docs/nightly.md, "Verdicts"): a regression is NEW worse than
// BASE by more than the threshold, shown by a one-sided Mann-Whitney U test at level 0.01
// of NEW's samples against BASE's moved by the threshold (an improvement likewise); a
// change within the threshold is "same", one beyond it that the test does not show "noise".
// QPS samples are the measured windows' per-second figures of every repetition; other
// metrics' are the repetitions, and where there are too few of them for the test to ever
// reach 0.01, a change beyond the threshold counts when the runs' ranges do not overlap.
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

namespace loadlab::controller {

struct CompareOptions {
  std::string metric = "qps";  // see metric_names()
  double threshold_pct = 5;    // a change smaller than this is "same"
};

// qps (higher is better); p50_ms, p90_ms, p99_ms, server_cpu_pct, server_rss_kb,
// client_cpu_pct (lower is better).
const std::vector<std::string>& metric_names();
// Whether a larger value of the metric is better; InputError naming --metric and the
// allowed names for an unknown one.
bool metric_higher_is_better(const std::string& name);

struct CellDelta {
  std::string key;
  double base = 0, current = 0;  // medians over repetitions
  double change_pct = 0;         // (current - base) / base
  // "regression", "improvement", "same", "noise" (beyond the threshold, but not shown by
  // the test), "failed" (the cell failed in NEW), "missing" (not in NEW), "new" (not in
  // BASE).
  std::string verdict;
  std::string method;  // "mann-whitney" (with `p_value`) or "ranges"; "" when not tested
  double p_value = NAN;
};

inline constexpr double kSignificance = 0.01;  // the test's level, one-sided

// The verdict on one cell from its two runs' samples: `change_pct` of the medians, a
// `higher_is_better` metric's drop (or another's rise) beyond `threshold_pct` is a
// regression when the test shows it. Fills verdict, method, p_value and change_pct.
void decide(const std::vector<double>& base, const std::vector<double>& current, bool higher_is_better,
            double threshold_pct, CellDelta& d);

struct Comparison {
  std::string metric;
  double threshold_pct = 0;
  std::vector<CellDelta> cells;
  size_t regressions = 0;  // regression + failed + missing
};

// BASE and NEW are result.json documents. Throws loadlab::InputError for a bad metric, a
// document that is not a loadlab result, or two runs that cannot be compared (other
// scenarios, or matrices of other axes), with the reason.
Comparison compare_results(const nlohmann::json& base, const nlohmann::json& current,
                           const CompareOptions& o);

void write_comparison(std::ostream& out, const Comparison& c);
// The comparison as result.json keeps it ("comparison": metric, threshold_pct, regressions,
// cells: key, base, current, change_pct, verdict, method, p_value).
nlohmann::json to_json(const Comparison& c);

// The options a run's scenario asks for ("regression": {"metric", "threshold_pct"}); the
// defaults when it asks for none. InputError naming the path of a value of the wrong type.
CompareOptions options_from_result(const nlohmann::json& result);

}  // namespace loadlab::controller
