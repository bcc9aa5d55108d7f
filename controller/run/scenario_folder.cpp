#include "run/scenario_folder.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>

#include "loadlab/shared/exit_status.hpp"
#include "loadlab/shared/input_error.hpp"
#include "loadlab/shared/logging.hpp"
#include "scenario/plan.hpp"
#include "scenario/scenario.hpp"

namespace loadlab::controller {

namespace fs = std::filesystem;

namespace {

// One scenario file of the folder: its scenario, or why it is left out.
struct Entry {
  std::string file;
  std::optional<Scenario> scenario;
  std::string problem;  // set when the scenario is not run
  int status = 0;
  std::string run_folder;
};

std::string error_line(const std::string& file, const InputError& e) {
  return (e.file().empty() ? file : e.file()) + ": " + e.what();
}

// Where a file of the folder resolves when that is outside the root (its folder, or
// `include_root`): a scenario repository's link must not read a file of the machine into a run.
std::string outside_problem(const std::string& file, const std::string& include_root) {
  const std::string root = include_root_of(file, include_root);
  const auto real = resolves_outside(file, root);
  if (!real) return "";
  return file + ": resolves to " + *real + ", outside " +
         (include_root.empty() ? "the folder " + root +
                                     " (a scenario of a folder must be a file of it; "
                                     "--include-root names another root)"
                               : "the include root " + root + " (--include-root)");
}

// Each file's scenario, or its error; a name that an earlier file has is an error too.
std::vector<Entry> check_all(const std::vector<std::string>& files, const std::vector<std::string>& overrides,
                             const std::string& include_root) {
  std::vector<Entry> entries;
  std::map<std::string, std::string> names;  // scenario name → its first file
  for (auto& file : files) {
    Entry e;
    e.file = file;
    e.problem = outside_problem(file, include_root);  // such a file is not read
    try {
      if (e.problem.empty()) e.scenario = load_scenario_file(file, overrides, include_root);
    } catch (const InputError& x) {
      e.problem = error_line(file, x);
    }
    if (e.scenario) {
      auto [first, fresh] = names.emplace(e.scenario->name, file);
      if (!fresh) {
        e.problem = file + ": /name: \"" + e.scenario->name + "\" names " + first->second +
                    " too; scenarios of one folder need names of their own (their runs and histories "
                    "are told apart by name)";
        e.scenario.reset();
      }
    }
    if (!e.problem.empty()) e.status = exit_status::kBadInput;
    entries.push_back(std::move(e));
  }
  return entries;
}

std::string status_text(int status) {
  switch (status) {
    case 0:
      return "ok";
    case exit_status::kRegression:
      return "regression";
    case exit_status::kBadInput:
      return "bad input";
    case exit_status::kCellsFailed:
      return "failed cells";
    case exit_status::kLabUnusable:
      return "lab unusable";
    default:
      return status > 128 ? "stopped by signal " + std::to_string(status - 128)
                          : "status " + std::to_string(status);
  }
}

}  // namespace

std::vector<std::string> scenario_files_in(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const auto& p = it->path();
    if (p.extension() == ".json" && p.filename().string()[0] != '.' && it->is_regular_file(ec))
      files.push_back(p.string());
  }
  if (ec) throw InputError("", "cannot list the folder " + dir + ": " + ec.message()).in_file(dir);
  if (files.empty())
    throw InputError("", "the folder holds no scenario file (*.json; subfolders are not searched)")
        .in_file(dir);
  std::sort(files.begin(), files.end());
  return files;
}

int run_scenario_folder(const RunOptions& options, std::ostream& out, std::ostream& err,
                        std::vector<std::string>* run_folders) {
  if (!options.baseline.empty() && options.baseline != kLastGood && options.baseline != kHistory)
    throw InputError("--baseline",
                     "with a folder of scenarios only " + std::string(kHistory) +
                         " is allowed (each scenario's cells against their own nights in --history), got \"" +
                         options.baseline + "\"");
  auto entries = check_all(scenario_files_in(options.scenario_path), options.overrides, options.include_root);
  for (auto& e : entries)
    if (!e.problem.empty()) err << "loadlab: " << e.problem << "\n";
  size_t runnable =
      std::count_if(entries.begin(), entries.end(), [](auto& e) { return e.scenario.has_value(); });
  auto log = component_logger("controller");
  log->info("{}: {} scenario files, {} to run", options.scenario_path, entries.size(), runnable);
  int worst = 0;
  for (auto& e : entries) {
    if (e.scenario && !(options.stop && options.stop->load())) {
      RunOptions one = options;
      one.scenario_path = e.file;
      if (!options.out_dir.empty()) one.out_dir = (fs::path(options.out_dir) / e.scenario->name).string();
      out << "\n== " << e.file << " (" << e.scenario->name << ")\n";
      try {
        e.status = run_scenario(one, out, &e.run_folder);
      } catch (const InputError& x) {
        err << "loadlab: " << error_line(e.file, x) << "\n";
        e.status = 2;
      } catch (const std::exception& x) {  // EnvironmentError: the lab; anything else alike
        err << "loadlab: " << e.file << ": " << x.what() << "\n";
        e.status = exit_status::kLabUnusable;
      }
    }
    worst = exit_status::worst(worst, e.status);
    if (run_folders && !e.run_folder.empty()) run_folders->push_back(e.run_folder);
  }
  const int stopped_by = options.stop ? options.stop->load() : 0;
  if (stopped_by) worst = exit_status::worst(worst, exit_status::kSignalBase + stopped_by);
  out << "\n" << options.scenario_path << ": " << entries.size() << " scenario files\n";
  for (auto& e : entries) {
    const bool ran = !e.run_folder.empty() || e.status != 0 || !stopped_by;
    out << "  " << e.file << ": " << (ran ? status_text(e.status) : "not run (stopped)")
        << (e.run_folder.empty() ? "" : ", " + e.run_folder) << "\n";
  }
  out << "exit status " << worst << "\n";
  return worst;
}

int validate_scenario_folder(const std::string& dir, const std::vector<std::string>& overrides,
                             const std::string& include_root, std::ostream& out, std::ostream& err) {
  int status = 0;
  for (auto& e : check_all(scenario_files_in(dir), overrides, include_root)) {
    if (!e.problem.empty()) {
      err << "loadlab: " << e.problem << "\n";
      status = 2;
      continue;
    }
    out << e.file << ": ok, " << e.scenario->name << ", " << expand(*e.scenario).size() << " cells × "
        << e.scenario->repetitions << " repetitions";
    if (e.scenario->files.size() > 1) out << " (" << e.scenario->files.size() - 1 << " included files)";
    out << "\n";
  }
  return status;
}

}  // namespace loadlab::controller
