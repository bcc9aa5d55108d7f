#include "run/run_folder.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "core/errors.hpp"
#include "loadlab/proto/json.hpp"
#include "loadlab/shared/json_input.hpp"
#include "loadlab/shared/logging.hpp"
#include "report/reporters.hpp"
#include "run/provenance.hpp"
#include "scenario/scenario.hpp"

namespace loadlab::controller {

namespace fs = std::filesystem;

void write_whole_file(const fs::path& path, const std::string& content) {
  fs::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << content;
    if (!out.flush()) throw EnvironmentError("cannot write " + tmp.string());
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);  // readers never see half a file
  if (ec) throw EnvironmentError("cannot write " + path.string() + ": " + ec.message());
}

fs::path RunFolder::new_run_path(const fs::path& runs, const std::string& scenario_name,
                                 const std::string& stamp) {
  // The scenario checker allows only such names; this is the second fence, where the path is made.
  if (!is_safe_name(scenario_name))
    throw InputError("/name", "\"" + scenario_name + "\" cannot name a folder inside " + runs.string() +
                                  " (letters, digits, '.', '_', '-', not starting with '.')");
  return runs / (scenario_name + "-" + stamp);
}

void RunFolder::check_free(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return;
  if (!fs::is_directory(dir, ec)) throw InputError("--out", dir.string() + " exists and is not a folder");
  if (!fs::is_empty(dir, ec) || ec)
    throw InputError("--out",
                     dir.string() +
                         " already exists and is not empty; a new run does not write into it. Continue "
                         "the run there with --resume " +
                         dir.string() + ", or choose another folder");
}

