// The tools' number formats, including what must be refused.
#include "units.hpp"

#include <gtest/gtest.h>

namespace loadlab::clients {
namespace {

TEST(Units, DurationsInEveryUnitTheToolsPrint) {
  EXPECT_DOUBLE_EQ(*duration_us("426us"), 426);
  EXPECT_DOUBLE_EQ(*duration_us("476.08us"), 476.08);
  EXPECT_DOUBLE_EQ(*duration_us("1.44ms"), 1440);
  EXPECT_DOUBLE_EQ(*duration_us("3.00s"), 3e6);
  EXPECT_DOUBLE_EQ(*duration_us("2.00m"), 120e6);
  EXPECT_DOUBLE_EQ(*duration_us("1h"), 3600e6);
  EXPECT_DOUBLE_EQ(*duration_us(" 0us "), 0);
}

TEST(Units, DurationsRefuseWhatIsNotOne) {
  for (const char* bad : {"", "ms", "1.2", "1.2 ms", "1.2sec", "-1ms", "nanus", "1.2.3ms", "1e3us"})
    EXPECT_FALSE(duration_us(bad)) << bad;
}

TEST(Units, BinaryBytesAre1024Based) {
  EXPECT_EQ(*binary_bytes("216.00B"), 216u);
  EXPECT_EQ(*binary_bytes("183.80KB"), 188211u);  // 183.80 × 1024 = 188211.2
  EXPECT_EQ(*binary_bytes("3.10MB"), 3250586u);   // 3.10 × 1024² = 3250585.6
  EXPECT_EQ(*binary_bytes("1.00GB"), 1073741824u);
  EXPECT_FALSE(binary_bytes("12kB"));
  EXPECT_FALSE(binary_bytes("12"));
  EXPECT_FALSE(binary_bytes("KB"));
}

TEST(Units, NumbersAndCounts) {
  EXPECT_DOUBLE_EQ(*number("3553.72"), 3553.72);
  EXPECT_DOUBLE_EQ(*number("0.0012"), 0.0012);
  EXPECT_FALSE(number("NaN"));
  EXPECT_FALSE(number("12x"));
  EXPECT_EQ(*count("7115"), 7115u);
  EXPECT_FALSE(count("-1"));
  EXPECT_FALSE(count("1.5"));
  EXPECT_FALSE(count(""));
}

}  // namespace
}  // namespace loadlab::clients
