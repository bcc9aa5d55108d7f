#pragma once
// The scenario's "regression" object: which figure a verdict judges and how strictly
// (docs/scenario.md, "regression"). The verdicts themselves are judge/'s.
#include <cstdint>
#include <string>
#include <vector>

#include "loadlab/shared/json_input.hpp"

namespace loadlab::controller {

struct RegressionDef {
  std::string metric = "qps";  // see metric_names()
  double threshold_pct = 5;    // a smaller change is never a regression
  // The share of nights of unchanged code allowed to alarm (exit 1), split over the run's cells.
  double false_alarm_pct = 1;
  uint32_t baseline_nights = 10;     // K: a cell's most recent earlier nights that make its band
  uint32_t min_nights = 5;           // fewer: inconclusive, unless beyond even their wide band
  uint32_t accept_after_nights = 0;  // N regressions in a row start a new level by themselves
  // With --baseline history and a target built from a commit: tonight's commit interleaved
  // against the last good night's, as an A/B (run/last_good_ab.hpp). kAbLastGood* below.
  std::string ab_last_good = "off";
  // How an A/B's pairs are summed up (judge/ab_verdicts.cpp): their 20 % trimmed mean and
  // Yuen's test ("trimmed"), which single pairs tens of % off (a host changing speed within a
  // pair) move far less, or the mean of their log ratios and the paired t test ("mean").
  std::string ab_estimate = "trimmed";
};

inline constexpr const char* kAbEstimateMean = "mean";
inline constexpr const char* kAbEstimateTrimmed = "trimmed";

inline constexpr const char* kAbLastGoodOff = "off";
inline constexpr const char* kAbLastGoodAuto = "auto";  // the cells the history cannot resolve
inline constexpr const char* kAbLastGoodAll = "all";

// The figures a verdict can judge: qps and capacity (a capacity search's; higher is better);
// p50_ms, p90_ms, p99_ms, server_cpu_pct, server_rss_kb, client_cpu_pct, instructions (lower
// is better). judge/compare.cpp reads each of them from a repetition.
const std::vector<std::string>& metric_names();
// InputError at `where` naming the allowed names, for a name not in metric_names().
void check_metric_name(const std::string& name, const std::string& where);
// Reads a "regression" object (the scenario's, or a result.json's copy of it). InputError
// naming the path of a bad value.
[[nodiscard]] RegressionDef parse_regression(const ObjectReader& r);
// regression.threshold_pct when a scenario gives none: 1 for `instructions`, else 5.
double default_threshold_pct(const std::string& metric);

}  // namespace loadlab::controller
