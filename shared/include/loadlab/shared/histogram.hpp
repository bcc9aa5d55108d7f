#pragma once
// Log-linear (HDR-style) histogram of non-negative integer values, e.g. latency in µs.
//
// Values from 0 to `highest_trackable` are kept with `significant_digits` decimal digits of
// precision; larger values are clamped to the highest bucket. Buckets of two histograms
// with the same parameters add losslessly, so per-thread and per-agent histograms merge
// into exactly the histogram one stream would have produced. Not thread-safe: one per
// thread, merged at the end.
//
// The counters are allocated zeroed by calloc and only the buckets between the lowest and the
// highest one counted are ever written (copied, merged, cleared), so a histogram costs the
// pages its values fall in, not its whole range: a load worker keeps five per thread.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <utility>
#include <vector>

namespace loadlab {

class Histogram {
 public:
  // Default: 1 µs .. 60 s at 3 significant digits (~140 KiB of counters).
  explicit Histogram(int64_t highest_trackable = 60'000'000, int significant_digits = 3);
  Histogram(const Histogram& other);
  Histogram& operator=(const Histogram& other);
  // A moved-from histogram holds no counters: only assigning to it or destroying it is valid.
  Histogram(Histogram&&) noexcept = default;
  Histogram& operator=(Histogram&&) noexcept = default;

  void record(int64_t value, int64_t count = 1);
  // Adds `other`'s counts; both must have the same parameters (returns false otherwise).
  bool merge(const Histogram& other);
  void reset();

  int64_t count() const { return total_; }
  int64_t min() const;
  int64_t max() const;
  double mean() const;
  // Value at percentile p in [0, 100]: the highest value equivalent to the bucket that
  // holds the ceil(p/100 * count)-th recorded value. 0 when empty.
  int64_t value_at_percentile(double p) const;

  int64_t highest_trackable() const { return highest_; }
  int significant_digits() const { return digits_; }

  // Sparse form: (bucket index, count) for the non-empty buckets, ascending index.
  std::vector<std::pair<uint32_t, uint64_t>> sparse() const;
  // Adds counts by bucket index (the inverse of sparse()); false if an index is out of range.
  bool add_bucket(uint32_t index, uint64_t count);

  // {"highest_trackable":..,"significant_digits":..,"buckets":[[index,count],...]}
  nlohmann::json to_json() const;
  // Throws std::invalid_argument naming the problem on malformed input.
  [[nodiscard]] static Histogram from_json(const nlohmann::json& j);

  // Bucket geometry (public for tests).
  size_t bucket_index(int64_t value) const;
  int64_t lowest_equivalent(size_t index) const;
  int64_t highest_equivalent(size_t index) const;
  size_t bucket_count() const { return buckets_; }

 private:
  struct Free {
    void operator()(uint64_t* p) const noexcept { std::free(p); }
  };
  // Zeroed counters for every bucket.
  static std::unique_ptr<uint64_t[], Free> zeroed(size_t buckets);
  // Counts `count` more in bucket `index`.
  void count_in(size_t index, uint64_t count) {
    counts_[index] += count;
    first_ = index < first_ ? index : first_;
    last_ = index > last_ ? index : last_;
  }
  bool empty_range() const { return first_ > last_; }

  int64_t highest_;
  int digits_;
  int sub_bucket_bits_;       // log2(sub_bucket_count)
  int64_t sub_bucket_count_;  // power of two >= 2 * 10^digits
  int64_t sub_bucket_half_;
  size_t buckets_ = 0;
  std::unique_ptr<uint64_t[], Free> counts_;
  size_t first_ = SIZE_MAX, last_ = 0;  // every counted bucket is in [first_, last_]
  int64_t total_ = 0;
  int64_t min_ = INT64_MAX;
  int64_t max_ = 0;
  long double sum_ = 0;
};

}  // namespace loadlab
