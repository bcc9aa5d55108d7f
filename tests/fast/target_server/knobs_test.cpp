// Parsing of the knob syntax shared by flags and x-loadlab-* headers, and delay sampling.
#include "knobs.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace loadlab::target {
namespace {

TEST(TargetKnobs, ParsesTheThreeDelayForms) {
  auto fixed = parse_delay("0.5");
  ASSERT_TRUE(fixed);
  EXPECT_EQ(fixed->kind, DelaySpec::Kind::fixed);
  EXPECT_DOUBLE_EQ(fixed->a_ms, 0.5);
  auto uniform = parse_delay("uniform:1-2.5");
  ASSERT_TRUE(uniform);
  EXPECT_EQ(uniform->kind, DelaySpec::Kind::uniform);
  EXPECT_DOUBLE_EQ(uniform->a_ms, 1);
  EXPECT_DOUBLE_EQ(uniform->b_ms, 2.5);
  auto exp = parse_delay("exp:10");
  ASSERT_TRUE(exp);
  EXPECT_EQ(exp->kind, DelaySpec::Kind::exponential);
  EXPECT_DOUBLE_EQ(exp->a_ms, 10);
  EXPECT_TRUE(parse_delay("0")->zero());
  EXPECT_TRUE(parse_delay("60000"));
}

TEST(TargetKnobs, RejectsBadDelays) {
  for (const char* bad : {"", "-1", "5ms", "60000.5", "nan", "inf", "1e3", "uniform:", "uniform:5",
                          "uniform:5-1", "uniform:1-x", "exp:", "exp:-2", "exp:70000", "gauss:1", " 1"}) {
    EXPECT_FALSE(parse_delay(bad)) << bad;
  }
}

TEST(TargetKnobs, ParsesBoundedIntegers) {
  EXPECT_EQ(parse_uint("200", 200, 599), 200u);
  EXPECT_EQ(parse_uint("599", 200, 599), 599u);
  EXPECT_FALSE(parse_uint("600", 200, 599));
  EXPECT_FALSE(parse_uint("199", 200, 599));
  EXPECT_FALSE(parse_uint("-1", 0, 10));
  EXPECT_FALSE(parse_uint("1.5", 0, 10));
  EXPECT_FALSE(parse_uint("", 0, 10));
  EXPECT_FALSE(parse_uint("99999999999999999999999", 0, 10));
}

TEST(TargetKnobs, SamplesStayInTheirRangeAndExpHasItsMean) {
  Random random(42);
  auto uniform = *parse_delay("uniform:2-4");
  double lo = 1e9, hi = 0;
  for (int i = 0; i < 10000; ++i) {
    double ms = std::chrono::duration<double, std::milli>(sample_delay(uniform, random)).count();
    lo = std::min(lo, ms);
    hi = std::max(hi, ms);
  }
  EXPECT_GE(lo, 2.0);
  EXPECT_LT(hi, 4.0);
  EXPECT_LT(lo, 2.05);
  EXPECT_GT(hi, 3.95);
  auto exp = *parse_delay("exp:5");
  double sum = 0;
  for (int i = 0; i < 100000; ++i)
    sum += std::chrono::duration<double, std::milli>(sample_delay(exp, random)).count();
  EXPECT_NEAR(sum / 100000, 5.0, 0.1);
}

TEST(TargetKnobs, HeadersApplyCaseInsensitivelyAndNameTheBadOne) {
  RequestKnobs knobs;
  EXPECT_FALSE(knobs.apply("x-other", "1"));
  EXPECT_TRUE(knobs.apply("X-LoadLab-Status", "503"));
  EXPECT_TRUE(knobs.apply("x-loadlab-body-size", "10"));
  EXPECT_TRUE(knobs.apply("x-loadlab-work-us", "7"));
  EXPECT_TRUE(knobs.apply("x-loadlab-delay-ms", "exp:3"));
  EXPECT_EQ(knobs.status, 503u);
  EXPECT_EQ(knobs.body_size, 10u);
  EXPECT_EQ(knobs.work, std::chrono::microseconds(7));
  EXPECT_TRUE(knobs.delay);
  EXPECT_TRUE(knobs.error.empty());
  EXPECT_TRUE(knobs.apply("x-loadlab-status", "99"));
  EXPECT_EQ(knobs.error, "x-loadlab-status: expected an integer in 200..599, got '99'");
}

}  // namespace
}  // namespace loadlab::target
