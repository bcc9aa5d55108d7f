#include "results/result_merge.hpp"

#include <gtest/gtest.h>

#include <random>

#include "load_result_fixture.hpp"
#include "loadlab/shared/histogram.hpp"

namespace loadlab::controller {
namespace {

TEST(MergeLoadResults, CountsAndRatesAddAndPercentilesComeFromAllBuckets) {
  std::mt19937 rng(3);
  std::vector<int64_t> a, b, all;
  for (int i = 0; i < 5000; ++i) a.push_back(std::uniform_int_distribution<int64_t>(100, 1000)(rng));
  for (int i = 0; i < 5000; ++i) b.push_back(std::uniform_int_distribution<int64_t>(5000, 9000)(rng));
  all = a;
  all.insert(all.end(), b.begin(), b.end());
  Histogram truth;
  for (auto v : all) truth.record(v);
  auto m = merge_load_results({part(a, 1000), part(b, 250)});
  EXPECT_EQ(m.requests(), 10000u);
  EXPECT_DOUBLE_EQ(m.qps(), 1250);
  EXPECT_EQ(m.status().at(200), 10000u);
  EXPECT_EQ(m.latency().p50_us(), static_cast<double>(truth.value_at_percentile(50)));
  EXPECT_EQ(m.latency().p99_us(), static_cast<double>(truth.value_at_percentile(99)));
  EXPECT_EQ(m.latency().max_us(), static_cast<double>(truth.max()));
  EXPECT_EQ(m.latency().min_us(), static_cast<double>(truth.min()));
  EXPECT_NEAR(m.latency().mean_us(), truth.mean(), 1e-6);
  uint64_t in_buckets = 0;
  for (auto& b : m.histogram().buckets()) in_buckets += b.count();
  EXPECT_EQ(in_buckets, 10000u);
}

}  // namespace
}  // namespace loadlab::controller
