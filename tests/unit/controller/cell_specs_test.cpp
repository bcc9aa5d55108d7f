#include "loadlab/controller/cell_specs.hpp"

#include <gtest/gtest.h>

namespace loadlab::controller {
namespace {

Scenario scenario(const std::string& load) {
  return parse_scenario(nlohmann::json::parse(R"({"name": "s", "targets": [{"name": "b", "builtin": "hello"}],
      "matrix": {"delay_ms": [0], "threads": [5]}, "load": )" +
                                              load + "}"));
}

TEST(SplitLoad, ThreadsConnectionsAndTotalsSplitWithoutLoss) {
  auto s = scenario(R"({"total_requests": 1001, "connections_per_thread": 3})");
  auto cell = expand(s)[0];
  auto shares = split_load(s, cell, 2);
  ASSERT_EQ(shares.size(), 2u);
  EXPECT_EQ(shares[0].threads + shares[1].threads, 5u);
  EXPECT_EQ(shares[0].threads, 3u);
  EXPECT_EQ(shares[0].connections, 9u);
  EXPECT_EQ(*shares[0].total_requests + *shares[1].total_requests, 1001u);
  // Never more agents than threads.
  EXPECT_EQ(split_load(s, cell, 8).size(), 5u);
}

}  // namespace
}  // namespace loadlab::controller
