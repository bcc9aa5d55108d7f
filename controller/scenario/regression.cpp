#include "scenario/regression.hpp"

#include <algorithm>

#include "loadlab/shared/input_error.hpp"
#include "loadlab/shared/limits.hpp"

namespace loadlab::controller {

const std::vector<std::string>& metric_names() {
  static const std::vector<std::string> names = {
      "qps",           "p50_ms",         "p90_ms",   "p99_ms",      "server_cpu_pct",
      "server_rss_kb", "client_cpu_pct", "capacity", "instructions"};
  return names;
}

void check_metric_name(const std::string& name, const std::string& where) {
  const auto& all = metric_names();
  if (std::find(all.begin(), all.end(), name) != all.end()) return;
  std::string allowed;
  for (const auto& m : all) allowed += (allowed.empty() ? "" : ", ") + m;
  throw InputError(where, "unknown metric \"" + name + "\"; allowed: " + allowed);
}

RegressionDef parse_regression(const ObjectReader& r) {
  r.allow({"metric", "threshold_pct", "false_alarm_pct", "baseline_nights", "min_nights",
           "accept_after_nights", "ab_last_good", "ab_estimate"});
  RegressionDef d;
  d.metric = r.string("metric", d.metric);
  check_metric_name(d.metric, r.path("metric"));
  d.threshold_pct = r.number("threshold_pct", 0, limits::kMaxThresholdPct, default_threshold_pct(d.metric));
  d.false_alarm_pct =
      r.number("false_alarm_pct", limits::kMinFalseAlarmPct, limits::kMaxFalseAlarmPct, d.false_alarm_pct);
  d.baseline_nights =
      static_cast<uint32_t>(r.integer("baseline_nights", 2, limits::kMaxBaselineNights, d.baseline_nights));
  d.min_nights = static_cast<uint32_t>(r.integer("min_nights", 2, limits::kMaxBaselineNights, d.min_nights));
  if (d.min_nights > d.baseline_nights)
    throw InputError(r.path("min_nights"), "must be at most baseline_nights (" +
                                               std::to_string(d.baseline_nights) + "), got " +
                                               std::to_string(d.min_nights));
  d.accept_after_nights = static_cast<uint32_t>(
      r.integer("accept_after_nights", 0, limits::kMaxBaselineNights, d.accept_after_nights));
  d.ab_last_good = r.string("ab_last_good", d.ab_last_good);
  if (d.ab_last_good != kAbLastGoodOff && d.ab_last_good != kAbLastGoodAuto &&
      d.ab_last_good != kAbLastGoodAll)
    throw InputError(r.path("ab_last_good"), std::string("must be \"") + kAbLastGoodOff + "\", \"" +
                                                 kAbLastGoodAuto + "\" or \"" + kAbLastGoodAll + "\", got " +
                                                 nlohmann::json(d.ab_last_good).dump());
  d.ab_estimate = r.string("ab_estimate", d.ab_estimate);
  if (d.ab_estimate != kAbEstimateMean && d.ab_estimate != kAbEstimateTrimmed)
    throw InputError(r.path("ab_estimate"), std::string("must be \"") + kAbEstimateMean + "\" or \"" +
                                                kAbEstimateTrimmed + "\", got " +
                                                nlohmann::json(d.ab_estimate).dump());
  return d;
}

double default_threshold_pct(const std::string& metric) {
  // Instruction counts do not move with the machine's noise: a change of 1 % is a change.
  return metric == "instructions" ? 1 : 5;
}

}  // namespace loadlab::controller
