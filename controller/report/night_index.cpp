#include "report/night_index.hpp"

#include <algorithm>
#include <fstream>

#include "judge/compare.hpp"
#include "judge/verdict_kind.hpp"
#include "loadlab/shared/environment_error.hpp"
#include "loadlab/shared/format.hpp"
#include "loadlab/shared/input_error.hpp"
#include "loadlab/shared/json_input.hpp"
#include "report/report_html.hpp"

namespace loadlab::controller {

namespace fs = std::filesystem;

// Named, not anonymous: the controller is compiled in unity batches.
namespace night_index_detail {

using nlohmann::json;

constexpr Verdict kVerdictOrder[] = {Verdict::kRegression, Verdict::kImprovement, Verdict::kSame,
                                     Verdict::kNoise, Verdict::kInconclusive};

std::string text(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

// The verdicts of one set ("verdicts" or "ab") into the run's counts and its worst change.
void count_verdicts(const json& set, IndexedRun& run) {
  if (!set.is_object() || !set.contains("cells") || !set["cells"].is_array()) return;
  const auto metric = text(set, "metric").empty() ? std::string("qps") : text(set, "metric");
  if (run.metric.empty()) run.metric = metric;
  const bool higher = metric_higher_is_better(metric);
  for (const auto& c : set["cells"]) {
    ++run.verdicts[text(c, "verdict")];
    if (!c.contains("change_pct") || !c["change_pct"].is_number()) continue;
    const double change = c["change_pct"].get<double>();
    const auto worse = [higher](double x) { return higher ? -x : x; };
    if (!run.worst_change || worse(change) > worse(*run.worst_change)) {
      run.worst_change = change;
      run.worst_cell = text(c, "key");
    }
  }
}

IndexedRun read_run(const fs::path& folder, const fs::path& index_dir) {
  IndexedRun run;
  run.scenario = folder.filename().string();
  if (fs::exists(folder / "report.html"))
    run.report = fs::relative(folder / "report.html", index_dir).string();
  json result;
  try {
    result = read_json_file((folder / "result.json").string());
  } catch (const std::exception& e) {
    run.problem = e.what();
    return run;
  }
  if (!result.is_object()) {
    run.problem = "result.json is not a JSON object";
    return run;
  }
  if (auto name = text(result.value("scenario", json::object()), "name"); !name.empty()) run.scenario = name;
  run.started_at = text(result, "started_at");
  run.finished = !text(result, "finished_at").empty();
  if (result.contains("cells") && result["cells"].is_array())
    for (const auto& c : result["cells"]) ++run.cells, run.failed += !(c.is_object() && c.value("ok", false));
  for (const char* set : {"verdicts", "ab"})
    if (result.contains(set)) count_verdicts(result[set], run);
  return run;
}

// The folders of `dir` that are folders (not links), by name.
std::vector<fs::path> subfolders(const fs::path& dir) {
  std::vector<fs::path> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (!e.is_symlink() && e.is_directory()) found.push_back(e.path());
  std::sort(found.begin(), found.end());
  return found;
}

std::string verdict_cell(const IndexedRun& run, Verdict verdict) {
  auto it = run.verdicts.find(verdict_text(verdict));
  return it == run.verdicts.end() || it->second == 0 ? "" : std::to_string(it->second);
}

void write_run_row(std::ostream& o, const IndexedRun& run) {
  const bool bad =
      run.verdicts.count(verdict_text(Verdict::kRegression)) || run.failed || !run.problem.empty();
  o << "<tr" << (bad ? " class=\"failed\"" : "") << "><td>"
    << (run.report.empty()
            ? html_escape(run.scenario)
            : "<a href=\"" + html_escape(run.report) + "\">" + html_escape(run.scenario) + "</a>")
    << "</td><td class=\"num\">" << run.cells << "</td><td class=\"num\">"
    << (run.failed ? std::to_string(run.failed) : "") << "</td>";
  for (const Verdict v : kVerdictOrder)
    o << "<td class=\"num" << (v == Verdict::kRegression ? " regression" : "") << "\">"
      << verdict_cell(run, v) << "</td>";
  o << "<td class=\"num\">" << (run.worst_change ? html_escape(fixed_text(*run.worst_change, 1) + " %") : "")
    << "</td><td>" << html_escape(run.worst_cell) << "</td><td class=\"status\">"
    << html_escape(!run.problem.empty() ? run.problem
                   : !run.finished      ? "not finished"
                   : run.metric.empty() ? "not judged"
                                        : run.metric)
    << "</td></tr>\n";
}

void write_night(std::ostream& o, const IndexedNight& night) {
  o << "<h2>" << html_escape(night.name) << "</h2>\n";
  if (!night.started_at.empty())
    o << "<p class=\"desc\">started " << html_escape(night.started_at) << "</p>\n";
  o << "<div class=\"scroll\"><table><thead><tr><th>scenario</th><th class=\"num\">cells</th>"
       "<th class=\"num\">failed</th>";
  for (const Verdict v : kVerdictOrder) o << "<th class=\"num\">" << verdict_name(v) << "</th>";
  o << "<th class=\"num\">worst change</th><th>in cell</th><th>metric</th></tr></thead><tbody>\n";
  for (const auto& run : night.runs) write_run_row(o, run);
  o << "</tbody></table></div>\n";
}

}  // namespace night_index_detail

std::vector<IndexedNight> index_nights(const fs::path& dir) {
  using namespace night_index_detail;
  std::vector<IndexedNight> nights;
  for (const auto& folder : subfolders(dir)) {
    IndexedNight night{folder.filename().string(), "", {}};
    if (fs::exists(folder / "result.json")) night.runs.push_back(read_run(folder, dir));
    for (const auto& sub : subfolders(folder))
      if (fs::exists(sub / "result.json")) night.runs.push_back(read_run(sub, dir));
    if (night.runs.empty()) continue;  // not a run folder
    for (const auto& run : night.runs)
      if (!run.started_at.empty() && (night.started_at.empty() || run.started_at < night.started_at))
        night.started_at = run.started_at;
    nights.push_back(std::move(night));
  }
  std::stable_sort(nights.begin(), nights.end(), [](const IndexedNight& a, const IndexedNight& b) {
    return a.started_at != b.started_at ? a.started_at > b.started_at : a.name > b.name;
  });
  return nights;
}

void write_night_index(std::ostream& o, const std::string& title, const std::vector<IndexedNight>& nights) {
  using namespace night_index_detail;
  int regressions = 0, failed = 0;
  for (const auto& n : nights)
    for (const auto& r : n.runs)
      regressions += r.verdicts.count(verdict_text(Verdict::kRegression)) ? 1 : 0, failed += r.failed ? 1 : 0;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
       "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
    << "<title>" << html_escape(title) << " · loadlab nights</title><style>" << report_style()
    << "</style></head><body><main>\n<h1>" << html_escape(title) << "</h1>\n<p class=\"desc\">"
    << nights.size() << " nights, newest first. Runs with a regression: " << regressions
    << "; with failed cells: " << failed << ". Each scenario links to its report.</p>\n";
  for (const auto& night : nights) write_night(o, night);
  o << "<footer>loadlab report --index</footer>\n</main></body></html>\n";
}

int index_command(const std::string& dir, std::ostream& out) {
  if (!fs::is_directory(dir)) throw InputError("--index", dir + " is not a folder of runs");
  const auto nights = index_nights(dir);
  const auto page = fs::path(dir) / "index.html";
  {
    std::ofstream f(page);
    auto folder = fs::absolute(dir).lexically_normal();
    if (folder.filename().empty()) folder = folder.parent_path();  // "runs/"
    write_night_index(f, folder.filename().string(), nights);
    f.close();
    if (!f) throw system_failure("cannot write " + page.string());
  }
  out << "wrote " << page.string() << " (" << nights.size() << " nights)\n";
  return 0;
}

}  // namespace loadlab::controller
