#include "results/results.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "load_result_fixture.hpp"
#include "loadlab/proto/json.hpp"
#include "results/result_merge.hpp"

namespace loadlab::controller {
namespace {

TEST(Results, ACellSurvivesTheJournalRoundTripThroughTheProtoJson) {
  CellResult c;
  c.cell.target = "b";
  c.cell.delay_ms = 5;
  v1::Repetition r = merge_load_results({part({100, 200, 300}, 3)});
  r.mutable_server()->set_cpu_pct(12.5);
  for (double t : {0.1, 0.2}) {
    auto* point = r.mutable_server()->add_series();
    point->set_t_s(t);
    point->set_cpu_pct(10 * t);
    point->set_rss_kb(1000);
  }
  auto* lp = r.add_load_parts();
  lp->set_agent("cli");
  lp->set_requests(3);
  r.add_flags("client-saturated");
  r.set_attempts(2);
  c.reps.push_back(r);
  const std::string line = proto::to_json(to_proto(c));
  v1::CellResult read;
  ASSERT_NO_THROW(proto::from_json(line, &read));
  auto back = cell_from_proto(read, c.cell);
  EXPECT_EQ(proto::to_json(to_proto(back)), line);
  EXPECT_EQ(back.reps[0].attempts(), 2u);
}

TEST(Results, TheJsonNamesAreTheDocumentedOnes) {
  CellResult c;
  c.cell.target = "b";
  c.cell.delay_ms = 5;
  c.cell.threads = 2;
  c.cell.connections = 4;
  c.cell.axes = {{"delay_ms", "5"}, {"threads", "2"}};
  c.reps.push_back(merge_load_results({part({100, 200, 300}, 3)}));
  auto j = nlohmann::json::parse(proto::to_json(to_proto(c)));
  EXPECT_EQ(j["cell"]["key"], "b/d5/t2");
  EXPECT_EQ(j["cell"]["connections"], 4);
  EXPECT_EQ(j["ok"], true);
  EXPECT_EQ(j["median"]["requests"], "3");  // proto3 JSON: 64-bit integers are strings
  EXPECT_EQ(j["median"]["qps"], 3.0);
  EXPECT_EQ(j["median"]["latency"]["p50_us"], 200.0);
  EXPECT_TRUE(j["median"]["server"].contains("rss_kb_peak"));
  EXPECT_EQ(j["repetitions"].size(), 1u);
  EXPECT_TRUE(j["repetitions"][0]["histogram"].contains("buckets"));
}

TEST(Results, AddedUsageSumsTheSidesAndKeepsTheBusiestMachine) {
  v1::Usage a, b;
  a.set_cpu_pct(50);
  a.set_rss_kb_peak(1000);
  a.set_machine_cpu_pct(60);
  a.set_machine_cores(2);
  b.set_cpu_pct(70);
  b.set_rss_kb_peak(3000);
  b.set_machine_cpu_pct(90);
  b.set_machine_cores(4);
  add_usage(a, b);
  EXPECT_DOUBLE_EQ(a.cpu_pct(), 120);
  EXPECT_EQ(a.rss_kb_peak(), 4000u);
  EXPECT_DOUBLE_EQ(a.machine_cpu_pct(), 90);
  EXPECT_EQ(a.machine_cores(), 4u);
}

}  // namespace
}  // namespace loadlab::controller
