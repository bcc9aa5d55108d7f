#include "cli/report_cli.hpp"

#include "loadlab/proto/json.hpp"
#include "loadlab/shared/json_input.hpp"
#include "loadlab/shared/logging.hpp"
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

}  // namespace

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
