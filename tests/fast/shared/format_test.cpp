#include "loadlab/shared/format.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace loadlab {
namespace {

TEST(Format, NumbersAndUnitsAsPrintfWroteThem) {
  EXPECT_EQ(fixed_text(2.345, 1), "2.3");
  EXPECT_EQ(fixed_text(0.125, 2), "0.12");  // a tie rounds to even, as printf's "%.2f"
  EXPECT_EQ(fixed_text(-0.04, 1), "-0.0");
  EXPECT_EQ(fixed_text(58213.4, 0), "58213");
  EXPECT_EQ(fixed_text(NAN, 2), "nan");
  EXPECT_EQ(seconds_text(12.34), "12.3 s");
  EXPECT_EQ(rate_text(58213.5), "58214 req/s");
}

TEST(Format, PadsByBytes) {
  EXPECT_EQ(pad_right("ab", 4), "ab  ");
  EXPECT_EQ(pad_left("ab", 4), "  ab");
  EXPECT_EQ(pad_right("abcdef", 4), "abcdef");
  EXPECT_EQ(pad_left("1 – 2", 9), "  1 – 2");  // 7 bytes: "–" is 3
}

}  // namespace
}  // namespace loadlab
