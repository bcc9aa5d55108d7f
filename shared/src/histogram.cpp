#include "loadlab/shared/histogram.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <new>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace loadlab {

// Layout: the first "bucket" covers [0, sub_bucket_count) with unit resolution; every
// following power-of-two range [2^k, 2^(k+1)) is split into sub_bucket_half slots of
// equal width. The index of a value is therefore its top bits: exponent and mantissa.

Histogram::Histogram(int64_t highest_trackable, int significant_digits)
    : highest_(highest_trackable), digits_(significant_digits) {
  if (significant_digits < 1 || significant_digits > 5)
    throw std::invalid_argument("histogram significant_digits must be 1..5");
  if (highest_trackable < 2) throw std::invalid_argument("histogram highest_trackable must be >= 2");
  int64_t largest_single_unit = 2;
  for (int i = 0; i < digits_; ++i) largest_single_unit *= 10;
  sub_bucket_bits_ = static_cast<int>(std::bit_width(static_cast<uint64_t>(largest_single_unit - 1)));
  sub_bucket_count_ = int64_t{1} << sub_bucket_bits_;
  sub_bucket_half_ = sub_bucket_count_ / 2;
  buckets_ = bucket_index(highest_) + 1;
  counts_ = zeroed(buckets_);
}

std::unique_ptr<uint64_t[], Histogram::Free> Histogram::zeroed(size_t buckets) {
  auto* p = static_cast<uint64_t*>(std::calloc(buckets, sizeof(uint64_t)));
  if (p == nullptr) throw std::bad_alloc();
  return std::unique_ptr<uint64_t[], Free>(p);
}

Histogram::Histogram(const Histogram& other)
    : highest_(other.highest_),
      digits_(other.digits_),
      sub_bucket_bits_(other.sub_bucket_bits_),
      sub_bucket_count_(other.sub_bucket_count_),
      sub_bucket_half_(other.sub_bucket_half_),
      buckets_(other.buckets_),
      counts_(zeroed(other.buckets_)),
      first_(other.first_),
      last_(other.last_),
      total_(other.total_),
      min_(other.min_),
      max_(other.max_),
      sum_(other.sum_) {
  if (!empty_range())
    std::memcpy(&counts_[first_], &other.counts_[first_], (last_ - first_ + 1) * sizeof(uint64_t));
}

Histogram& Histogram::operator=(const Histogram& other) {
  if (this != &other) *this = Histogram(other);
  return *this;
}

size_t Histogram::bucket_index(int64_t value) const {
  if (value < 0) value = 0;
  if (value < sub_bucket_count_) return static_cast<size_t>(value);
  // exponent k: value in [2^k, 2^(k+1)), k >= sub_bucket_bits
  int k = static_cast<int>(std::bit_width(static_cast<uint64_t>(value))) - 1;
  int shift = k - (sub_bucket_bits_ - 1);
  int64_t mantissa = (value >> shift) - sub_bucket_half_;  // 0 .. half-1
  return static_cast<size_t>(sub_bucket_count_ + (shift - 1) * sub_bucket_half_ + mantissa);
}

int64_t Histogram::lowest_equivalent(size_t index) const {
  auto i = static_cast<int64_t>(index);
  if (i < sub_bucket_count_) return i;
  int64_t shift = (i - sub_bucket_count_) / sub_bucket_half_ + 1;
  int64_t mantissa = (i - sub_bucket_count_) % sub_bucket_half_;
  return (sub_bucket_half_ + mantissa) << shift;
}

int64_t Histogram::highest_equivalent(size_t index) const {
  auto i = static_cast<int64_t>(index);
  if (i < sub_bucket_count_) return i;
  int64_t shift = (i - sub_bucket_count_) / sub_bucket_half_ + 1;
  return lowest_equivalent(index) + (int64_t{1} << shift) - 1;
}

void Histogram::record(int64_t value, int64_t count) {
  if (count <= 0) return;
  if (value < 0) value = 0;
  if (value > highest_) value = highest_;
  count_in(bucket_index(value), static_cast<uint64_t>(count));
  total_ += count;
  min_ = std::min(min_, value);
  max_ = std::max(max_, value);
  sum_ += static_cast<long double>(value) * count;
}