RunFolder RunFolder::create(const fs::path& dir, const std::string& scenario_path,
                            const std::string& scenario_text) {
  check_free(dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw EnvironmentError("--out: cannot create " + dir.string() + ": " + ec.message());
  if (scenario_text.empty())
    fs::copy_file(scenario_path, dir / "scenario.json", fs::copy_options::none, ec);
  else
    write_whole_file(dir / "scenario.json", scenario_text);
  if (ec) throw EnvironmentError("cannot copy the scenario into " + dir.string() + ": " + ec.message());
  return RunFolder(dir);
}

RunFolder RunFolder::resume(const fs::path& dir) {
  if (!fs::exists(dir / "scenario.json"))
    throw InputError("--resume", dir.string() + " holds no scenario.json; is it a run folder?");
  RunFolder folder(dir);
  const std::string result = (dir / "result.json").string();
  if (!fs::exists(result)) return folder;  // stopped before its first cell: nothing to keep
  folder.previous_ = read_json_file(result);
  try {
    folder.check_previous_result();
  } catch (const InputError& e) {
    throw e.file().empty() ? e.in_file(result) : e;
  }
  return folder;
}

// result.json's fields that a resumed run reads back, and the scenario it was measured with.
void RunFolder::check_previous_result() const {
  ObjectReader r(previous_, "");
  r.string("lab_path", "");
  r.string("started_at", "");
  if (r.has("resumed_at") && !r.at("resumed_at").is_array())
    throw InputError(r.path("resumed_at"), "must be an array");
  if (!r.has(kScenarioDigest)) {
    component_logger("controller")
        ->warn("{}: no {} (a run of an older loadlab): cannot check that scenario.json is the one it ran",
               (path_ / "result.json").string(), kScenarioDigest);
    return;
  }
  const std::string expected = r.string(kScenarioDigest), found = scenario_digest();
  if (found != expected)
    throw InputError("--resume",
                     scenario_path() + " changed since the run started: its sha256 is " + found +
                         ", the run was measured with " + expected +
                         "; its finished cells would not match the scenario. Restore the file, or "
                         "start a new run in another folder")
        .in_file(scenario_path());
}

std::string RunFolder::scenario_digest() const { return sha256_file(scenario_path()); }

RunFolder::RunFolder(RunFolder&& other) noexcept
    : path_(std::move(other.path_)),
      previous_(std::move(other.previous_)),
      journal_fd_(std::exchange(other.journal_fd_, -1)) {}

RunFolder::~RunFolder() {
  if (journal_fd_ >= 0) close(journal_fd_);
}

std::vector<std::optional<CellResult>> RunFolder::open_journal(const std::vector<Cell>& cells) {
  std::map<std::string, v1::CellResult> done;
  size_t whole_lines = 0;  // bytes up to the last newline: what a torn write did not touch
  {
    std::ifstream in(journal_path(), std::ios::binary);
    std::stringstream whole;
    whole << in.rdbuf();
    const std::string text = whole.str();
    size_t line_no = 0;
    for (size_t at = 0; at < text.size();) {
      size_t end = text.find('\n', at);
      const bool torn = end == std::string::npos;  // a run killed mid-write: never acted on
      std::string line = text.substr(at, torn ? std::string::npos : end - at);
      at = torn ? text.size() : end + 1;
      if (!torn) whole_lines = at;
      ++line_no;
      if (torn || line.empty()) continue;
      v1::CellResult cell;
      try {
        proto::from_json(line, &cell);
        // protobuf reads some lines of the wrong shape ({"repetitions": {}}) as a CellResult of no cell.
        if (cell.cell().key().empty()) throw InputError("", "it names no cell.key");
      } catch (const InputError& e) {
        throw InputError("", journal_path().string() + " line " + std::to_string(line_no) +
                                 " is not a loadlab.v1.CellResult (" + e.message() +
                                 "); was it written by another loadlab version?");
      }
      done[cell.cell().key()] = std::move(cell);
    }
  }
  journal_fd_ = open(journal_path().c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (journal_fd_ < 0) throw EnvironmentError("cannot open " + journal_path().string());
  // A torn last line is cut off, so that the next cell's line starts a line of its own.
  if (ftruncate(journal_fd_, static_cast<off_t>(whole_lines)) != 0)
    throw EnvironmentError("cannot trim the torn last line of " + journal_path().string());
  std::vector<std::optional<CellResult>> finished(cells.size());
  for (size_t i = 0; i < cells.size(); ++i) {
    auto it = done.find(cells[i].key());
    if (it != done.end()) finished[i] = cell_from_proto(it->second, cells[i]);
  }
  return finished;
}

void RunFolder::journal(const CellResult& cell) {
  std::string line = proto::to_json(to_proto(cell)) + "\n";
  if (write(journal_fd_, line.data(), line.size()) != static_cast<ssize_t>(line.size()) ||
      fsync(journal_fd_) != 0)
    throw EnvironmentError("cannot write the journal");
}

void write_result_views(const fs::path& dir, const nlohmann::json& header, const std::string& title,
                        const std::vector<CellResult>& cells, const ReportSections& sections, bool profiles) {
  std::ostringstream csv, md, html;
  write_csv(csv, cells);
  ReportSections shown = sections.verdicts || sections.ab || sections.trends ? sections : sections_of(header);
  if (profiles) {
    shown.profiles = read_cell_profiles(dir, cells);
    shown.profile_diffs =
        profile_diffs(dir, cells, shown.profiles,
                      {shown.ab ? &*shown.ab : nullptr, shown.verdicts ? &*shown.verdicts : nullptr});
  }
  write_markdown(md, title, cells);
  write_markdown_verdicts(md, shown);
  write_html_report(html, header, title, cells, shown);
  write_whole_file(dir / "matrix.csv", csv.str());
  write_whole_file(dir / "matrix.md", md.str());
  write_whole_file(dir / "report.html", html.str());
}

void RunFolder::write_results(nlohmann::json header, const std::string& title,
                              const std::vector<CellResult>& cells, const ReportSections& sections,
                              bool profiles) const {
  nlohmann::json views_header = header;  // report.html reads the header only
  header["cells"] = nlohmann::json::array();
  for (auto& c : cells) header["cells"].push_back(nlohmann::json::parse(proto::to_json(to_proto(c))));
  write_whole_file(path_ / "result.json", header.dump(2) + "\n");
  write_result_views(path_, views_header, title, cells, sections, profiles);
}

}  // namespace loadlab::controller
