#pragma once
// `loadlab compare BASE NEW`: per-cell deltas of one metric between two runs, with a
// verdict that accounts for the noise seen across repetitions.
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

struct CellDelta {
  std::string key;
  double base = 0, current = 0;  // medians over repetitions
  double change_pct = 0;         // (current - base) / base
  // "regression", "improvement", "same", "noise" (beyond the threshold, but the two runs'
  // repetition ranges overlap), "failed" (the cell failed in NEW), "missing" (not in NEW),
  // "new" (not in BASE).
  std::string verdict;
};

struct Comparison {
  std::string metric;
  double threshold_pct = 0;
  std::vector<CellDelta> cells;
  size_t regressions = 0;  // regression + failed + missing
};

// BASE and NEW are result.json documents. Throws loadlab::InputError for a bad metric or a
// document that is not a loadlab result.
Comparison compare_results(const nlohmann::json& base, const nlohmann::json& current,
                           const CompareOptions& o);

void write_comparison(std::ostream& out, const Comparison& c);

// The options a run's scenario asks for ("regression": {"metric", "threshold_pct"}).
CompareOptions options_from_result(const nlohmann::json& result);

}  // namespace loadlab::controller