bool Histogram::merge(const Histogram& other) {
  if (other.highest_ != highest_ || other.digits_ != digits_) return false;
  if (!other.empty_range())
    for (size_t i = other.first_; i <= other.last_; ++i)
      if (other.counts_[i] != 0) count_in(i, other.counts_[i]);
  total_ += other.total_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
  sum_ += other.sum_;
  return true;
}

void Histogram::reset() {
  if (!empty_range()) std::memset(&counts_[first_], 0, (last_ - first_ + 1) * sizeof(uint64_t));
  first_ = SIZE_MAX;
  last_ = 0;
  total_ = 0;
  min_ = INT64_MAX;
  max_ = 0;
  sum_ = 0;
}

int64_t Histogram::min() const { return total_ == 0 ? 0 : min_; }
int64_t Histogram::max() const { return total_ == 0 ? 0 : max_; }
double Histogram::mean() const { return total_ == 0 ? 0.0 : static_cast<double>(sum_ / total_); }

int64_t Histogram::value_at_percentile(double p) const {
  if (total_ == 0) return 0;
  p = std::clamp(p, 0.0, 100.0);
  auto rank = static_cast<int64_t>(std::ceil(p / 100.0 * static_cast<double>(total_)));
  rank = std::max<int64_t>(rank, 1);
  int64_t seen = 0;
  for (size_t i = first_; i <= last_; ++i) {
    seen += static_cast<int64_t>(counts_[i]);
    if (seen >= rank) return std::min(highest_equivalent(i), max());
  }
  return max();
}

std::vector<std::pair<uint32_t, uint64_t>> Histogram::sparse() const {
  std::vector<std::pair<uint32_t, uint64_t>> out;
  if (empty_range()) return out;
  for (size_t i = first_; i <= last_; ++i)
    if (counts_[i] != 0) out.emplace_back(static_cast<uint32_t>(i), counts_[i]);
  return out;
}

bool Histogram::add_bucket(uint32_t index, uint64_t count) {
  if (index >= buckets_) return false;
  if (count == 0) return true;
  count_in(index, count);
  total_ += static_cast<int64_t>(count);
  // Bucket-level min/max/sum: exact to the bucket's resolution.
  min_ = std::min(min_, lowest_equivalent(index));
  max_ = std::max(max_, highest_equivalent(index));
  long double mid = (static_cast<long double>(lowest_equivalent(index)) + highest_equivalent(index)) / 2;
  sum_ += mid * count;
  return true;
}

nlohmann::json Histogram::to_json() const {
  nlohmann::json buckets = nlohmann::json::array();
  for (auto& [i, c] : sparse()) buckets.push_back({i, c});
  return {{"highest_trackable", highest_},
          {"significant_digits", digits_},
          {"count", total_},
          {"min", min()},
          {"max", max()},
          {"mean", mean()},
          {"buckets", buckets}};
}

Histogram Histogram::from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw std::invalid_argument("histogram: must be an object");
  auto get_int = [&](const char* key) -> int64_t {
    if (!j.contains(key) || !j[key].is_number_integer())
      throw std::invalid_argument(std::string("histogram/") + key + ": must be an integer");
    return j[key].get<int64_t>();
  };
  Histogram h(get_int("highest_trackable"), static_cast<int>(get_int("significant_digits")));
  if (!j.contains("buckets") || !j["buckets"].is_array())
    throw std::invalid_argument("histogram/buckets: must be an array");
  for (size_t n = 0; n < j["buckets"].size(); ++n) {
    const auto& b = j["buckets"][n];
    if (!b.is_array() || b.size() != 2 || !b[0].is_number_unsigned() || !b[1].is_number_unsigned() ||
        !h.add_bucket(b[0].get<uint32_t>(), b[1].get<uint64_t>()))
      throw std::invalid_argument("histogram/buckets/" + std::to_string(n) +
                                  ": must be [index, count] with index < " +
                                  std::to_string(h.bucket_count()));
  }
  // Exact extremes and mean when the sender gave them (bucket resolution otherwise).
  if (h.total_ > 0 && j.contains("min") && j.contains("max") && j.contains("mean") && j["min"].is_number() &&
      j["max"].is_number() && j["mean"].is_number()) {
    h.min_ = j["min"].get<int64_t>();
    h.max_ = j["max"].get<int64_t>();
    h.sum_ = static_cast<long double>(j["mean"].get<double>()) * h.total_;
  }
  return h;
}

}  // namespace loadlab
