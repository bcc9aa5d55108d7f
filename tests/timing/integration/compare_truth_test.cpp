// `loadlab compare` and `run --baseline` against ground truth: the same cell against a server
// that really got slower, with the CI files (JUnit, the Markdown summary) read back.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "loadlab/shared/json_input.hpp"
#include "test_support.hpp"

namespace loadlab {
namespace {

using testing::bin;
using testing::run_command;
using testing::TempDir;

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// The JUnit file of a judged run with one regression, read back by a real consumer
// (python3-junitparser), and its Markdown summary: the cell's testcase passes, its verdict's
// testcase (classname `verdicts`) fails with the verdict's reason. The summary is checked first:
// it needs no junitparser.
void expect_ci_files(const std::string& junit, const std::string& summary, const std::string& verdict_class) {
  const auto md = slurp(summary);
  EXPECT_NE(md.find("### loadlab: nightly"), std::string::npos) << md;
  EXPECT_NE(md.find("| beast/d10/t4 | **regression** | -"), std::string::npos) << md;
  EXPECT_NE(md.find("1 regression"), std::string::npos) << md;
  if (std::system("/usr/bin/python3 -c 'import junitparser' 2>/dev/null") != 0)
    GTEST_SKIP() << "python3-junitparser is not installed (make deps installs it)";
  auto r = run_command({"/usr/bin/python3", "-c", R"(
import sys, junitparser
for suite in junitparser.JUnitXml.fromfile(sys.argv[1]):
    for case in suite:
        kinds = [type(x).__name__ + ":" + (x.message or "") for x in case.result]
        print(suite.name, case.classname, case.name, "PASS" if case.is_passed else " ".join(kinds), sep="|")
)",
                        junit});
  ASSERT_EQ(r.code, 0) << r.output_tail;
  EXPECT_NE(r.stdout_text.find("nightly|nightly|beast/d10/t4|PASS"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("nightly|" + verdict_class + "|beast/d10/t4|Failure:regression: "),
            std::string::npos)
      << r.stdout_text;
}

// Ground truth for compare: the same cell against a server that really got slower.
TEST(Cli, CompareCatchesAServerThatGotSlowerAndPassesTheSameOne) {
  TempDir dir;
  auto scenario = [&](const std::string& name, int server_delay_ms) {
    // The cell key stays beast/d10/t4; a header makes the server itself take longer. The
    // delays (20 and 60 ms) are long enough that an overloaded machine's scheduling (a few ms
    // late on a wake-up, with both cores busy) moves the rate by less than the threshold, and
    // the slow server is 3 × slower: at 10 and 20 ms, a wake-up late by 5 ms made the base run
    // 230 req/s instead of 400 and the slow one 170 instead of 200, which three repetitions
    // then could not tell apart.
    return dir.file(
        name, R"({"name": "nightly", "targets": [{"name": "beast", "builtin": "hello", "server_threads": 1}],
        "matrix": {"delay_ms": [10], "threads": [4]},
        "load": {"requests_per_thread": 40, "headers": {"x-loadlab-delay-ms": ")" +
                  std::to_string(server_delay_ms) + R"("}},
        "repetitions": 3, "regression": {"metric": "qps", "threshold_pct": 10}})");
  };
  auto run = [&](const std::string& s, const std::string& out) {
    auto r =
        run_command({bin("loadlab"), "--log-level", "warn", "run", s, "--out", (dir.path() / out).string()});
    EXPECT_EQ(r.code, 0) << r.output_tail;
    return (dir.path() / out).string();
  };
  auto base = run(scenario("a.json", 20), "base");
  auto same = run(scenario("b.json", 20), "same");
  auto slow = run(scenario("c.json", 60), "slow");  // a third of the throughput
  auto r = run_command({bin("loadlab"), "compare", base, same});
  EXPECT_EQ(r.code, 0) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("0 regressions"), std::string::npos) << r.stdout_text;
  const auto junit = (dir.path() / "compare.xml").string(), summary = (dir.path() / "compare.md").string();
  r = run_command({bin("loadlab"), "compare", base, slow, "--junit", junit, "--summary-md", summary});
  EXPECT_EQ(r.code, 1) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("REGRESSION"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("beast/d10/t4"), std::string::npos);
  expect_ci_files(junit, summary, "nightly.verdicts");
  // The other way round it is an improvement, and the latency agrees with qps (the median: a
  // p99 of 3 × 160 requests moves with one scheduling hiccup of a busy machine, and its spread
  // then makes the change noise, as it should).
  r = run_command({bin("loadlab"), "compare", slow, base});
  EXPECT_EQ(r.code, 0) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("improvement"), std::string::npos) << r.stdout_text;
  r = run_command({bin("loadlab"), "compare", base, slow, "--metric", "p50_ms"});
  EXPECT_EQ(r.code, 1) << r.stdout_text;
  r = run_command({bin("loadlab"), "compare", base, slow, "--metric", "rps"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output_tail.find("--metric: unknown metric \"rps\""), std::string::npos) << r.output_tail;
  r = run_command({bin("loadlab"), "compare", base, (dir.path() / "nope").string()});
  EXPECT_EQ(r.code, 2);
  // The same at the end of a run: --baseline, the verdicts in result.json, exit status 1.
  auto slower = (dir.path() / "slower").string();
  r = run_command({bin("loadlab"), "--log-level", "warn", "run", scenario("d.json", 60), "--out", slower,
                   "--baseline", base, "--junit", junit, "--summary-md", summary});
  EXPECT_EQ(r.code, 1) << r.stdout_text << r.output_tail;
  EXPECT_NE(r.stdout_text.find("REGRESSION"), std::string::npos) << r.stdout_text;
  auto verdicts = loadlab::read_json_file(slower + "/result.json")["verdicts"];
  EXPECT_EQ(verdicts["regressions"], 1);
  EXPECT_EQ(verdicts["cells"][0]["key"], "beast/d10/t4");
  EXPECT_EQ(verdicts["cells"][0]["verdict"], "regression");
  expect_ci_files(junit, summary, "nightly.verdicts");
  EXPECT_NE(slurp(summary).find("(" + slower + "/report.html)"), std::string::npos) << slurp(summary);
  r = run_command({bin("loadlab"), "--log-level", "warn", "run", scenario("e.json", 20), "--out",
                   (dir.path() / "again").string(), "--baseline", base});
  EXPECT_EQ(r.code, 0) << r.stdout_text << r.output_tail;
}

}  // namespace
}  // namespace loadlab
