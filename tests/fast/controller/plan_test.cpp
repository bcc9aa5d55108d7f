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

// "ab"'s "cells": A runs only beside the cells of B named; B's others run alone.
TEST(Plan, AnAbsCellsAreTheOnlyCellsOfAThatRun) {
  auto j = nlohmann::json::parse(R"({
    "name": "m",
    "targets": [{"name": "a", "builtin": "hello"}, {"name": "b", "builtin": "hello"}],
    "matrix": {"delay_ms": [0, 5], "threads": [1, 4]},
    "load": {"duration_s": 1},
    "ab": {"a": "a", "b": "b", "cells": ["b/d5/t1", "b/d0/t4"]}})");
  std::vector<std::string> keys;
  for (auto& c : expand(parse_scenario(j))) {
    EXPECT_EQ(c.index, keys.size());
    keys.push_back(c.key());
  }
  EXPECT_EQ(keys,
            (std::vector<std::string>{"a/d0/t4", "a/d5/t1", "b/d0/t1", "b/d0/t4", "b/d5/t1", "b/d5/t4"}));
  j["ab"]["cells"] = {"a/d0/t1"};
  try {
    (void)parse_scenario(j);
    ADD_FAILURE() << "a cell of A accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.path(), "/ab/cells/0");
    EXPECT_NE(e.message().find("must be the key of a cell of target \"b\""), std::string::npos)
        << e.message();
  }
}

}  // namespace
}  // namespace loadlab::controller
