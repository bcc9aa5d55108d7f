#include "loadlab/shared/cpu_list.hpp"

#include <gtest/gtest.h>

namespace loadlab {
namespace {

TEST(CpuList, ParsesTheKernelsListFormat) {
  EXPECT_EQ(CpuList::parse("0")->cpus(), (std::vector<uint32_t>{0}));
  EXPECT_EQ(CpuList::parse("0-3,8,10-11\n")->cpus(), (std::vector<uint32_t>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(CpuList::parse("5,1,1,3")->to_string(), "1,3,5");
  EXPECT_EQ(CpuList::parse("0-2,3")->to_string(), "0-3");
  EXPECT_EQ(CpuList::parse("0,1")->to_string(), "0,1");
  for (const char* bad : {"", "-", "1-", "-1", "3-1", "a", "1,,2", "1 2", "4096", "0-99999"})
    EXPECT_FALSE(CpuList::parse(bad).has_value()) << bad;
}

TEST(CpuList, SetOperations) {
  auto a = *CpuList::parse("0-3"), b = *CpuList::parse("2,5");
  EXPECT_FALSE(b.subset_of(a));
  EXPECT_TRUE(CpuList::parse("1-2")->subset_of(a));
  EXPECT_TRUE(a.intersects(b));
  EXPECT_EQ(a.united(b).to_string(), "0-3,5");
  EXPECT_EQ(CpuList::first(3).to_string(), "0-2");
  EXPECT_TRUE(a.contains(3));
  EXPECT_FALSE(a.contains(5));
}

}  // namespace
}  // namespace loadlab
