// The CI files from a result.json: what each cell and verdict becomes in JUnit XML, text that
// would break XML or a Markdown table, and the summary's order and length.
#include "report/ci_results.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "loadlab/shared/environment_error.hpp"

namespace {

using loadlab::controller::CiRun;
using nlohmann::json;

json cell(const std::string& key, bool ok, const std::string& error = "") {
  return {{"cell", {{"key", key}}},
          {"ok", ok},
          {"error", error},
          {"repetitions", json::array({{{"duration_s", 2.0}}, {{"duration_s", 2.5}}})}};
}

json verdict(const std::string& key, const std::string& v, double change) {
  return {{"key", key},     {"verdict", v},   {"reason", "why " + key}, {"change_pct", change},
          {"mdc_pct", 6.5}, {"value", 90.04}, {"baseline", 100.0}};
}

CiRun night() {
  json result = {{"scenario", {{"name", "nightly"}}}, {"started_at", "2026-12-05T22:00:00Z"}};
  result["cells"] = json::array({cell("s/d0/t1", true), cell("s/d0/t4", true),
                                 cell("s/d5/t1", false, "target <exited> & said \"no\"\x01\nline 2")});
  result["verdicts"] = {
      {"baseline", "history.db"},
      {"metric", "qps"},
      {"threshold_pct", 5.0},
      {"regressions", 1},
      {"cells", json::array({verdict("s/d0/t1", "same", 0.4), verdict("s/d0/t4", "regression", -17.5),
                             verdict("s/d5/t1", "inconclusive", 0)})}};
  return {result, "runs/x/report.html"};
}

TEST(CiResults, EachCellAndVerdictIsATestcaseThatFailsOnARegressionOrAFailedCell) {
  const auto xml = loadlab::controller::junit_xml({night()});
  EXPECT_NE(xml.find(R"(<testsuites name="loadlab" tests="6" failures="1" errors="1" skipped="1">)"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find(R"(<testcase classname="nightly" name="s/d0/t1" time="4.5"/>)"), std::string::npos)
      << xml;
  EXPECT_NE(xml.find(R"(<failure type="regression" message="regression: why s/d0/t4">)"), std::string::npos)
      << xml;
  EXPECT_NE(xml.find(R"(<skipped message="inconclusive: why s/d5/t1"/>)"), std::string::npos) << xml;
  // The failed cell's error, escaped: no raw markup, no control character XML 1.0 refuses.
  EXPECT_NE(xml.find("target &lt;exited&gt; &amp; said &quot;no&quot;\nline 2"), std::string::npos) << xml;
  EXPECT_EQ(xml.find('\x01'), std::string::npos);
}

TEST(CiResults, AnABRunsVerdictsAreTestcasesOfTheirOwnClass) {
  auto run = night();
  run.result.erase("verdicts");
  run.result["ab"] = {
      {"metric", "qps"},
      {"threshold_pct", 2.0},
      {"regressions", 1},
      {"cells", json::array({verdict("b/d0/t1", "regression", -4.0), verdict("b/d0/t4", "same", 0.3)})}};
  const auto xml = loadlab::controller::junit_xml({run});
  EXPECT_NE(xml.find(R"(<testcase classname="nightly.ab" name="b/d0/t1">)"), std::string::npos) << xml;
  EXPECT_NE(xml.find(R"(tests="5" failures="1" errors="1" skipped="0")"), std::string::npos) << xml;
  EXPECT_EQ(xml.find("nightly.verdicts"), std::string::npos) << xml;
  const auto md = loadlab::controller::summary_markdown({run});
  EXPECT_NE(md.find("; A/B: 1 regression (qps, threshold 2.0 %)"), std::string::npos) << md;
}

TEST(CiResults, TheSummaryPutsRegressionsFirstAndKeepsEachRowOnOneLine) {
  const auto md = loadlab::controller::summary_markdown({night()});
  EXPECT_NE(md.find("### loadlab: nightly\n\n3 cells, 1 failed; against history.db: 1 regression (qps, "
                    "threshold 5.0 %)"),
            std::string::npos)
      << md;
  const auto regression = md.find("| s/d0/t4 | **regression** | -17.5 % | 6.5 % | 90 | 100 | why s/d0/t4 |");
  ASSERT_NE(regression, std::string::npos) << md;
  EXPECT_LT(regression, md.find("| s/d0/t1 | same"));
  EXPECT_NE(md.find("- s/d5/t1: target <exited> & said \"no\"\x01 line 2"), std::string::npos) << md;
  EXPECT_NE(md.find("Report: [runs/x/report.html](runs/x/report.html)"), std::string::npos) << md;
}

TEST(CiResults, ALargeMatrixShowsItsFirstRowsAndCountsTheRest) {
  auto run = night();
  auto& cells = run.result["verdicts"]["cells"];
  for (int i = 0; i < 40; ++i) cells.push_back(verdict("s/d9/t" + std::to_string(i), "same", 0));
  const auto md = loadlab::controller::summary_markdown({run});
  EXPECT_NE(md.find("\n13 more cells: see the report.\n"), std::string::npos) << md;
  EXPECT_NE(md.find("**regression**"), std::string::npos);
}

TEST(CiResults, TheStepSummaryIsAppendedToAndAnUnwritableFileIsAnError) {
  const auto dir = std::filesystem::temp_directory_path() / ("ci-results-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto step = (dir / "step.md").string();
  std::ofstream(step) << "earlier step\n";
  ::setenv("GITHUB_STEP_SUMMARY", step.c_str(), 1);
  loadlab::controller::write_ci_results({night()}, (dir / "j.xml").string(), "");
  ::unsetenv("GITHUB_STEP_SUMMARY");
  std::ifstream f(step);
  const std::string text(std::istreambuf_iterator<char>(f), {});
  EXPECT_EQ(text.rfind("earlier step\n### loadlab: nightly", 0), 0u) << text;
  EXPECT_TRUE(std::filesystem::exists(dir / "j.xml"));
  EXPECT_THROW(loadlab::controller::write_ci_results({night()}, (dir / "no" / "j.xml").string(), ""),
               loadlab::EnvironmentError);
  std::filesystem::remove_all(dir);
}

}  // namespace
