#include "history/night_verdicts.hpp"

#include <algorithm>
#include <cmath>

namespace loadlab::controller {

VerdictOptions verdict_options(const RegressionDef& r, size_t cells) {
  VerdictOptions o;
  o.higher_is_better = metric_higher_is_better(r.metric);
  o.threshold_pct = r.threshold_pct;
  o.alpha = cell_alpha(r.false_alarm_pct, cells);
  o.baseline_nights = r.baseline_nights;
  o.min_nights = r.min_nights;
  o.accept_after_nights = r.accept_after_nights;
  o.host_insensitive = r.metric == "instructions";
  return o;
}

v1::CellVerdict cell_verdict(const std::string& key, size_t i, const std::vector<Night>& nights,
                             const std::vector<NightVerdict>& verdicts) {
  const NightVerdict& v = verdicts[i];
  v1::CellVerdict c;
  c.set_key(key);
  set_verdict(c, v.verdict);
  c.set_reason(v.reason);
  if (v.value && std::isfinite(*v.value)) c.set_value(*v.value);
  if (v.confirm_value && std::isfinite(*v.confirm_value)) c.set_confirm_value(*v.confirm_value);
  if (v.baseline) c.set_baseline(*v.baseline);
  if (v.change_pct) c.set_change_pct(*v.change_pct);
  if (v.band_low) c.set_band_low(*v.band_low);
  if (v.band_high) c.set_band_high(*v.band_high);
  if (v.mdc_pct) c.set_mdc_pct(*v.mdc_pct);
  c.set_nights(v.nights);
  c.set_suspect(v.suspect);
  c.set_disturbed(v.disturbed);
  for (size_t j : v.baseline_index) {
    auto* h = c.add_history();
    h->set_run_id(nights[j].run_id);
    h->set_started_at(nights[j].started_at);
    h->set_value(verdicts[j].band_value);
  }
  return c;
}

v1::Verdicts judge_run(const History& h, const std::string& scenario, int64_t run_id,
                       const std::vector<std::string>& keys, const RegressionDef& r) {
  v1::Verdicts out;
  out.set_method("history");
  out.set_baseline(h.path());
  out.set_metric(r.metric);
  out.set_threshold_pct(r.threshold_pct);
  out.set_false_alarm_pct(r.false_alarm_pct);
  const VerdictOptions o = verdict_options(r, keys.size());
  out.set_cell_level(o.alpha);
  const HistoryMetric& metric = history_metric(r.metric);
  for (auto& key : keys) {
    auto cn = h.nights(scenario, key, metric);
    auto at = std::find(cn.run_ids.begin(), cn.run_ids.end(), run_id);
    if (at == cn.run_ids.end()) continue;  // not stored: nothing to judge
    const size_t n = static_cast<size_t>(at - cn.run_ids.begin()) + 1;
    cn.nights.resize(n);  // the nights after this run do not exist for it
    auto verdicts = judge_series(cn.nights, o, cn.accepted);
    *out.add_cells() = cell_verdict(key, verdicts.size() - 1, cn.nights, verdicts);
    out.set_regressions(out.regressions() + (verdicts.back().verdict == Verdict::kRegression));
    out.set_failed(out.failed() + (verdicts.back().verdict == Verdict::kFailed));
  }
  return out;
}

}  // namespace loadlab::controller
