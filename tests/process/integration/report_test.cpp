// The reports of a real run: result.json against docs/result.schema.json (python3-jsonschema),
// `loadlab report DIR`, and report.html rendered by a real browser (headless Chromium) at a
// phone's and a wide screen's size.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>

#include "test_support.hpp"

namespace loadlab {
namespace {

namespace fs = std::filesystem;
using testing::bin;
using testing::run_command;
using testing::TempDir;

// Two targets × delay {0, 2} × threads {1, 2, 4}: 12 cells, two chart panels.
const char* kScenario = R"({
  "name": "report-demo", "description": "two servers, one thread and two",
  "targets": [{"name": "beast-1t", "builtin": "hello", "server_threads": 1},
              {"name": "beast-2t", "builtin": "hello", "server_threads": 2}],
  "matrix": {"delay_ms": [0, 2], "threads": [1, 2, 4]},
  "load": {"total_requests": 300}
})";
constexpr size_t kCells = 12, kCharts = 2 * 7;  // panels × (qps, p50, p99, cpu and MB of both sides)

// A cell whose measure phase runs out: a failed cell in a real result.json.
const char* kFailing = R"({
  "name": "report-failing", "targets": [{"name": "beast", "builtin": "hello", "server_threads": 1}],
  "matrix": {"delay_ms": [0], "threads": [1]}, "load": {"duration_s": 5},
  "execution": {"retries": 0, "deadlines": {"measure_s": 1}}
})";

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

// Debian's python (python3-jsonschema and python3-pil install there), else the PATH's.
std::string python() { return fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3"; }

bool python_has(const std::string& module) {
  return run_command({python(), "-c", "import " + module}, std::chrono::seconds(30)).code == 0;
}

// Runs `python3 -c code args...`; returns its exit status and output.
testing::RunOutput run_python(const std::string& code, std::vector<std::string> args) {
  std::vector<std::string> argv{python(), "-c", code};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv, std::chrono::seconds(60));
}

// Prints "ok", or each error with its JSON path; exit status 1 when invalid.
const char* kValidate = R"(import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
errors = list(jsonschema.Draft202012Validator(schema).iter_errors(json.load(open(sys.argv[2]))))
for e in errors[:10]: print(e.json_path, e.message[:300])
print("ok" if not errors else "invalid")
sys.exit(1 if errors else 0))";

class ReportTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    run_ = std::make_unique<testing::RunOutput>(
        run_command({bin("loadlab"), "run", dir_->file("s.json", kScenario), "--out",
                     (dir_->path() / "run").string(), "--quiet"}));
    failing_ = std::make_unique<testing::RunOutput>(
        run_command({bin("loadlab"), "run", dir_->file("f.json", kFailing), "--out",
                     (dir_->path() / "failing").string(), "--quiet"}));
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    ASSERT_EQ(run_->code, 0) << run_->output_tail;
    ASSERT_EQ(failing_->code, 3) << failing_->output_tail;  // its cell failed
  }
  static fs::path run_dir() { return dir_->path() / "run"; }
  static fs::path failing_dir() { return dir_->path() / "failing"; }

  static TempDir* dir_;
  static std::unique_ptr<testing::RunOutput> run_, failing_;
};
TempDir* ReportTest::dir_ = nullptr;
std::unique_ptr<testing::RunOutput> ReportTest::run_, ReportTest::failing_;

const std::string kSchema = std::string(LOADLAB_SOURCE_DIR) + "/docs/result.schema.json";

TEST_F(ReportTest, ResultJsonOfARealRunAndOfAFailedCellFollowsTheSchema) {
  // What needs no jsonschema first: the failed cell as written.
  auto result = read_json_file((failing_dir() / "result.json").string());
  ASSERT_EQ(result["cells"].size(), 1u);
  EXPECT_EQ(result["cells"][0]["ok"], false);
  EXPECT_EQ(result["schema_version"], 1);
  if (!python_has("jsonschema"))
    GTEST_SKIP() << "python3-jsonschema is not installed (make deps installs it)";
  for (auto folder : {run_dir(), failing_dir()}) {
    auto r = run_python(kValidate, {kSchema, (folder / "result.json").string()});
    EXPECT_EQ(r.code, 0) << folder << "\n" << r.output_tail;
    EXPECT_NE(r.stdout_text.find("ok"), std::string::npos) << r.output_tail;
  }
  // The schema is not a rubber stamp: an unknown cell field, a 64-bit count as a number and
  // a missing header field are each rejected, naming where.
  TempDir bad;
  auto good = read_json_file((run_dir() / "result.json").string());
  auto extra = good;
  extra["cells"][0]["median"]["requests_total"] = "3";
  auto number = good;
  number["cells"][1]["median"]["requests"] = 300;
  auto missing = good;
  missing.erase("schema_version");
  for (auto& [name, doc, where] :
       {std::tuple{"extra.json", extra, "$.cells[0].median"},
        std::tuple{"number.json", number, "$.cells[1].median.requests"},
        std::tuple{"missing.json", missing, "'schema_version' is a required property"}}) {
    auto r = run_python(kValidate, {kSchema, bad.file(name, doc.dump())});
    EXPECT_EQ(r.code, 1) << name << ": " << r.output_tail;
    EXPECT_NE(r.stdout_text.find(where), std::string::npos) << name << ": " << r.stdout_text;
  }
  // Unknown header keys are allowed: newer writers add some.
  good["added_by_a_newer_loadlab"] = true;
  EXPECT_EQ(run_python(kValidate, {kSchema, bad.file("newer.json", good.dump())}).code, 0);
}

