#include "report/reporters.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "report_fixture.hpp"

namespace loadlab::controller {
namespace {

CellResult cell(double qps, const std::string& error = "") {
  CellResult c;
  c.cell.target = "beast";
  c.cell.delay_ms = 5;
  c.cell.threads = 10;
  c.cell.connections = 10;
  c.cell.axes = {{"delay_ms", "5"}, {"threads", "10"}};
  c.error = error;
  if (error.empty())
    for (double q : {qps * 0.9, qps, qps * 1.2}) {
      v1::Repetition r;
      r.set_qps(q);
      r.set_requests(static_cast<uint64_t>(q * 2));
      r.mutable_latency()->set_p50_us(5100);
      r.mutable_server()->set_cpu_pct(12.5);
      r.mutable_server()->set_rss_kb_peak(4096);
      r.mutable_server()->add_series()->set_rss_kb(4096);
      r.mutable_histogram()->set_highest_trackable(60000000);
      c.reps.push_back(r);
    }
  return c;
}

TEST(Reporters, CellFiguresAreTheMedianRepetitions) {
  auto c = cell(2000);
  EXPECT_DOUBLE_EQ(c.median().qps(), 2000);
  EXPECT_EQ(c.median_index(), 1u);
  EXPECT_DOUBLE_EQ(c.qps_min(), 1800);
  EXPECT_DOUBLE_EQ(c.qps_max(), 2400);
  auto p = to_proto(c);
  EXPECT_TRUE(p.ok());
  EXPECT_EQ(p.cell().key(), "beast/d5/t10");
  EXPECT_EQ(p.median_index(), 1u);
  EXPECT_DOUBLE_EQ(p.median().qps(), 2000.0);
  EXPECT_EQ(p.median().requests(), 4000u);
  EXPECT_EQ(p.median().server().rss_kb_peak(), 4096u);
  EXPECT_EQ(p.median().server().series_size(), 0);  // the series and histogram stay with
  EXPECT_FALSE(p.median().has_histogram());         // their repetition
  ASSERT_EQ(p.repetitions_size(), 3);
  EXPECT_EQ(p.repetitions(1).server().series_size(), 1);
  EXPECT_DOUBLE_EQ(p.qps_min(), 1800);
}

TEST(Reporters, ACellReadBackFromItsProtoIsTheSame) {
  auto c = cell(2000);
  c.reps[2].add_flags("client-saturated");
  auto back = cell_from_proto(to_proto(c), c.cell);
  ASSERT_EQ(back.reps.size(), 3u);
  EXPECT_EQ(to_proto(back).SerializeAsString(), to_proto(c).SerializeAsString());
  EXPECT_EQ(back.flags(), std::vector<std::string>{"client-saturated"});
}

TEST(Reporters, CsvHasOneRowPerCellAndQuotesErrors) {
  std::ostringstream out;
  write_csv(out, {cell(2000), cell(0, "load: boom, \"bad\"")});
  std::string s = out.str();
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 3);
  EXPECT_NE(s.find("beast,5,10,10,4000,0,0.0000,2000.00,1800.00,2400.00,5100"), std::string::npos);
  EXPECT_NE(s.find("\"load: boom, \"\"bad\"\"\""), std::string::npos);
}

// A protocol, TLS version or stream count fixed by the scenario is not an axis, yet every
// output says what the cells ran over; the defaults (http1, one stream) add no column.
TEST(Reporters, FixedProtocolTlsVersionAndStreamsAreColumns) {
  auto h2 = cell(2000);
  h2.cell.protocol = "h2";
  h2.cell.tls_version = "1.2";
  h2.cell.streams = 10;
  std::ostringstream csv;
  write_csv(csv, {h2});
  EXPECT_EQ(csv.str().substr(0, 56), "target,delay_ms,threads,protocol,tls_version,streams,con");
  EXPECT_NE(csv.str().find("\nbeast,5,10,h2,1.2,10,10,"), std::string::npos) << csv.str();
  EXPECT_EQ(summary_header({h2})[3], "protocol");
  EXPECT_EQ(summary_header({h2})[4], "TLS");
  EXPECT_EQ(summary_header({h2})[5], "streams");

  // As an axis, the protocol is the axis's column; cells without TLS have no version, so a
  // fixed version is no column of its own then.
  auto https = cell(2000), http1 = cell(2000);
  for (auto* c : {&https, &http1}) c->cell.axes.emplace_back("protocol", "http1");
  https.cell.axes.back().second = https.cell.protocol = "https";
  https.cell.tls_version = "1.3";
  auto header = summary_header({https, http1});
  EXPECT_EQ(std::count(header.begin(), header.end(), "protocol"), 1);
  EXPECT_EQ(std::count(header.begin(), header.end(), "TLS"), 0);
  EXPECT_EQ(summary_rows({https, http1})[0].size(), header.size());
  EXPECT_EQ(summary_rows({https, http1})[1].size(), header.size());
  EXPECT_EQ(summary_header({cell(2000)}).size(), header.size() - 1);  // http1: no protocol column
}

// An agent quotes a target's last output lines in its error: a row stays one line.
TEST(Reporters, AMultiLineErrorIsOneLineInTheTableAndMarkdown) {
  const std::string error =
      "ready: target go did not become ready: it exited (exit status 127); last output:\n"
      "go needs the Go compiler: apt-get install golang-go\r\nsecond line \n";
  const std::string one_line =
      "FAILED: ready: target go did not become ready: it exited (exit status 127); last output: "
      "go needs the Go compiler: apt-get install golang-go | second line";
  EXPECT_EQ(failed_status(error), one_line);
  EXPECT_EQ(failed_status("ready: timeout"), "FAILED: ready: timeout");
  std::ostringstream table, md, csv;
  write_table(table, {cell(2000), cell(0, error)});
  write_markdown(md, "t", {cell(0, error)});
  write_csv(csv, {cell(0, error)});
  EXPECT_NE(table.str().find(one_line), std::string::npos) << table.str();
  auto t = table.str();
  EXPECT_EQ(std::count(t.begin(), t.end(), '\n'), 3) << t;  // header and two rows
  EXPECT_NE(md.str().find("last output: go needs the Go compiler: apt-get install golang-go \\| second line"),
            std::string::npos)
      << md.str();
  EXPECT_NE(csv.str().find("last output:\ngo needs"), std::string::npos) << csv.str();  // kept as it is
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
  flagged.reps[1].add_flags("client-saturated");
  std::ostringstream t2, csv;
  write_table(t2, {flagged});
  write_csv(csv, {flagged});
  EXPECT_NE(t2.str().find("ok, but client-saturated"), std::string::npos) << t2.str();
  EXPECT_NE(csv.str().find(",3,client-saturated,\n"), std::string::npos) << csv.str();
}

// matrix.md as the seed articles lay out their figures: a table per metric, rows target ×
// delay, columns threads; then every figure of every cell.
TEST(Reporters, MarkdownHasATablePerMetricWithThreadsAsColumns) {
  auto cells = testing::report_matrix();
  cells[6] = testing::report_cell("go", 5, 1, "measure: boom");
  cells[1].reps[0].add_unavailable("latency.p99_us");
  std::ostringstream md;
  write_markdown(md, "seeds", cells);
  const std::string s = md.str();
  EXPECT_EQ(
      s.rfind("# seeds\n\n## QPS by threads\n\n| target | delay ms | threads 1 | threads 10 |\n"
              "| --- | --- | ---: | ---: |\n| beast | 0 | 1000 | 10000 |\n| beast | 5 | 1005 | 10005 |\n"
              "| go | 0 | 101000 | 110000 |\n| go | 5 | FAILED | 110005 |\n",
              0),
      0u)
      << s;
  for (const char* heading : {"## p99 ms by threads", "## server CPU % by threads", "## server MB by threads",
                              "## client CPU % by threads", "## All figures"})
    EXPECT_NE(s.find(heading), std::string::npos) << heading;
  EXPECT_LT(s.find("## client CPU % by threads"), s.find("## All figures"));
  EXPECT_NE(s.find("| beast | 0 | 1.00 | n/a |"), std::string::npos) << s;    // p99: n/a where unavailable
  EXPECT_NE(s.find("| beast | 5 | 10.0 | 100.0 |"), std::string::npos) << s;  // server CPU %
  EXPECT_NE(s.find("| beast | 5 | 2.0 | 20.0 |"), std::string::npos) << s;    // server MB
  // All figures: one row per cell, the failure spelled out.
  EXPECT_NE(s.find("| go | 5 | 1 | 1 | - |"), std::string::npos) << s;
  EXPECT_NE(s.find("FAILED: measure: boom"), std::string::npos) << s;
}

TEST(Reporters, MarkdownEscapesPipesInNames) {
  auto c = testing::report_cell("a|b", 0, 1);
  std::ostringstream md;
  write_markdown(md, "x|y", {c});
  EXPECT_NE(md.str().find("# x\\|y"), std::string::npos) << md.str();
  EXPECT_NE(md.str().find("| a\\|b | 0 | 101000 |"), std::string::npos) << md.str();
}

}  // namespace
}  // namespace loadlab::controller
