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

// An open loop that fell behind on one load agent: the repetition's qps is what the windows
// served (their completions' rates add), the send slots' figure kept beside it.
TEST(MergeLoadResults, AnOpenLoopThatFellBehindCountsWhatItsWindowsServed) {
  v1::LoadResult held = part({100}, 1000), behind = part({100}, 400);
  for (auto* p : {&held, &behind}) p->set_rate(1000);
  held.set_window_completions(2002);
  held.set_completion_rate(1001);
  behind.set_window_completions(1400);
  behind.set_completion_rate(700);  // its backlog's completions beside its slots' 400 a second
  behind.set_rate_not_held(true);
  const v1::Repetition r = merge_load_results({held, behind});
  EXPECT_EQ(r.window_completions(), 3402u);
  EXPECT_DOUBLE_EQ(r.completion_rate(), 1701);
  EXPECT_DOUBLE_EQ(r.qps(), 1701);
  ASSERT_TRUE(r.has_slot_qps());
  EXPECT_DOUBLE_EQ(r.slot_qps(), 1400);
  // Held: the qps stays the slots' own; the completions are reported beside it.
  const v1::Repetition both = merge_load_results({held, held});
  EXPECT_DOUBLE_EQ(both.qps(), 2000);
  EXPECT_DOUBLE_EQ(both.completion_rate(), 2002);
  EXPECT_FALSE(both.has_slot_qps());
  // A part that cannot say (an external client): no completions, the qps as counted.
  v1::LoadResult external = part({100}, 400);
  external.set_rate_not_held(true);
  const v1::Repetition mixed = merge_load_results({held, external});
  EXPECT_FALSE(mixed.has_window_completions());
  EXPECT_DOUBLE_EQ(mixed.qps(), 1400);
  EXPECT_FALSE(mixed.has_slot_qps());
}

}  // namespace
}  // namespace loadlab::controller
