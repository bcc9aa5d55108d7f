#include "loadlab/controller/reporters.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace loadlab::controller {
namespace {

CellResult cell(double qps, const std::string& error = "") {
  CellResult c;
  c.cell.target = "beast";
  c.cell.delay_ms = 5;
  c.cell.threads = 10;
  c.cell.connections = 10;
  c.error = error;
  if (error.empty())
    for (double q : {qps * 0.9, qps, qps * 1.2}) {
      RepResult r;
      r.qps = q;
      r.requests = static_cast<uint64_t>(q * 2);
      r.latency_us.p50 = 5100;
      r.server.cpu_pct = 12.5;
      r.server.rss_kb_peak = 4096;
      c.reps.push_back(r);
    }
  return c;
}

TEST(Reporters, CellFiguresAreTheMedianRepetitions) {
  auto c = cell(2000);
  EXPECT_DOUBLE_EQ(c.median().qps, 2000);
  EXPECT_DOUBLE_EQ(c.qps_min(), 1800);
  EXPECT_DOUBLE_EQ(c.qps_max(), 2400);
  auto j = to_json(c);
  EXPECT_EQ(j["qps"], 2000.0);
  EXPECT_EQ(j["requests"], 4000u);
  EXPECT_EQ(j["repetitions"].size(), 3u);
  EXPECT_EQ(j["server"]["rss_kb_peak"], 4096u);
}

TEST(Reporters, CsvHasOneRowPerCellAndQuotesErrors) {
  std::ostringstream out;
  write_csv(out, {cell(2000), cell(0, "load: boom, \"bad\"")});
  std::string s = out.str();
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 3);
  EXPECT_NE(s.find("beast,5,10,10,4000,0,0.0000,2000.00,1800.00,2400.00,5100"), std::string::npos);
  EXPECT_NE(s.find("\"load: boom, \"\"bad\"\"\""), std::string::npos);
}

TEST(Reporters, TableAndMarkdownShowFiguresAndFailures) {
  std::ostringstream table, md;
  write_table(table, {cell(2000), cell(0, "ready: timeout")});
  write_markdown(md, "t", {cell(2000)});
  EXPECT_NE(table.str().find("2000"), std::string::npos);
  EXPECT_NE(table.str().find("5.10"), std::string::npos);
  EXPECT_NE(table.str().find("FAILED: ready: timeout"), std::string::npos);
  EXPECT_NE(md.str().find("| beast | 5 | 10 | 10 | 2000 | 5.10 |"), std::string::npos);
  auto flagged = cell(2000);
  flagged.reps[1].flags = {"client-saturated"};
  std::ostringstream t2, csv;
  write_table(t2, {flagged});
  write_csv(csv, {flagged});
  EXPECT_NE(t2.str().find("ok, but client-saturated"), std::string::npos) << t2.str();
  EXPECT_NE(csv.str().find(",3,client-saturated,\n"), std::string::npos) << csv.str();
}

}  // namespace
}  // namespace loadlab::controller
