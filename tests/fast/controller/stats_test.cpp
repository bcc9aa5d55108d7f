#include "core/stats.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace loadlab::controller {
namespace {

TEST(Stats, MedianOfOddAndEvenCounts) {
  EXPECT_EQ(median({3, 1, 2}), 2);
  EXPECT_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_FALSE(median({}));
}

}  // namespace
}  // namespace loadlab::controller
