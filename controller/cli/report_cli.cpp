#include "cli/report_cli.hpp"

#include <algorithm>
#include <sstream>

#include "loadlab/proto/json.hpp"
#include "loadlab/shared/json_input.hpp"
#include "loadlab/shared/logging.hpp"
#include "report/report_html.hpp"
#include "run/run_folder.hpp"
#include "scenario/scenario.hpp"

namespace loadlab::controller {

namespace fs = std::filesystem;

namespace {

CellResult stored_cell(const nlohmann::json& j, const std::string& at) {
  v1::CellResult p;
  try {
    proto::from_json(j.dump(), &p);
  } catch (const InputError& e) {
    throw InputError(at, "is not a loadlab.v1.CellResult (" + e.message() + ")");
  }
  for (int i = 0; i < p.cell().axes_size(); ++i)
    if (!find_knob(p.cell().axes(i).axis()))
      throw InputError(
          at + "/cell/axes/" + std::to_string(i) + "/axis",
          "unknown axis \"" + p.cell().axes(i).axis() + "\"; known: " + [] {
            std::string all;
            for (auto& k : knobs()) all += (all.empty() ? "" : ", ") + std::string(k.name);
            return all;
          }());
  return cell_from_proto(p, cell_of(p.cell()));
}

fs::path result_file(const std::string& dir_or_file) {
  return fs::is_directory(dir_or_file) ? fs::path(dir_or_file) / "result.json" : fs::path(dir_or_file);
}

fs::path folder_of(const fs::path& result) {
  return result.parent_path().empty() ? fs::path(".") : result.parent_path();
}

// Each profiled cell of `now`, drawn against the same cell of `base`.
std::vector<ProfileDiff> compare_diffs(const StoredRun& base, const fs::path& base_folder,
                                       const StoredRun& now, const fs::path& now_folder,
                                       const std::string& base_name) {
  std::vector<ProfileDiff> out;
  for (const auto& c : now.cells) {
    if (!c.cell.profile) continue;
    ProfileDiff d{c.cell.key(), base_name, summed_server_stacks(now_folder, c), {}, {}};
    const auto b = std::find_if(base.cells.begin(), base.cells.end(),
                                [&](const CellResult& x) { return x.cell.key() == c.cell.key(); });
    if (b != base.cells.end()) d.before = summed_server_stacks(base_folder, *b);
    if (d.after.empty())
      d.none = "this run kept no server profile of it";
    else if (b == base.cells.end())
      d.none = base_name + " has no such cell";
    else if (d.before.empty())
      d.none =
          base_name + " kept no server profile of it" + (b->cell.profile ? "" : " (it was not profiled)");
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace

void write_compare_report(const std::string& file, const std::string& base, const std::string& now,
                          const v1::Verdicts& verdicts) {
  const fs::path base_result = result_file(base), now_result = result_file(now);
  const StoredRun b = read_stored_run(base_result.string()), n = read_stored_run(now_result.string());
  ReportSections sections;
  sections.verdicts = verdicts;
  sections.profiles = read_cell_profiles(folder_of(now_result), n.cells);
  sections.profile_diffs =
      compare_diffs(b, folder_of(base_result), n, folder_of(now_result), "the base run " + base);
  std::ostringstream html;
  write_html_report(html, n.header, n.title + " against " + base, n.cells, sections);
  write_whole_file(file, html.str());
}

StoredRun read_stored_run(const std::string& result_json) {
  try {
    StoredRun run;
    run.header = read_json_file(result_json);
    if (!run.header.is_object()) throw InputError("", "must be a loadlab result.json (a JSON object)");
    if (!run.header.contains("cells") || !run.header["cells"].is_array())
      throw InputError("/cells", "must be an array of loadlab.v1.CellResult; is this a loadlab result.json?");
    const auto& cells = run.header["cells"];
    for (size_t i = 0; i < cells.size(); ++i)
      run.cells.push_back(stored_cell(cells[i], "/cells/" + std::to_string(i)));
    for (size_t i = 1; i < run.cells.size(); ++i)
      if (run.cells[i].cell.axes.size() != run.cells[0].cell.axes.size())
        throw InputError("/cells/" + std::to_string(i) + "/cell/axes", "must name the same axes as /cells/0");
    run.header.erase("cells");
    const auto& scenario = run.header.contains("scenario") ? run.header["scenario"] : nlohmann::json();
    run.title = scenario.is_object() && scenario.contains("name") && scenario["name"].is_string()
                    ? scenario["name"].get<std::string>()
                    : fs::path(result_json).parent_path().filename().string();
    return run;
  } catch (const InputError& e) {
    throw e.in_file(result_json);
  }
}

int report_command(const std::string& dir, std::ostream& out) {
  fs::path result = dir;
  if (fs::is_directory(result)) result /= "result.json";
  StoredRun run = read_stored_run(result.string());
  const fs::path folder = result.parent_path().empty() ? fs::path(".") : result.parent_path();
  component_logger("report")->debug("{}: {} cells", result.string(), run.cells.size());
  write_result_views(folder, run.header, run.title, run.cells);
  out << "wrote " << (folder / "report.html").string() << ", " << (folder / "matrix.md").string() << ", "
      << (folder / "matrix.csv").string() << "\n";
  return 0;
}

}  // namespace loadlab::controller
