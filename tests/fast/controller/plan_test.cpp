#include "scenario/plan.hpp"

#include <gtest/gtest.h>

#include <set>

namespace loadlab::controller {
namespace {

Scenario two_targets() {
  return parse_scenario(nlohmann::json::parse(R"({
    "name": "m",
    "targets": [{"name": "a", "builtin": "hello"}, {"name": "b", "catalog": "go"}],
    "matrix": {"delay_ms": [0, 5, 10], "threads": [1, 5, 10, 20]},
    "load": {"duration_s": 1, "connections_per_thread": 3}})"));
}

TEST(Plan, ExpandsTargetsTimesDelaysTimesThreadsInOrder) {
  auto cells = expand(two_targets());
  ASSERT_EQ(cells.size(), 2u * 3u * 4u);
  EXPECT_EQ(cells[0].key(), "a/d0/t1");
  EXPECT_EQ(cells[1].key(), "a/d0/t5");
  EXPECT_EQ(cells[4].key(), "a/d5/t1");
  EXPECT_EQ(cells[12].key(), "b/d0/t1");
  EXPECT_EQ(cells[23].key(), "b/d10/t20");
  std::set<std::string> keys;
  for (size_t i = 0; i < cells.size(); ++i) {
    EXPECT_EQ(cells[i].index, i);
    keys.insert(cells[i].key());
  }
  EXPECT_EQ(keys.size(), cells.size());
}

TEST(Plan, ConnectionsAreThreadsTimesConnectionsPerThread) {
  auto cells = expand(two_targets());
  EXPECT_EQ(cells[3].threads, 20u);
  EXPECT_EQ(cells[3].connections, 60u);
  EXPECT_EQ(cells[12].target_index, 1u);
}

}  // namespace
}  // namespace loadlab::controller