TEST_F(ReportTest, TheRunFolderHasTheReportAndMatrixMdPerMetric) {
  const std::string html = read_file(run_dir() / "report.html");
  EXPECT_EQ(count(html, "<tr class=\"cell "), kCells);
  EXPECT_EQ(count(html, "<svg class=\"chart\""), kCharts);
  EXPECT_EQ(html.find("://"), std::string::npos);  // no URL: nothing to fetch
  const std::string md = read_file(run_dir() / "matrix.md");
  EXPECT_NE(md.find("## QPS by threads\n\n| target | delay ms | threads 1 | threads 2 | threads 4 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("## All figures"), std::string::npos);
  const std::string failed = read_file(failing_dir() / "report.html");
  EXPECT_EQ(count(failed, "<tr class=\"cell failed\""), 1u);
  EXPECT_NE(failed.find("FAILED: measure: phase &#39;measure&#39; ran out"), std::string::npos);
}

TEST_F(ReportTest, LoadlabReportRebuildsTheDerivedFilesFromResultJson) {
  TempDir copy;
  for (const char* f : {"result.json", "report.html", "matrix.md", "matrix.csv"})
    fs::copy_file(run_dir() / f, copy.path() / (std::string("orig-") + f));
  fs::copy_file(run_dir() / "result.json", copy.path() / "result.json");
  auto r = run_command({bin("loadlab"), "report", copy.path().string()});
  ASSERT_EQ(r.code, 0) << r.output_tail;
  EXPECT_NE(r.stdout_text.find("report.html"), std::string::npos);
  for (const char* f : {"report.html", "matrix.md", "matrix.csv"})
    EXPECT_EQ(read_file(copy.path() / f), read_file(copy.path() / (std::string("orig-") + f))) << f;
  EXPECT_EQ(read_file(copy.path() / "result.json"),
            read_file(copy.path() / "orig-result.json"));  // only read
}

TEST_F(ReportTest, LoadlabReportOfSomethingElseExitsTwoNamingTheFileAndPath) {
  TempDir d;
  auto result = read_json_file((run_dir() / "result.json").string());
  result["cells"][2]["median"]["qps"] = "fast";
  auto path = d.file("result.json", result.dump());
  auto r = run_command({bin("loadlab"), "report", d.path().string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output_tail.find(path + ": /cells/2: is not a loadlab.v1.CellResult"), std::string::npos)
      << r.output_tail;
  EXPECT_FALSE(fs::exists(d.path() / "report.html"));
  result["cells"][2] = read_json_file((run_dir() / "result.json").string())["cells"][2];
  result["cells"][2]["cell"]["axes"][0]["axis"] = "colour";
  d.file("result.json", result.dump());
  r = run_command({bin("loadlab"), "report", path});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output_tail.find("/cells/2/cell/axes/0/axis: unknown axis \"colour\""), std::string::npos)
      << r.output_tail;
  r = run_command({bin("loadlab"), "report", d.file("other.json", R"({"name": "a scenario"})")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output_tail.find("other.json: /cells: must be an array"), std::string::npos) << r.output_tail;
  r = run_command({bin("loadlab"), "report", (d.path() / "nowhere").string()});
  EXPECT_EQ(r.code, 2) << r.output_tail;
}

// ---- a real browser ----

const char* kChromium = "/usr/bin/chromium";

// True while some process's command line holds `marker` (our Chromium's profile folder).
bool processes_with(const std::string& marker) {
  for (auto& p : fs::directory_iterator("/proc")) {
    std::string cmdline = read_file(p.path() / "cmdline");
    if (cmdline.find(marker) != std::string::npos) return true;
  }
  return false;
}

// Headless Chromium on `page` with `extra` flags, in a profile folder of its own, bounded in
// time; its whole process group is gone when this returns (run_command's ChildProcess).
testing::RunOutput chromium(const TempDir& profile, const fs::path& page, std::vector<std::string> extra) {
  std::vector<std::string> argv{kChromium,
                                "--headless",
                                "--no-sandbox",
                                "--disable-gpu",
                                "--no-first-run",
                                "--disable-extensions",
                                "--hide-scrollbars",
                                "--disable-crash-reporter",
                                "--disable-dev-shm-usage",
                                "--user-data-dir=" + (profile.path() / "profile").string()};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back("file://" + fs::absolute(page).string());
  auto r = run_command(argv, std::chrono::seconds(90));
  EXPECT_FALSE(processes_with((profile.path() / "profile").string()))
      << "a Chromium process outlived its run";
  return r;
}

// "W H COLOURS INK": the PNG's size, its number of distinct colours and the share of pixels
// that are not the page's background (the top-left pixel).
const char* kPngStats = R"(import sys
from PIL import Image
im = Image.open(sys.argv[1]).convert("RGB")
px = list(im.getdata())
bg = px[0]
ink = sum(1 for p in px if sum(abs(a - b) for a, b in zip(p, bg)) > 30) / len(px)
print(im.width, im.height, len(set(px)), round(ink, 4)))";

struct PngStats {
  int width = 0, height = 0, colours = 0;
  double ink = 0;
  std::string text;  // as printed, for a failure's message
};

PngStats png_stats(const fs::path& png) {
  auto r = run_python(kPngStats, {png.string()});
  EXPECT_EQ(r.code, 0) << r.output_tail;
  PngStats s;
  s.text = r.stdout_text;
  std::istringstream in(r.stdout_text);
  in >> s.width >> s.height >> s.colours >> s.ink;
  return s;
}

TEST_F(ReportTest, ChromiumRendersTheMatrixAndEveryChartOnAPhoneAndAWideScreen) {
  if (!fs::exists(kChromium))
    GTEST_SKIP() << "chromium is not installed (make deps installs it): not rendered";
  TempDir profile;
  const fs::path page = run_dir() / "report.html";
  auto dom = chromium(profile, page, {"--dump-dom"});
  ASSERT_EQ(dom.code, 0) << dom.output_tail;
  const std::string& d = dom.stdout_text;
  ASSERT_NE(d.find("id=\"matrix-table\""), std::string::npos) << dom.output_tail;
  EXPECT_EQ(count(d, "<tr class=\"cell "), kCells);
  EXPECT_EQ(std::regex_search(d, std::regex("<tr class=\"cell [^\"]*\" data-key=\"beast-2t/d2/t4\">")), true);
  EXPECT_EQ(count(d, "<svg class=\"chart\""), kCharts);
  for (const char* metric :
       {"qps", "p50_ms", "p99_ms", "server_cpu_pct", "client_cpu_pct", "server_mb", "client_mb"})
    for (const char* panel : {"delay ms 0", "delay ms 2"})
      EXPECT_EQ(count(d, std::string("data-metric=\"") + metric + "\" data-panel=\"" + panel + "\""), 1u)
          << metric << ", " << panel;
  // Every chart has its two lines (one per target), each with a point per thread count.
  EXPECT_EQ(count(d, "<g class=\"series\""), kCharts * 2);
  EXPECT_EQ(count(d, "<circle"), kCharts * 6);

  if (!python_has("PIL"))
    GTEST_SKIP() << "python3-pil is not installed (make deps installs it): PNGs not checked";
  for (auto [w, h] : {std::pair{390, 844}, std::pair{1600, 1000}}) {
    const fs::path png = profile.path() / ("report-" + std::to_string(w) + ".png");
    auto shot = chromium(
        profile, page,
        {"--screenshot=" + png.string(), "--window-size=" + std::to_string(w) + "," + std::to_string(h)});
    ASSERT_EQ(shot.code, 0) << shot.output_tail;
    ASSERT_TRUE(fs::exists(png)) << shot.output_tail;
    const auto stats = png_stats(png);
    EXPECT_EQ(stats.width, w);
    EXPECT_EQ(stats.height, h);
    EXPECT_GT(stats.colours, 16) << stats.text;  // text, table rules, header shading
    EXPECT_GT(stats.ink, 0.01) << stats.text;    // not a blank page
  }
}

TEST_F(ReportTest, ChromiumRendersTheReportOfAFailedRun) {
  if (!fs::exists(kChromium))
    GTEST_SKIP() << "chromium is not installed (make deps installs it): not rendered";
  TempDir profile;
  auto dom = chromium(profile, failing_dir() / "report.html", {"--dump-dom"});
  ASSERT_EQ(dom.code, 0) << dom.output_tail;
  EXPECT_EQ(count(dom.stdout_text, "<tr class=\"cell failed\""), 1u);
  EXPECT_NE(dom.stdout_text.find("FAILED: measure:"), std::string::npos);
}

// `loadlab report --index`: three real nights of a folder of two scenarios (as loadlab-nightly
// runs them), a night whose result.json is broken and the `latest` link, into one page: the
// nights newest first, each scenario's verdicts linked to its report, the broken one said, and
// Chromium renders it.
TEST(NightIndex, ThreeNightsOfTwoScenariosNewestFirstLinkedToTheirReports) {
  TempDir dir;
  fs::create_directories(dir.path() / "scenarios");
  for (const char* name : {"alpha", "beta"})
    dir.file(std::string("scenarios/") + name + ".json",
             std::string(R"({"name": ")") + name + R"(", "targets": [{"name": "beast", "builtin": "hello",
             "server_threads": 1}], "matrix": {"delay_ms": [5], "threads": [2]},
             "load": {"requests_per_thread": 20}, "execution": {"remeasure_wait_s": 0.5}})");
  const auto runs = dir.path() / "runs";
  for (int n = 1; n <= 3; ++n) {
    auto r = run_command({bin("loadlab"), "--log-level", "warn", "run", (dir.path() / "scenarios").string(),
                          "--out", (runs / ("night-" + std::to_string(n))).string(), "--history",
                          (dir.path() / "h.db").string(), "--baseline", "history", "--quiet"});
    ASSERT_EQ(r.code, 0) << r.output_tail;
  }
  fs::create_directories(runs / "broken");
  dir.file("runs/broken/result.json", "{\"cells\": [");
  fs::create_directory_symlink("night-3", runs / "latest");
  auto r = run_command({bin("loadlab"), "report", "--index", runs.string()});
  ASSERT_EQ(r.code, 0) << r.output_tail;
  EXPECT_NE(r.stdout_text.find("index.html (4 nights)"), std::string::npos) << r.stdout_text;
  const auto html = read_file(runs / "index.html");
  const auto n3 = html.find("<h2>night-3</h2>"), n2 = html.find("<h2>night-2</h2>"),
             n1 = html.find("<h2>night-1</h2>"), broken = html.find("<h2>broken</h2>");
  ASSERT_NE(n1, std::string::npos) << html;
  EXPECT_LT(n3, n2);
  EXPECT_LT(n2, n1);
  EXPECT_LT(n1, broken);  // no start time: after every dated night
  EXPECT_EQ(count(html, "<h2>"), 4u);
  EXPECT_EQ(html.find("latest"), std::string::npos);
  for (int n = 1; n <= 3; ++n)
    for (const char* name : {"alpha", "beta"}) {
      const auto link = "night-" + std::to_string(n) + "/" + name + "/report.html";
      EXPECT_NE(html.find("<a href=\"" + link + "\">" + name + "</a>"), std::string::npos) << link;
      EXPECT_TRUE(fs::exists(runs / link)) << link;
    }
  // No regression anywhere (6 runs and the broken one): three nights of unchanged code, judged
  // against at most two earlier ones (same, noise or inconclusive, as the machine allows).
  EXPECT_EQ(count(html, "<td class=\"num regression\"></td>"), 7u) << html;
  EXPECT_EQ(count(html, ">qps</td></tr>"), 6u) << html;
  EXPECT_NE(html.find("<tr class=\"failed\"><td>broken</td>"), std::string::npos) << html;
  EXPECT_EQ(run_command({bin("loadlab"), "report"}).code, 2);
  EXPECT_EQ(run_command({bin("loadlab"), "report", "--index", (dir.path() / "none").string()}).code, 2);

  if (!fs::exists(kChromium))
    GTEST_SKIP() << "chromium is not installed (make deps installs it): not rendered";
  TempDir profile;
  auto dom = chromium(profile, runs / "index.html", {"--dump-dom"});
  ASSERT_EQ(dom.code, 0) << dom.output_tail;
  EXPECT_EQ(count(dom.stdout_text, "<table>"), 4u);
  EXPECT_EQ(count(dom.stdout_text, "/report.html\">"), 6u);
  if (!python_has("PIL"))
    GTEST_SKIP() << "python3-pil is not installed (make deps installs it): PNG not checked";
  const auto png = profile.path() / "index.png";
  auto shot =
      chromium(profile, runs / "index.html", {"--screenshot=" + png.string(), "--window-size=1280,900"});
  ASSERT_EQ(shot.code, 0) << shot.output_tail;
  const auto stats = png_stats(png);
  EXPECT_EQ(stats.width, 1280);
  EXPECT_GT(stats.ink, 0.01) << stats.text;  // not a blank page
}

}  // namespace
}  // namespace loadlab
