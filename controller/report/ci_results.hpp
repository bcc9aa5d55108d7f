#pragma once
// Results for CI systems, made from result.json as a run wrote it (or as `compare` judged it):
// a JUnit XML file that a CI server shows as tests (one testcase per cell, and one per verdict,
// failing on a failed cell or a regression) and a short Markdown summary fit for a pull
// request's comment or a GitHub job's summary (the verdicts with their changes and minimum
// detectable changes, the failed cells, a link to the report).
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace loadlab::controller {

struct CiRun {
  nlohmann::json result;  // result.json: its scenario's name, cells, verdicts and ab
  std::string report;     // the run's report.html, "" when it has none (compare)
};

// JUnit XML (the schema Jenkins and GitLab read): a testsuite per run, named by its scenario,
// with a testcase per cell (an `error` when the cell failed) and, when the run was judged, a
// testcase per verdict (classname SCENARIO.verdicts or SCENARIO.ab: a `failure` on a
// regression, `skipped` when inconclusive), each with the verdict's reason as its message.
std::string junit_xml(const std::vector<CiRun>& runs);

// A few lines of Markdown per run: the verdict counts, a table of the judged cells (regressions
// first; at most kSummaryRows, the rest counted), the failed cells and the report's path.
inline constexpr size_t kSummaryRows = 30;
std::string summary_markdown(const std::vector<CiRun>& runs);

// Writes the JUnit file to `junit` and the summary to `summary_md` ("" = not asked), and
// appends the summary to $GITHUB_STEP_SUMMARY when that is set. EnvironmentError when a file
// cannot be written.
void write_ci_results(const std::vector<CiRun>& runs, const std::string& junit,
                      const std::string& summary_md);

// The run folders' results, for write_ci_results: each folder's result.json (a folder without
// one, a run stopped before its first save, is left out).
std::vector<CiRun> ci_runs_of(const std::vector<std::string>& run_folders);

}  // namespace loadlab::controller
