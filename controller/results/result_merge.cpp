#include "results/result_merge.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "core/errors.hpp"
#include "loadlab/proto/histogram_proto.hpp"
#include "loadlab/shared/histogram.hpp"
#include "loadlab/shared/input_error.hpp"

namespace loadlab::controller {

namespace {
// Percentiles of the merged buckets of one histogram field of several results; their min,
// max and mean exact from the parts' own figures. The merged buckets go to `out`.
v1::Latency merged_latency(const std::vector<v1::LoadResult>& results,
                           const v1::Histogram& (v1::LoadResult::*hist)() const,
                           const v1::Latency& (v1::LoadResult::*lat)() const, v1::Histogram* out) {
  Histogram merged;
  double min_us = -1, max_us = 0, weighted_mean = 0;
  for (const auto& p : results) {
    const auto& ph = (p.*hist)();
    if (ph.highest_trackable() == 0) continue;
    Histogram h;
    try {
      proto::from_proto(ph, &h);
    } catch (const InputError& e) {
      throw CellError("measure", std::string("a load agent sent a broken histogram: ") + e.what());
    }
    if (!merged.merge(h))
      throw CellError("measure",
                      "a load agent's histogram has other parameters (an agent of another version?)");
    if (h.count() == 0) continue;
    const auto& l = (p.*lat)();
    min_us = min_us < 0 ? l.min_us() : std::min(min_us, l.min_us());
    max_us = std::max(max_us, l.max_us());
    weighted_mean += l.mean_us() * static_cast<double>(h.count());
  }
  v1::Latency out_latency;
  proto::latency_of(merged, &out_latency);
  if (merged.count() > 0) {
    // A percentile is its bucket's highest value, but never above the exact maximum.
    const double max_exact = std::floor(max_us);
    out_latency.set_p50_us(std::min(out_latency.p50_us(), max_exact));
    out_latency.set_p90_us(std::min(out_latency.p90_us(), max_exact));
    out_latency.set_p99_us(std::min(out_latency.p99_us(), max_exact));
    out_latency.set_p999_us(std::min(out_latency.p999_us(), max_exact));
    out_latency.set_min_us(std::floor(min_us));
    out_latency.set_max_us(max_exact);
    out_latency.set_mean_us(weighted_mean / static_cast<double>(merged.count()));
  }
  if (out) proto::to_proto(merged, out);
  return out_latency;
}
}  // namespace

namespace {
// Without histograms (external clients) percentiles cannot be merged: one agent's stand,
// several agents' are unavailable; mean, min and max still combine exactly.
v1::Latency latency_without_histograms(const std::vector<v1::LoadResult>& results,
                                       std::set<std::string>& unavailable) {
  if (results.size() == 1) return results[0].latency();
  v1::Latency l;
  double weighted = 0, n = 0, min_us = -1, max_us = 0;
  for (auto& p : results) {
    weighted += p.latency().mean_us() * static_cast<double>(p.requests());
    n += static_cast<double>(p.requests());
    min_us = min_us < 0 ? p.latency().min_us() : std::min(min_us, p.latency().min_us());
    max_us = std::max(max_us, p.latency().max_us());
  }
  l.set_mean_us(n > 0 ? weighted / n : 0);
  l.set_min_us(std::max(0.0, min_us));
  l.set_max_us(max_us);
  for (auto* f : {"latency.p50_us", "latency.p90_us", "latency.p99_us", "latency.p999_us"})
    unavailable.insert(f);
  return l;
}
}  // namespace

namespace {
// What the window served, when every part can say: an open loop that fell behind counts its
// completions as its qps (docs/load.md, "When the rate is not held"), the send slots' figure
// kept as slot_qps.
void count_window_completions(const std::vector<v1::LoadResult>& results, v1::Repetition& r) {
  uint64_t completions = 0;
  double rate = 0;
  for (const auto& p : results) {
    if (!p.has_window_completions()) return;
    completions += p.window_completions();
    rate += p.completion_rate();  // concurrent windows: rates add
  }
  if (results.empty()) return;
  r.set_window_completions(completions);
  r.set_completion_rate(rate);
  if (!r.rate_not_held()) return;
  r.set_slot_qps(r.qps());
  r.set_qps(rate);
}

// The parts' counts, rates and flags added up into `r`; the duration is the longest part's.
void add_up_counts(const std::vector<v1::LoadResult>& results, v1::Repetition& r) {
  uint64_t requests = 0, errors = 0, bytes_read = 0, connects = 0, tls_handshakes = 0, tls_resumed = 0,
           tls_early_data = 0;
  double duration_s = 0, qps = 0, rate = 0, achieved_rate = 0;
  bool rate_not_held = false, latency_corrected = false;
  for (const auto& p : results) {
    requests += p.requests();
    errors += p.errors();
    duration_s = std::max(duration_s, p.duration_s());
    qps += p.qps();  // concurrent windows: rates add
    for (auto& [code, n] : p.status()) (*r.mutable_status())[code] += n;
    for (auto& [kind, n] : p.error_kinds()) (*r.mutable_error_kinds())[kind] += n;
    bytes_read += p.bytes_read();
    rate += p.rate();
    achieved_rate += p.achieved_rate();
    rate_not_held = rate_not_held || p.rate_not_held();
    latency_corrected = latency_corrected || p.latency_corrected();
    connects += p.connects();
    tls_handshakes += p.tls_handshakes();
    tls_resumed += p.tls_resumed();
    tls_early_data += p.tls_early_data();
  }
  r.set_requests(requests);
  r.set_errors(errors);
  r.set_duration_s(duration_s);
  r.set_qps(qps);
  r.set_bytes_read(bytes_read);
  r.set_rate(rate);
  r.set_achieved_rate(achieved_rate);
  r.set_rate_not_held(rate_not_held);
  r.set_latency_corrected(latency_corrected);
  r.set_connects(connects);
  r.set_tls_handshakes(tls_handshakes);
  r.set_tls_resumed(tls_resumed);
  r.set_tls_early_data(tls_early_data);
  count_window_completions(results, r);
}

// Connect, handshake and first-byte times come as percentiles only: the part with the
// most of them stands for all.
void times_of_busiest_part(const std::vector<v1::LoadResult>& results, v1::Repetition& r) {
  auto with_most = [&](auto count, auto times, v1::Latency* into) {
    const v1::LoadResult* most = nullptr;
    for (const auto& p : results)
      if (!most || (p.*count)() > (most->*count)()) most = &p;
    if (most && (most->*count)() > 0 && (most->*times)().ByteSizeLong() > 0) *into = (most->*times)();
  };
  with_most(&v1::LoadResult::connects, &v1::LoadResult::connect, r.mutable_connect());
  with_most(&v1::LoadResult::tls_handshakes, &v1::LoadResult::tls_handshake, r.mutable_tls_handshake());
  with_most(&v1::LoadResult::responses, &v1::LoadResult::first_byte, r.mutable_first_byte());
}
}  // namespace

v1::Repetition merge_load_results(const std::vector<v1::LoadResult>& results) {
  v1::Repetition r;
  std::set<std::string> unavailable;
  bool histograms = false;
  for (const auto& p : results) {
    histograms = histograms || p.histogram().highest_trackable() != 0;
    unavailable.insert(p.unavailable().begin(), p.unavailable().end());
  }
  add_up_counts(results, r);
  if (histograms) {
    *r.mutable_latency() =
        merged_latency(results, &v1::LoadResult::histogram, &v1::LoadResult::latency, r.mutable_histogram());
    *r.mutable_latency_uncorrected() = merged_latency(results, &v1::LoadResult::histogram_uncorrected,
                                                      &v1::LoadResult::latency_uncorrected, nullptr);
  } else {
    *r.mutable_latency() = latency_without_histograms(results, unavailable);
  }
  for (auto& f : unavailable) r.add_unavailable(f);
  times_of_busiest_part(results, r);
  r.set_attempts(1);
  return r;
}

}  // namespace loadlab::controller
