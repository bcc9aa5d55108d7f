// report.html from synthetic cells: its structure (one row per cell, a chart per metric and
// panel), the escaping of every text from input, and the verdicts/trends hooks.
#include "report/report_html.hpp"

#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "loadlab/proto/json.hpp"
#include "report/svg_chart.hpp"
#include "report_fixture.hpp"

namespace loadlab::controller {
namespace {

using testing::report_cell;
using testing::report_matrix;

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

nlohmann::json header() {
  return nlohmann::json::parse(R"({
    "schema_version": 1, "loadlab_version": "0.1.0", "scenario_path": "scenarios/seeds.json",
    "scenario_file": {"git": {"commit": "0123456789abcdef0123", "dirty": false}},
    "scenario": {"name": "seeds", "description": "hello, two servers"},
    "started_at": "2024-05-01T02:00:00Z", "finished_at": "2024-05-01T02:10:00Z", "lab_path": "",
    "agents": [{"name": "embedded", "address": "127.0.0.1:4000", "roles": ["target", "load"], "error": "",
                "describe": {"hostname": "lab1", "cores": 2, "memory_bytes": "25769803776", "version": "0.1.0"}}]})");
}

std::string render(const std::vector<CellResult>& cells, const ReportSections& sections = {},
                   const nlohmann::json& h = header(), const std::string& title = "seeds") {
  std::ostringstream out;
  write_html_report(out, h, title, cells, sections);
  return out.str();
}

TEST(ReportHtml, HeaderMatrixAndAChartPerMetricAndDelay) {
  auto cells = report_matrix();
  cells[6] = report_cell("go", 5, 1, "measure: boom");
  const std::string html = render(cells);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<h1>seeds</h1>"), std::string::npos);
  EXPECT_NE(html.find("2024-05-01T02:00:00Z"), std::string::npos);
  EXPECT_NE(html.find("0123456789ab"), std::string::npos);  // the scenario's commit
  EXPECT_NE(html.find("<td>lab1</td>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"num\">24.0</td>"), std::string::npos);  // memory GiB
  EXPECT_EQ(count(html, "<tr class=\"cell "), cells.size());
  EXPECT_EQ(count(html, "<tr class=\"cell failed\""), 1u);
  EXPECT_NE(html.find("data-key=\"go/d5/t1\""), std::string::npos);
  EXPECT_NE(html.find("FAILED: measure: boom"), std::string::npos);
  // Panels per delay (0, 5) × 7 metrics: qps, p50, p99, server/client CPU and MB.
  EXPECT_EQ(count(html, "<svg class=\"chart\""), 14u);
  EXPECT_EQ(count(html, "data-metric=\"qps\" data-panel=\"delay ms 5\""), 1u);
  // A line per target in each chart, with a point per finished cell: delay 5 has go's t1
  // failed, so its QPS chart has 3 points.
  auto qps5 = html.substr(html.find("data-metric=\"qps\" data-panel=\"delay ms 5\""));
  qps5 = qps5.substr(0, qps5.find("</svg>"));
  EXPECT_EQ(count(qps5, "<g class=\"series\""), 2u);
  EXPECT_EQ(count(qps5, "<circle"), 3u);
  EXPECT_NE(qps5.find("go, threads 10: 110k QPS"), std::string::npos) << qps5;
  // Self-contained: no script, no link, no URL of any kind.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("://"), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
  EXPECT_EQ(html.find("id=\"verdicts\""), std::string::npos);  // no hooks filled: no sections
  EXPECT_EQ(html.find("id=\"trends\""), std::string::npos);
}

TEST(ReportHtml, EveryTextFromInputIsEscaped) {
  const std::string evil = "<script>alert(\"x\")</script>&'";
  auto h = header();
  h["scenario"]["description"] = evil;
  h["scenario_path"] = evil;
  h["agents"][0]["name"] = evil;
  h["agents"][0]["error"] = evil;
  h["agents"][0]["describe"]["hostname"] = evil;
  h["overrides"] = {evil};
  auto c = report_cell(evil, 0, 1);
  auto failed = report_cell("b", 0, 10, evil);
  ReportSections sections;
  v1::Verdicts verdicts;
  verdicts.set_baseline(evil);
  verdicts.set_metric(evil);
  verdicts.set_note(evil);
  auto* ev = verdicts.add_cells();
  ev->set_key(evil);
  ev->set_verdict(evil);
  ev->set_reason(evil);
  ev->set_change_pct(-3);
  ev->add_history()->set_started_at(evil);
  sections.verdicts = verdicts;
  sections.trends = TrendSection{evil, {{evil, {{evil, evil, 1}, {evil, evil, 2}}}}};
  const std::string html = render({c, failed}, sections, h, evil);
  EXPECT_EQ(html.find("<script"), std::string::npos) << html;
  EXPECT_EQ(html.find("\"x\")"), std::string::npos);
  EXPECT_EQ(html.find("&'"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;"), std::string::npos);
  EXPECT_EQ(html_escape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
}

TEST(ReportHtml, AHeaderOfUnexpectedTypesStillRenders) {
  auto h = nlohmann::json::parse(R"({"scenario": 3, "agents": {"x": 1}, "started_at": ["no"],
                                     "scenario_file": null, "overrides": [1, {"a": 2}]})");
  const std::string html = render(report_matrix(), {}, h);
  EXPECT_EQ(count(html, "<tr class=\"cell "), 8u);
  EXPECT_NE(html.find("not finished (8 cells so far)"), std::string::npos);
  EXPECT_NE(render({}, {}, nlohmann::json()).find("No cell has finished yet"), std::string::npos);
}

v1::CellVerdict verdict(const std::string& key, const std::string& what, double change) {
  v1::CellVerdict v;
  v.set_key(key);
  v.set_verdict(what);
  v.set_change_pct(change);
  v.set_reason("because " + what);
  return v;
}

TEST(ReportHtml, VerdictsAreAColumnAndASectionWhenGiven) {
  ReportSections sections;
  v1::Verdicts v;
  v.set_baseline("runs/history.db");
  v.set_method("history");
  v.set_metric("qps");
  *v.add_cells() = verdict("beast/d0/t1", "regression", -7.25);
  *v.add_cells() = verdict("go/d5/t10", "improvement", 12);
  auto* missing = v.add_cells();
  missing->set_key("old/d0/t1");
  missing->set_verdict("missing");
  sections.verdicts = v;
  const std::string html = render(report_matrix(), sections);
  EXPECT_NE(html.find("<th>vs baseline</th>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"regression\">regression -7.2 %</td>"), std::string::npos) << html;
  EXPECT_NE(html.find("<td class=\"improvement\">improvement +12.0 %</td>"), std::string::npos);
  EXPECT_EQ(count(html, "<tr class=\"verdict\""), 3u);  // the cell only the baseline has too
  EXPECT_NE(html.find("data-key=\"old/d0/t1\""), std::string::npos);
  EXPECT_NE(html.find("compared with runs/history.db (history)"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"why\">because regression</td>"), std::string::npos) << "says why";
}

// Each cell's chart: its earlier nights (a point each, with its date), the band and tonight.
TEST(ReportHtml, AVerdictDrawsTheNightsTheBandAndTonight) {
  ReportSections sections;
  v1::Verdicts v;
  auto c = verdict("beast/d0/t1", "regression", -30);
  for (int i = 0; i < 6; ++i) {
    auto* n = c.add_history();
    n->set_run_id(i + 1);
    n->set_started_at("2024-05-0" + std::to_string(i + 1) + "T02:00:00Z");
    n->set_value(1000 + i);
  }
  c.set_band_low(950);
  c.set_band_high(1060);
  c.set_baseline(1002);
  c.set_value(700);
  c.set_confirm_value(710);
  c.set_mdc_pct(8.5);
  c.set_nights(6);
  *v.add_cells() = c;
  sections.verdicts = v;
  const std::string html = render(report_matrix(), sections);
  auto row = html.substr(html.find("<tr class=\"verdict\""));
  row = row.substr(0, row.find("</tr>"));
  EXPECT_EQ(count(row, "<circle class=\"night\""), 6u);
  EXPECT_NE(row.find("<title>2024-05-03T02:00:00Z (run 3): 1002.00</title>"), std::string::npos) << row;
  EXPECT_EQ(count(row, "<rect class=\"band\""), 1u);
  EXPECT_NE(row.find("<circle class=\"tonight\""), std::string::npos);
  EXPECT_NE(row.find("fill=\"#c0392b\"><title>tonight: 700.00 (-30.0 %)</title>"), std::string::npos) << row;
  EXPECT_NE(row.find("<circle class=\"confirmation\""), std::string::npos);
  EXPECT_NE(row.find("950.00 .. 1060.00"), std::string::npos);
  EXPECT_NE(row.find("8.5 %"), std::string::npos);
}

// A cell a nightly A/B decided: the A/B's verdict, and what the history alone said with its
// own band and nights beside it.
TEST(ReportHtml, ANightlyAbsVerdictShowsTheHistorysBesideIt) {
  ReportSections sections;
  v1::Verdicts v;
  auto c = verdict("mine/d0/t1", "regression", -3.8);
  c.set_a_key("mine.last-good/d0/t1");
  auto h = verdict("mine/d0/t1", "noise", -4.1);
  h.set_mdc_pct(21.3);
  h.set_band_low(900);
  h.set_band_high(1100);
  for (int i = 0; i < 3; ++i) {
    auto* n = h.add_history();
    n->set_run_id(i + 1);
    n->set_started_at("2026-12-0" + std::to_string(i + 1) + "T02:00:00Z");
    n->set_value(1000);
  }
  *c.mutable_by_history() = h;
  *v.add_cells() = c;
  sections.verdicts = v;
  const std::string html = render(report_matrix(), sections);
  auto row = html.substr(html.find("<tr class=\"verdict\""));
  row = row.substr(0, row.find("</tr>"));
  EXPECT_NE(row.find("<td class=\"regression\">regression</td>"), std::string::npos) << row;
  EXPECT_NE(
      row.find("(the A/B against mine.last-good/d0/t1 decided; the history alone: noise -4.1 %, mdc 21.3 %): "
               "because noise"),
      std::string::npos)
      << row;
  EXPECT_EQ(count(row, "<circle class=\"night\""), 3u);  // the history's nights, drawn
  EXPECT_EQ(count(row, "<rect class=\"band\""), 1u);
}

TEST(ReportHtml, VerdictsAreReadBackFromResultJson) {
  v1::Verdicts v;
  v.set_metric("qps");
  *v.add_cells() = verdict("beast/d0/t1", "noise", -12);
  nlohmann::json header = {{"verdicts", nlohmann::json::parse(proto::to_json(v))}};
  auto s = sections_of(header);
  ASSERT_TRUE(s.verdicts.has_value());
  EXPECT_EQ(s.verdicts->cells(0).verdict(), "noise");
  header["verdicts"] = {{"cells", "not a list"}};
  EXPECT_FALSE(sections_of(header).verdicts.has_value()) << "read leniently";
}

TEST(ReportHtml, TrendsAreSparklinesWithAPointPerRun) {
  ReportSections sections;
  sections.trends = TrendSection{"qps",
                                 {{"beast/d0/t1",
                                   {{"2024-04-29T02:00:00Z", "aaaaaaaaaaaaaaaa", 1000},
                                    {"2024-04-30T02:00:00Z", "bbbbbbbbbbbbbbbb", 1100},
                                    {"2024-05-01T02:00:00Z", "cccccccccccccccc", 900}}}}};
  const std::string html = render(report_matrix(), sections);
  auto trends = html.substr(html.find("<section id=\"trends\">"));
  EXPECT_EQ(count(trends, "<svg class=\"sparkline\""), 1u);
  EXPECT_EQ(count(trends, "<circle"), 3u);
  EXPECT_NE(trends.find("<title>2024-04-30T02:00:00Z bbbbbbbbbbbb: 1100.00</title>"), std::string::npos)
      << trends;
  EXPECT_NE(trends.find("-10.0 %"), std::string::npos);  // first to last
}

TEST(SvgChart, PointsArePlacedByValueAndGapsBreakTheLine) {
  LineChart c;
  c.metric = "qps";
  c.x_title = "threads";
  c.y_title = "QPS";
  c.x_labels = {"1", "5", "10", "20"};
  c.x_values = std::vector<double>{1, 5, 10, 20};
  c.series = {{"a", {100.0, 200.0, std::nullopt, 400.0}}};
  const std::string svg = svg_line_chart(c);
  EXPECT_EQ(count(svg, "<circle"), 3u);
  // Two pieces of line: M…L… then a new M after the gap.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(svg, m, std::regex("<path d=\"([^\"]*)\"")));
  EXPECT_EQ(count(m[1].str(), "M"), 2u) << m[1];
  EXPECT_EQ(count(m[1].str(), "L"), 1u) << m[1];
  // x by value: 1 → 5 is 4/19 of the width from 1 → 20.
  std::vector<double> xs;
  const std::regex circle("<circle cx=\"([0-9.]+)\"");
  for (std::sregex_iterator it(svg.begin(), svg.end(), circle), end; it != end; ++it)
    xs.push_back(std::stod((*it)[1]));
  ASSERT_EQ(xs.size(), 3u);
  EXPECT_NEAR((xs[1] - xs[0]) / (xs[2] - xs[0]), 4.0 / 19.0, 0.01);
  EXPECT_NE(svg.find("viewBox=\"0 0 480 300\""), std::string::npos);
}

// The rate axis of a capacity chart is marked at round rates, by log when the steps span more
// than 50×, by value otherwise: never at a geometric point like "3363.59".
TEST(SvgChart, ACapacityChartsRateAxisIsMarkedAtRoundRates) {
  auto x_ticks = [](double lo, double hi) {
    CapacityChart c;
    c.panel = "t";
    c.y_title = "p99 ms";
    c.limit = 5;
    c.series = {{"cell", {{lo, 1.0}, {std::sqrt(lo * hi), 2.0}, {hi, 30.0}}, std::pair{hi / 1.5, 4.0}}};
    const std::string svg = svg_capacity_chart(c);
    std::vector<std::string> ticks;
    const std::regex tick("<text class=\"tick\" x=\"[0-9.]+\" y=\"[0-9.]+\" text-anchor=\"middle\">([^<]*)<");
    for (std::sregex_iterator it(svg.begin(), svg.end(), tick), end; it != end; ++it)
      ticks.push_back((*it)[1]);
    return ticks;
  };
  EXPECT_EQ(x_ticks(1000, 256000), (std::vector<std::string>{"1000", "3000", "10k", "30k", "100k"}));
  EXPECT_EQ(x_ticks(1100, 60000), (std::vector<std::string>{"2000", "5000", "10k", "20k", "50k"}));
  EXPECT_EQ(x_ticks(7, 90000), (std::vector<std::string>{"10", "100", "1000", "10k"}));
  EXPECT_EQ(x_ticks(2000, 6000), (std::vector<std::string>{"2000", "3000", "4000", "5000", "6000"}));
  EXPECT_EQ(x_ticks(40000, 47000), (std::vector<std::string>{"40k", "42k", "44k", "46k"}));
}

}  // namespace
}  // namespace loadlab::controller
