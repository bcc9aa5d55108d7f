#include "loadlab/controller/result_merge.hpp"

#include <algorithm>

#include "loadlab/controller/errors.hpp"
#include "loadlab/shared/histogram.hpp"

namespace loadlab::controller {

namespace {
// Percentiles of the merged buckets of one histogram field of several results.
LatencyUs merged_latency(const std::vector<v1::LoadResult>& results,
                         const v1::Histogram& (v1::LoadResult::*hist)() const,
                         const v1::Latency& (v1::LoadResult::*lat)() const, nlohmann::json* out) {
  Histogram merged;
  double min_us = -1, max_us = 0, weighted_mean = 0;
  for (const auto& p : results) {
    const auto& ph = (p.*hist)();
    if (ph.highest_trackable() == 0) continue;
    Histogram h(static_cast<int64_t>(ph.highest_trackable()), static_cast<int>(ph.significant_digits()));
    for (auto& b : ph.buckets()) h.add_bucket(b.index(), b.count());
    if (!merged.merge(h))
      throw CellError("measure",
                      "a load agent's histogram has other parameters (an agent of another version?)");
    if (h.count() == 0) continue;
    const auto& l = (p.*lat)();
    min_us = min_us < 0 ? l.min_us() : std::min(min_us, l.min_us());
    max_us = std::max(max_us, l.max_us());
    weighted_mean += l.mean_us() * static_cast<double>(h.count());
  }
  auto j = merged.to_json();
  if (merged.count() > 0) {
    j["min"] = static_cast<int64_t>(min_us);
    j["max"] = static_cast<int64_t>(max_us);
    j["mean"] = weighted_mean / static_cast<double>(merged.count());
  }
  Histogram exact = Histogram::from_json(j);
  if (out) *out = j;
  auto pct = [&](double p) { return static_cast<double>(exact.value_at_percentile(p)); };
  return {pct(50),
          pct(90),
          pct(99),
          pct(99.9),
          static_cast<double>(exact.max()),
          exact.mean(),
          static_cast<double>(exact.min())};
}
}  // namespace

RepResult merge_load_results(const std::vector<v1::LoadResult>& results) {
  RepResult r;
  for (const auto& p : results) {
    r.requests += p.requests();
    r.errors += p.errors();
    r.duration_s = std::max(r.duration_s, p.duration_s());
    r.qps += p.qps();  // concurrent windows: rates add
    for (auto& [code, n] : p.status()) r.status[code] += n;
    for (auto& [kind, n] : p.error_kinds()) r.error_kinds[kind] += n;
    r.bytes_read += p.bytes_read();
    r.rate += p.rate();
    r.achieved_rate += p.achieved_rate();
    r.rate_not_held = r.rate_not_held || p.rate_not_held();
    r.latency_corrected = r.latency_corrected || p.latency_corrected();
    r.connects += p.connects();
  }
  r.latency_us = merged_latency(results, &v1::LoadResult::histogram, &v1::LoadResult::latency, &r.histogram);
  r.latency_uncorrected_us = merged_latency(results, &v1::LoadResult::histogram_uncorrected,
                                            &v1::LoadResult::latency_uncorrected, nullptr);
  // Connect times come as percentiles only: the part with the most connects stands for all.
  const v1::LoadResult* most = nullptr;
  for (const auto& p : results)
    if (!most || p.connects() > most->connects()) most = &p;
  if (most && most->connects() > 0) {
    const auto& c = most->connect();
    r.connect_us = {c.p50_us(), c.p90_us(), c.p99_us(), c.p999_us(), c.max_us(), c.mean_us(), c.min_us()};
  }
  return r;
}

UsageResult usage_from_proto(const v1::Usage& u) {
  UsageResult r;
  r.window_s = u.window_s();
  r.cpu_pct = u.cpu_pct();
  r.cpu_user_pct = u.cpu_user_pct();
  r.cpu_system_pct = u.cpu_system_pct();
  r.rss_kb_mean = u.rss_kb_mean();
  r.rss_kb_peak = u.rss_kb_peak();
  r.samples = u.samples();
  r.machine_cpu_pct = u.machine_cpu_pct();
  r.machine_cores = u.machine_cores();
  for (auto& p : u.series()) r.series.push_back({p.t_s(), p.cpu_pct(), p.rss_kb()});
  return r;
}

}  // namespace loadlab::controller
