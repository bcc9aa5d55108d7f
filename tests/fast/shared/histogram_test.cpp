#include "loadlab/shared/histogram.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

namespace loadlab {
namespace {

// Exact percentile of a sorted sample by the same rank rule the histogram uses.
int64_t exact_percentile(const std::vector<int64_t>& sorted, double p) {
  auto rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::max<size_t>(rank, 1) - 1];
}

TEST(Histogram, DefaultFootprintCoversOneMicrosecondToSixtySeconds) {
  Histogram h;
  // ~140 KiB of 8-byte counters for 60 s at 3 digits.
  EXPECT_GT(h.bucket_count() * 8, 100u * 1024);
  EXPECT_LT(h.bucket_count() * 8, 160u * 1024);
  h.record(60'000'000);
  EXPECT_EQ(h.max(), 60'000'000);
}

TEST(Histogram, BucketBoundsHoldTheValueWithinOneThousandth) {
  Histogram h;
  for (int64_t v : {0L, 1L, 999L, 2047L, 2048L, 2049L, 4095L, 4096L, 123456L, 5'000'000L, 59'999'999L}) {
    auto i = h.bucket_index(v);
    EXPECT_LE(h.lowest_equivalent(i), v) << v;
    EXPECT_GE(h.highest_equivalent(i), v) << v;
    // Integer values: a bucket of width w reports a value at most w-1 away from the truth.
    double error = static_cast<double>(h.highest_equivalent(i) - h.lowest_equivalent(i));
    EXPECT_LE(error / std::max<double>(1.0, static_cast<double>(v)), 0.001) << v;
  }
}

TEST(Histogram, PercentilesWithinOneThousandthOfExact) {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> dist(7.0, 1.2);  // ~1 ms median, long tail
  std::vector<int64_t> values;
  Histogram h;
  for (int i = 0; i < 200000; ++i) {
    auto v = static_cast<int64_t>(dist(rng)) + 1;
    values.push_back(v);
    h.record(v);
  }
  std::sort(values.begin(), values.end());
  for (double p : {1.0, 50.0, 90.0, 99.0, 99.9, 99.99}) {
    double exact = static_cast<double>(exact_percentile(values, p));
    double got = static_cast<double>(h.value_at_percentile(p));
    EXPECT_LE(std::abs(got - exact) / exact, 0.001) << "p" << p << " exact " << exact << " got " << got;
  }
  EXPECT_EQ(h.value_at_percentile(100), values.back());
  EXPECT_EQ(h.min(), values.front());
  EXPECT_EQ(h.count(), 200000);
}

TEST(Histogram, MergingPartsEqualsRecordingOneStream) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> dist(1, 10'000'000);
  Histogram whole;
  std::vector<Histogram> parts(8);
  for (int i = 0; i < 80000; ++i) {
    auto v = dist(rng);
    whole.record(v);
    parts[i % 8].record(v);
  }
  Histogram merged;
  for (auto& p : parts) ASSERT_TRUE(merged.merge(p));
  EXPECT_EQ(merged.sparse(), whole.sparse());
  EXPECT_EQ(merged.count(), whole.count());
  EXPECT_EQ(merged.min(), whole.min());
  EXPECT_EQ(merged.max(), whole.max());
  EXPECT_DOUBLE_EQ(merged.mean(), whole.mean());
}

TEST(Histogram, MergeRefusesDifferentParameters) {
  Histogram a, b(1'000'000, 2);
  EXPECT_FALSE(a.merge(b));
}

TEST(Histogram, JsonRoundTripKeepsBucketsAndExtremes) {
  Histogram h;
  for (int64_t v = 1; v < 100000; v += 37) h.record(v);
  auto back = Histogram::from_json(nlohmann::json::parse(h.to_json().dump()));
  EXPECT_EQ(back.sparse(), h.sparse());
  EXPECT_EQ(back.count(), h.count());
  EXPECT_EQ(back.min(), h.min());
  EXPECT_EQ(back.max(), h.max());
  EXPECT_NEAR(back.mean(), h.mean(), 1e-6);
  EXPECT_EQ(back.value_at_percentile(99), h.value_at_percentile(99));
}

TEST(Histogram, FromJsonRejectsOutOfRangeBucket) {
  auto j = Histogram().to_json();
  j["buckets"] = {{999999, 1}};
  EXPECT_THROW(Histogram::from_json(j), std::invalid_argument);
}

}  // namespace
}  // namespace loadlab
