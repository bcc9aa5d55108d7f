#include "report/ci_results.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "judge/verdict_kind.hpp"
#include "loadlab/shared/environment_error.hpp"
#include "loadlab/shared/json_input.hpp"
#include "report/report_html.hpp"

namespace loadlab::controller {

// Named, not anonymous: the controller is compiled in unity batches, where other files' helpers
// of the same names would clash.
namespace ci_detail {

// Text fit for an XML attribute or element: markup escaped as in report.html, and the control
// characters XML 1.0 cannot hold (an agent may quote a target's output) dropped.
std::string xml(const std::string& text) {
  std::string kept;
  for (unsigned char c : text)
    if (c >= 0x20 || c == '\t' || c == '\n' || c == '\r') kept += static_cast<char>(c);
  return html_escape(kept);
}

// A Markdown table cell: one line, no column break.
std::string md(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n' || c == '\r')
      out += ' ';
    else
      out += c;
  }
  return out;
}

std::string scenario_name(const nlohmann::json& result) {
  if (result.contains("scenario") && result["scenario"].is_object())
    return result["scenario"].value("name", std::string("loadlab"));
  return "loadlab";
}

std::string cell_key(const nlohmann::json& cell) {
  return cell.contains("cell") ? cell["cell"].value("key", std::string()) : std::string();
}

// Seconds the cell's repetitions measured (each one's window).
double cell_seconds(const nlohmann::json& cell) {
  double s = 0;
  if (cell.contains("repetitions") && cell["repetitions"].is_array())
    for (const auto& r : cell["repetitions"]) s += r.value("duration_s", 0.0);
  return s;
}

// The run's judged verdict sets: the baseline's ("verdicts") and the A/B's ("ab"), unless a
// nightly A/B's verdicts stand in the baseline's already (CellVerdict.by_history).
std::vector<std::pair<std::string, const nlohmann::json*>> verdict_sets(const nlohmann::json& result) {
  std::vector<std::pair<std::string, const nlohmann::json*>> sets;
  bool decided = false;
  for (const char* name : {"verdicts", "ab"}) {
    if (!result.contains(name) || !result[name].is_object() || !result[name].contains("cells") ||
        (decided && std::string(name) == "ab"))
      continue;
    sets.emplace_back(name, &result[name]);
    for (const auto& c : result[name]["cells"]) decided = decided || c.contains("by_history");
  }
  return sets;
}

struct Counts {
  int tests = 0, failures = 0, errors = 0, skipped = 0;
};

void cell_cases(const nlohmann::json& result, const std::string& suite, Counts& n, std::ostream& out) {
  if (!result.contains("cells")) return;
  for (const auto& cell : result["cells"]) {
    ++n.tests;
    out << "    <testcase classname=\"" << xml(suite) << "\" name=\"" << xml(cell_key(cell)) << "\" time=\""
        << cell_seconds(cell) << "\"";
    if (cell.value("ok", false)) {
      out << "/>\n";
      continue;
    }
    ++n.errors;
    const auto error = cell.value("error", std::string("failed"));
    out << ">\n      <error type=\"failed\" message=\"" << xml(error) << "\">" << xml(error) << "</error>\n"
        << "    </testcase>\n";
  }
}

void verdict_cases(const nlohmann::json& result, const std::string& suite, Counts& n, std::ostream& out) {
  for (const auto& [set, verdicts] : verdict_sets(result)) {
    for (const auto& v : (*verdicts)["cells"]) {
      ++n.tests;
      const auto verdict = v.value("verdict", std::string());
      const auto kind = verdict_named(verdict);
      const auto message = verdict + ": " + v.value("reason", std::string());
      out << "    <testcase classname=\"" << xml(suite + "." + set) << "\" name=\"" << xml(v.value("key", ""))
          << "\">\n";
      if (kind == Verdict::kRegression) {
        ++n.failures;
        out << "      <failure type=\"regression\" message=\"" << xml(message) << "\">" << xml(message)
            << "</failure>\n";
      } else if (kind == Verdict::kInconclusive) {
        ++n.skipped;
        out << "      <skipped message=\"" << xml(message) << "\"/>\n";
      } else {
        out << "      <system-out>" << xml(message) << "</system-out>\n";
      }
      out << "    </testcase>\n";
    }
  }
}

std::string percent(const nlohmann::json& v, const char* field, bool sign) {
  if (!v.contains(field) || !v[field].is_number()) return "";
  char text[32];
  std::snprintf(text, sizeof text, sign ? "%+.1f %%" : "%.1f %%", v[field].get<double>());
  return text;
}

std::string figure(const nlohmann::json& v, const char* field) {
  if (!v.contains(field) || !v[field].is_number()) return "";
  char text[32];
  const double x = v[field].get<double>();  // whole numbers from 100 up, else 3 significant digits
  std::snprintf(text, sizeof text, std::abs(x) >= 100 ? "%.0f" : "%.3g", x);
  return text;
}

// Regressions first, then improvements, then the rest, each in the run's order.
int rank(const std::string& verdict) {
  const auto v = verdict_named(verdict);
  return v == Verdict::kRegression ? 0 : v == Verdict::kFailed ? 1 : v == Verdict::kImprovement ? 2 : 3;
}

void verdict_table(const nlohmann::json& verdicts, std::ostream& out) {
  std::vector<const nlohmann::json*> rows;
  for (const auto& v : verdicts["cells"]) rows.push_back(&v);
  std::stable_sort(rows.begin(), rows.end(), [](auto* a, auto* b) {
    return rank(a->value("verdict", "")) < rank(b->value("verdict", ""));
  });
  out << "\n| cell | verdict | change | mdc | figure | baseline | why |\n|---|---|---|---|---|---|---|\n";
  for (size_t i = 0; i < rows.size() && i < kSummaryRows; ++i) {
    const auto& v = *rows[i];
    const auto verdict = v.value("verdict", std::string());
    out << "| " << md(v.value("key", "")) << " | "
        << (verdict_named(verdict) == Verdict::kRegression ? "**" + verdict + "**" : verdict) << " | "
        << percent(v, "change_pct", true) << " | " << percent(v, "mdc_pct", false) << " | "
        << figure(v, "value") << " | " << figure(v, "baseline") << " | " << md(v.value("reason", ""))
        << " |\n";
  }
  if (rows.size() > kSummaryRows)
    out << "\n" << rows.size() - kSummaryRows << " more cells: see the report.\n";
}

std::string plural(int n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

void run_summary(const CiRun& run, std::ostream& out) {
  const auto& result = run.result;
  int cells = 0, failed = 0;
  if (result.contains("cells"))
    for (const auto& c : result["cells"]) ++cells, failed += !c.value("ok", false);
  out << "### loadlab: " << md(scenario_name(result)) << "\n\n"
      << plural(cells, "cell") << ", " << failed << " failed";
  for (const auto& [set, verdicts] : verdict_sets(result))
    out << "; "
        << (set == "ab" ? "A/B" : "against " + md(verdicts->value("baseline", std::string("the baseline"))))
        << ": " << plural(verdicts->value("regressions", 0), "regression") << " ("
        << verdicts->value("metric", "qps") << ", threshold " << percent(*verdicts, "threshold_pct", false)
        << ")";
  out << "\n";
  for (const auto& [set, verdicts] : verdict_sets(result)) verdict_table(*verdicts, out);
  if (failed) {
    out << "\nFailed cells:\n";
    for (const auto& c : result["cells"])
      if (!c.value("ok", false)) out << "- " << md(cell_key(c)) << ": " << md(c.value("error", "")) << "\n";
  }
  if (!run.report.empty()) out << "\nReport: [" << md(run.report) << "](" << run.report << ")\n";
}

void write_file(const std::string& path, const std::string& text, std::ios::openmode mode) {
  std::ofstream f(path, mode);
  f << text;
  f.close();
  if (!f) throw system_failure("cannot write " + path);
}

}  // namespace ci_detail

std::string junit_xml(const std::vector<CiRun>& runs) {
  using namespace ci_detail;
  std::ostringstream suites;
  Counts all;
  for (const auto& run : runs) {
    const auto suite = scenario_name(run.result);
    Counts n;
    std::ostringstream cases;
    cell_cases(run.result, suite, n, cases);
    verdict_cases(run.result, suite, n, cases);
    suites << "  <testsuite name=\"" << xml(suite) << "\" tests=\"" << n.tests << "\" failures=\""
           << n.failures << "\" errors=\"" << n.errors << "\" skipped=\"" << n.skipped << "\" timestamp=\""
           << xml(run.result.value("started_at", std::string())) << "\">\n"
           << cases.str() << "  </testsuite>\n";
    all.tests += n.tests, all.failures += n.failures, all.errors += n.errors, all.skipped += n.skipped;
  }
  std::ostringstream out;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"loadlab\" tests=\"" << all.tests
      << "\" failures=\"" << all.failures << "\" errors=\"" << all.errors << "\" skipped=\"" << all.skipped
      << "\">\n"
      << suites.str() << "</testsuites>\n";
  return out.str();
}

std::string summary_markdown(const std::vector<CiRun>& runs) {
  using namespace ci_detail;
  std::ostringstream out;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (i) out << "\n";
    run_summary(runs[i], out);
  }
  return out.str();
}

void write_ci_results(const std::vector<CiRun>& runs, const std::string& junit,
                      const std::string& summary_md) {
  using namespace ci_detail;
  if (!junit.empty()) write_file(junit, junit_xml(runs), std::ios::trunc);
  const char* step_summary = std::getenv("GITHUB_STEP_SUMMARY");
  if (summary_md.empty() && (step_summary == nullptr || *step_summary == '\0')) return;
  const auto text = summary_markdown(runs);
  if (!summary_md.empty()) write_file(summary_md, text, std::ios::trunc);
  if (step_summary != nullptr && *step_summary != '\0') write_file(step_summary, text + "\n", std::ios::app);
}

std::vector<CiRun> ci_runs_of(const std::vector<std::string>& run_folders) {
  std::vector<CiRun> runs;
  for (const auto& folder : run_folders) {
    const auto dir = std::filesystem::path(folder);
    if (folder.empty() || !std::filesystem::exists(dir / "result.json")) continue;
    CiRun run{read_json_file((dir / "result.json").string()), ""};
    if (std::filesystem::exists(dir / "report.html")) run.report = (dir / "report.html").string();
    runs.push_back(std::move(run));
  }
  return runs;
}

}  // namespace loadlab::controller
