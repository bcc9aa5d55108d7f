#pragma once
// A run's folder: its copy of the scenario, journal.jsonl (one v1::CellResult per line in
// the proto's JSON form, one line per finished cell, on
// the disk before the next cell starts, so that --resume continues a broken run), and the
// result files, rewritten whole after every cell: result.json, matrix.csv, matrix.md,
// report.html.
// Called from the run's thread.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "report/report_html.hpp"
#include "results/results.hpp"
#include "scenario/plan.hpp"

namespace loadlab::controller {

// result.json's "schema_version": docs/result.schema.json describes this version. Raise it
// when a reader of an older result.json would misread the new one.
constexpr int kResultSchemaVersion = 1;

// Writes `content` to `path` through a temporary file renamed over it: readers never see half
// a file. Throws EnvironmentError.
void write_whole_file(const std::filesystem::path& path, const std::string& content);

// Writes the files derived from a run's cells into `dir`: matrix.csv, matrix.md and
// report.html (`header`: result.json without its cells; `title`: the scenario's name).
// Readers never see half a file. Throws EnvironmentError. `loadlab report` rebuilds them.
// `profiles`: false leaves report.html's Profiles section out (the page a run rewrites after each
// cell: reading and drawing every profile each time would cost the square of the cells).
void write_result_views(const std::filesystem::path& dir, const nlohmann::json& header,
                        const std::string& title, const std::vector<CellResult>& cells,
                        const ReportSections& sections = {}, bool profiles = true);

class RunFolder {
 public:
  // result.json's field with the sha256 of the run folder's scenario.json, recorded when the
  // run starts and checked by resume(): cells measured with one scenario are never
  // completed with another.
  static constexpr const char* kScenarioDigest = "run_scenario_sha256";

  // The folder of a new run of the scenario `scenario_name`: runs/NAME-STAMP. InputError
  // ("/name") when the name would not make one folder inside `runs` (see is_safe_name).
  static std::filesystem::path new_run_path(const std::filesystem::path& runs,
                                            const std::string& scenario_name, const std::string& stamp);
  // InputError naming --out when `dir` exists and is not an empty folder: a new run never
  // writes into an earlier one's folder (that is --resume's job).
  static void check_free(const std::filesystem::path& dir);
  // A new run's folder `dir`, created, with a copy of the scenario file, or `scenario_text`
  // when given (the scenario with --set overrides applied). Throws InputError when `dir`
  // exists and is not empty (check_free), EnvironmentError when it cannot be written.
  [[nodiscard]] static RunFolder create(const std::filesystem::path& dir, const std::string& scenario_path,
                                        const std::string& scenario_text = "");
  // The folder of an earlier run, to resume it. Throws InputError when it holds no
  // scenario, when its result.json is not one a run wrote, and when its scenario.json no
  // longer has the sha256 the run recorded (kScenarioDigest; not checked, with a warning,
  // for a run that recorded none).
  static RunFolder resume(const std::filesystem::path& dir);

  // The sha256 (hex) of scenario.json as it is now.
  std::string scenario_digest() const;
  const std::filesystem::path& path() const { return path_; }
  std::string scenario_path() const { return (path_ / "scenario.json").string(); }
  // result.json as the earlier run left it; null for a new run (or one that wrote none).
  const nlohmann::json& previous_result() const { return previous_; }

  // Opens the journal for this run's cells, and returns the cells it already holds, in
  // the order of `cells` (nullopt for a cell not finished). A torn last line (a run killed
  // mid-write, no newline) is ignored and cut off the file; any other line that is not a CellResult throws
  // InputError naming the file and line. Throws EnvironmentError when it cannot be opened.
  std::vector<std::optional<CellResult>> open_journal(const std::vector<Cell>& cells);
  // Appends a finished cell and flushes it to the disk. Throws EnvironmentError.
  void journal(const CellResult& cell);
  // Rewrites result.json (`header` with "cells"), matrix.csv, matrix.md and report.html from
  // the finished cells; readers never see half a file. Throws EnvironmentError. `sections`:
  // the hook for report.html's verdicts (against a baseline) and trends (from the history).
  void write_results(nlohmann::json header, const std::string& title, const std::vector<CellResult>& cells,
                     const ReportSections& sections = {}, bool profiles = true) const;

  RunFolder(RunFolder&& other) noexcept;
  RunFolder& operator=(RunFolder&&) = delete;
  ~RunFolder();

 private:
  explicit RunFolder(std::filesystem::path path) : path_(std::move(path)) {}
  void check_previous_result() const;
  std::filesystem::path journal_path() const { return path_ / "journal.jsonl"; }

  std::filesystem::path path_;
  nlohmann::json previous_;
  int journal_fd_ = -1;
};

}  // namespace loadlab::controller
