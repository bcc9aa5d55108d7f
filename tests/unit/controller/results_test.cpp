#include "loadlab/controller/results.hpp"

#include <gtest/gtest.h>

#include "load_result_fixture.hpp"
#include "loadlab/controller/result_merge.hpp"

namespace loadlab::controller {
namespace {

TEST(Results, ACellSurvivesTheJournalRoundTrip) {
  CellResult c;
  c.cell.target = "b";
  c.cell.delay_ms = 5;
  RepResult r = merge_load_results({part({100, 200, 300}, 3)});
  r.server.cpu_pct = 12.5;
  r.server.series = {{0.1, 10, 1000}, {0.2, 15, 1100}};
  r.parts.push_back({"cli", 2, 4, 3, 0, 3.0, {}});
  r.flags = {"client-saturated"};
  r.attempts = 2;
  c.reps.push_back(r);
  auto j = to_json(c);
  auto back = cell_from_json(nlohmann::json::parse(j.dump()), c.cell);
  EXPECT_EQ(to_json(back), j);
}

}  // namespace
}  // namespace loadlab::controller
