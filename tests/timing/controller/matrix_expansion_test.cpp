// The time a large matrix takes to check and expand: a bound far above any machine's noise,
// in the timing tier (it reads the clock).
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "scenario/plan.hpp"
#include "scenario/scenario.hpp"

namespace loadlab::controller {
namespace {

// A 5-axis scenario of 10 000 cells validates and expands in < 1 s (it takes a few ms).
TEST(Matrix, TenThousandCellsOfFiveAxesValidateAndExpandWellUnderASecond) {
  auto t0 = std::chrono::steady_clock::now();
  auto s = parse_scenario(nlohmann::json::parse(R"({"name": "big",
      "targets": [{"name": "a", "builtin": "hello"}, {"name": "b", "builtin": "hello"}],
      "matrix": {"delay_ms": [0, 1, 2, 3, 4, 5, 6, 7, 8, 10], "threads": [1, 2, 3, 4, 5, 6, 7, 8, 16, 32],
                 "connections_per_thread": [1, 2, 4, 8, 16], "body_size": [0, 64, 1024, 4096, 65536],
                 "keep_alive": [true, false]},
      "load": {"duration_s": 1}})"));
  auto cells = expand(s);
  auto elapsed = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(cells.size(), 10000u);
  EXPECT_LT(elapsed, std::chrono::seconds(1));
  std::set<std::string> keys;
  for (auto& c : cells) keys.insert(c.key());
  EXPECT_EQ(keys.size(), cells.size());
}

}  // namespace
}  // namespace loadlab::controller
