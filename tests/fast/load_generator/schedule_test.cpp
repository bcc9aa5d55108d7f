// The open-loop schedule, the request CSV and the progress line, without the network.
#include "schedule.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <vector>

#include "progress_line.hpp"
#include "request_log.hpp"

namespace loadlab::load {
namespace {

using namespace std::chrono_literals;

TEST(ScheduleTest, SlotsAreEvenlySpaced) {
  Clock::time_point start{};
  Schedule s(start, 1000.0);  // a slot every 1 ms
  EXPECT_FALSE(s.poisson());
  EXPECT_EQ(s.slot_time(0), start);
  EXPECT_EQ(s.slot_time(1), start + 1ms);
  EXPECT_EQ(s.slot_time(2500), start + 2500ms);
  EXPECT_EQ(s.time_of(0), start);
  EXPECT_EQ(s.time_of(9), start + 9ms);
}

TEST(ScheduleTest, FractionalRatesDoNotDrift) {
  Clock::time_point start{};
  Schedule s(start, 3.0);  // 333.33.. ms apart
  // An hour of slots lands on the exact hour: times are computed, not accumulated.
  EXPECT_EQ(s.slot_time(3 * 3600), start + 3600s);
}

TEST(ScheduleTest, SlotsInAWindowAreCountedExactly) {
  Clock::time_point start{};
  Schedule s(start, 1000.0);
  EXPECT_EQ(s.first_slot_at(start), 0);
  EXPECT_EQ(s.first_slot_at(start + 1ms), 1);
  EXPECT_EQ(s.first_slot_at(start + 1ms + 1ns), 2);
  EXPECT_EQ(s.slots_between(start, start + 1s), 1000);
  EXPECT_EQ(s.slots_between(start + 500us, start + 1s + 500us), 1000);
  EXPECT_EQ(s.slots_between(start + 1s, start), 0);
  Schedule third(start, 3.0);
  EXPECT_EQ(third.slots_between(start, start + 1s), 3);  // 0, 333.3, 666.7 ms
}

TEST(ScheduleTest, TimesStayFiniteAtTheSlowestRateAndLargestSlot) {
  Clock::time_point start{};
  Schedule s(start, 0.001);  // a slot every 1000 s
  auto far = s.slot_time(int64_t{1} << 40);
  EXPECT_GT(far, start);
  EXPECT_LE(far - start, std::chrono::nanoseconds(static_cast<int64_t>(Schedule::kHorizonNs)));
  EXPECT_GT(s.first_slot_at(start + std::chrono::hours(24 * 365 * 40)), 0);  // beyond the horizon, no loop
}

// Every send time of a Poisson schedule before `end`, in order.
std::vector<double> poisson_times_s(const Schedule& s, Clock::time_point start, Clock::time_point end) {
  std::vector<double> t;
  for (int64_t m = 0;; ++m) {
    auto at = s.time_of(m);
    if (at >= end) break;
    t.push_back(std::chrono::duration<double>(at - start).count());
  }
  return t;
}

// The send times of Poisson arrivals are a Poisson process of the asked rate: their
// count in a window is the rate's (within 4 standard deviations: sqrt(n)), and their gaps are
// exponential (a Kolmogorov-Smirnov distance inside the 0.1 % critical value, 1.95 / sqrt(n)),
// whose coefficient of variation is 1 (an even pace has 0).
TEST(ScheduleTest, PoissonArrivalsAreAPoissonProcessOfTheRate) {
  const Clock::time_point start{};
  const double rate = 20000;
  Schedule s(start, rate, 1, 0);
  ASSERT_TRUE(s.poisson());
  auto t = poisson_times_s(s, start, start + 10s);
  ASSERT_TRUE(std::is_sorted(t.begin(), t.end()));
  const double n = static_cast<double>(t.size());
  EXPECT_NEAR(n, rate * 10, 4 * std::sqrt(rate * 10));
  std::vector<double> gaps;
  for (size_t i = 1; i < t.size(); ++i) gaps.push_back(t[i] - t[i - 1]);
  std::sort(gaps.begin(), gaps.end());
  double ks = 0, sum = 0, sum2 = 0;
  for (size_t i = 0; i < gaps.size(); ++i) {
    const double f = 1 - std::exp(-rate * gaps[i]);
    ks = std::max({ks, std::abs(f - static_cast<double>(i) / gaps.size()),
                   std::abs(f - static_cast<double>(i + 1) / gaps.size())});
    sum += gaps[i];
    sum2 += gaps[i] * gaps[i];
  }
  EXPECT_LT(ks, 1.95 / std::sqrt(static_cast<double>(gaps.size())));
  const double mean = sum / gaps.size();
  const double cv = std::sqrt(sum2 / gaps.size() - mean * mean) / mean;
  EXPECT_NEAR(cv, 1.0, 0.02);
  EXPECT_NEAR(mean, 1 / rate, 0.02 / rate);
  // The counts the rate check uses are the times' own.
  EXPECT_EQ(s.slots_between(start + 2s, start + 7s),
            std::count_if(t.begin(), t.end(), [](double x) { return x >= 2 && x < 7; }));
}

TEST(ScheduleTest, PoissonArrivalsRepeatForASeedAndDifferForAnotherOrAnotherThread) {
  const Clock::time_point start{};
  Schedule a(start, 1000, 42, 0), again(start, 1000, 42, 0), other_seed(start, 1000, 43, 0),
      other_thread(start, 1000, 42, 1);
  int same_seed_differs = 0, seed_differs = 0, thread_differs = 0;
  for (int64_t m = 0; m < 300; ++m) {
    same_seed_differs += a.time_of(m) != again.time_of(m);
    seed_differs += a.time_of(m) != other_seed.time_of(m);
    thread_differs += a.time_of(m) != other_thread.time_of(m);
  }
  EXPECT_EQ(same_seed_differs, 0);
  EXPECT_EQ(seed_differs, 300);
  EXPECT_EQ(thread_differs, 300);
  // Asking again, or going back, gives the same time.
  const auto fifth = a.time_of(5);
  EXPECT_EQ(a.time_of(5), fifth);
  EXPECT_EQ(a.time_of(2), again.time_of(2));
  EXPECT_EQ(a.time_of(5), fifth);
  // In increasing time.
  for (int64_t m = 1; m < 300; ++m) EXPECT_GT(a.time_of(m), a.time_of(m - 1));
}

TEST(ScheduleTest, PoissonTimesStayFiniteAtTheSlowestRate) {
  Clock::time_point start{};
  Schedule s(start, 0.001, 7, 0);
  auto far = s.time_of(2000000);  // 2e9 s of mean gaps: past the horizon
  EXPECT_GT(far, start);
  EXPECT_LE(far - start, std::chrono::nanoseconds(static_cast<int64_t>(Schedule::kHorizonNs)));
}

RequestRecord record(int64_t start, uint32_t total, int status, uint64_t bytes, uint32_t connect = 0,
                     uint32_t tls = 0, uint32_t first_byte = 0, bool reused = false, bool resumed = false) {
  RequestRecord r{};
  r.start_offset_us = start;
  r.total_us = total;
  r.connect_us = connect;
  r.tls_us = tls;
  r.first_byte_us = first_byte;
  r.bytes = bytes;
  r.status = status;
  r.reused = reused;
  r.resumed = resumed;
  return r;
}

TEST(RequestLogTest, WritesOneRowPerRecordMergedInStartOrder) {
  RequestLog a{record(0, 50, 200, 100, 30, 400, 20), record(300, 40, 200, 100, 0, 0, 35, true),
               record(200, 7, 0, 0)};
  RequestLog b{record(100, 60, 404, 120, 31, 380, 50, false, true), record(400, 10, 200, 100, 0, 0, 9, true)};
  std::string path = ::testing::TempDir() + "/requests.csv";
  std::string error;
  ASSERT_TRUE(write_request_csv(path, {&a, &b}, {"http/1.1", "1.3"}, &error)) << error;
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(),
            "protocol,tls_version,iteration,start_offset_us,total_us,connect_us,tls_us,first_byte_us,bytes,"
            "status,reused,resumed\n"
            "http/1.1,1.3,0,0,50,30,400,20,100,200,0,0\n"
            "http/1.1,1.3,1,100,60,31,380,50,120,404,0,1\n"
            "http/1.1,1.3,2,200,7,0,0,0,0,0,0,0\n"
            "http/1.1,1.3,3,300,40,0,0,35,100,200,1,0\n"
            "http/1.1,1.3,4,400,10,0,0,9,100,200,1,0\n");
}

TEST(RequestLogTest, PlainHttpHasAnEmptyTlsVersion) {
  RequestLog a{record(5, 9, 200, 3)};
  std::string path = ::testing::TempDir() + "/requests_plain.csv";
  std::string error;
  ASSERT_TRUE(write_request_csv(path, {&a}, {}, &error)) << error;
  std::ifstream in(path);
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  EXPECT_EQ(row, "http/1.1,,0,5,9,0,0,0,3,200,0,0");
}

TEST(RequestLogTest, UnwritablePathIsAnErrorNamingTheFlag) {
  RequestLog a{record(0, 1, 200, 1)};
  std::string error;
  EXPECT_FALSE(write_request_csv("/nonexistent-dir/x.csv", {&a}, {}, &error));
  EXPECT_NE(error.find("--csv-requests"), std::string::npos) << error;
}

TEST(ProgressLineTest, Format) {
  EXPECT_EQ(group_thousands(0), "0");
  EXPECT_EQ(group_thousands(999), "999");
  EXPECT_EQ(group_thousands(58213), "58 213");
  EXPECT_EQ(group_thousands(1234567), "1 234 567");
  Progress p;
  p.elapsed_s = 3.04;
  p.qps = 58213.4;
  p.errors = 0;
  EXPECT_EQ(format_progress_line(p), "\r  3.0 s  58 213 req/s  errors 0\x1b[K");
  p.warmup = true;
  EXPECT_EQ(format_progress_line(p), "\r  3.0 s  warm-up  58 213 req/s  errors 0\x1b[K");
}

}  // namespace
}  // namespace loadlab::load
