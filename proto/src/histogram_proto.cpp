#include "loadlab/proto/histogram_proto.hpp"

#include <stdexcept>

#include "loadlab/shared/input_error.hpp"

namespace loadlab::proto {

void to_proto(const Histogram& h, v1::Histogram* out) {
  out->Clear();
  out->set_highest_trackable(static_cast<uint64_t>(h.highest_trackable()));
  out->set_significant_digits(static_cast<uint32_t>(h.significant_digits()));
  for (auto& [index, count] : h.sparse()) {
    auto* b = out->add_buckets();
    b->set_index(index);
    b->set_count(count);
  }
}

void from_proto(const v1::Histogram& in, Histogram* out) {
  // The agent's histograms span 1 µs .. 60 s; a wider one from a peer is refused rather
  // than allocated.
  constexpr uint64_t kMaxHighest = uint64_t{1} << 40;
  if (in.highest_trackable() < 2 || in.highest_trackable() > kMaxHighest)
    throw InputError("histogram.highest_trackable",
                     "must be 2..2^40, got " + std::to_string(in.highest_trackable()));
  if (in.significant_digits() < 1 || in.significant_digits() > 5)
    throw InputError("histogram.significant_digits",
                     "must be 1..5, got " + std::to_string(in.significant_digits()));
  Histogram h(static_cast<int64_t>(in.highest_trackable()), static_cast<int>(in.significant_digits()));
  for (const auto& b : in.buckets())
    if (!h.add_bucket(b.index(), b.count()))
      throw InputError("histogram.buckets", "index " + std::to_string(b.index()) + " is out of range");
  *out = std::move(h);
}

void latency_of(const Histogram& h, v1::Latency* out) {
  auto pct = [&](double p) { return static_cast<double>(h.value_at_percentile(p)); };
  out->set_p50_us(pct(50));
  out->set_p90_us(pct(90));
  out->set_p99_us(pct(99));
  out->set_p999_us(pct(99.9));
  out->set_max_us(h.count() ? static_cast<double>(h.max()) : 0);
  out->set_mean_us(h.count() ? h.mean() : 0);
  out->set_min_us(h.count() ? static_cast<double>(h.min()) : 0);
}

}  // namespace loadlab::proto
