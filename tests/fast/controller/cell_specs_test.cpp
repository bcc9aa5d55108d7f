#include "lab/cell_specs.hpp"

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

namespace loadlab::controller {
namespace {

// Every knob a cell takes from an axis reaches the spec its agent gets.
TEST(CellSpecs, EveryAxisReachesTheTargetAndLoadSpecs) {
  auto s =
      parse_scenario(nlohmann::json::parse(R"({"name": "s", "targets": [{"name": "b", "builtin": "hello"}],
      "matrix": {"body_size": [1024], "server_threads": [3], "keep_alive": [false], "rate": [500],
                 "client": ["wrk"], "connections": [12], "threads": [4], "delay_ms": [7]},
      "load": {"duration_s": 1}})"));
  auto cells = expand(s);
  ASSERT_EQ(cells.size(), 1u);
  const auto& c = cells[0];
  // parse_scenario of a nlohmann::json: the axes in key order (a file keeps its own order).
  EXPECT_EQ(c.key(), "b/b1024/wrk/c12/d7/ka0/r500/st3/t4");
  auto t = target_spec(s, c);
  EXPECT_EQ(t.delay_ms(), 7u);
  EXPECT_EQ(t.threads(), 3u);
  ASSERT_TRUE(t.has_body_size());
  EXPECT_EQ(t.body_size(), 1024u);
  auto shares = split_load(s, c, 2);
  ASSERT_EQ(shares.size(), 2u);
  EXPECT_EQ(shares[0].connections + shares[1].connections, 12u);
  auto l = load_spec(s, c, shares[0], "127.0.0.1:1");
  EXPECT_EQ(l.threads(), 2u);
  EXPECT_EQ(l.connections(), 6u);
  EXPECT_FALSE(l.keep_alive());
  EXPECT_DOUBLE_EQ(l.rate(), 250);  // the cell's rate, split by threads
  EXPECT_EQ(l.client(), "wrk");
}

TEST(CellSpecs, TheBuiltInClientIsTheEmptyName) {
  auto s = scenario(R"({"duration_s": 1})");
  auto c = expand(s)[0];
  EXPECT_EQ(c.client, "loadlab");
  EXPECT_EQ(load_spec(s, c, split_load(s, c, 1)[0], "127.0.0.1:1").client(), "");
  EXPECT_FALSE(target_spec(s, c).has_body_size());
}

}  // namespace
}  // namespace loadlab::controller
