#pragma once
// `loadlab report --index DIR`: one page over a folder of runs (loadlab-nightly's runs folder,
// or any folder of run folders): the nights newest first, each scenario's verdict counts and
// worst change, and a link to each report.html. Self-contained like report.html (its style
// inline, no script, nothing fetched).
#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace loadlab::controller {

// One run (one scenario of one night), as its result.json says.
struct IndexedRun {
  std::string scenario;    // the scenario's name (the folder's, when result.json has none)
  std::string started_at;  // UTC, as in result.json
  std::string report;      // report.html, relative to the index; "" when the folder has none
  std::string problem;     // why result.json could not be read ("" when it was)
  int cells = 0, failed = 0;
  bool finished = false;
  std::map<std::string, int> verdicts;  // verdict -> cells, the baseline's and the A/B's
  std::string metric;                   // the verdicts' metric
  std::optional<double> worst_change;   // the change furthest in the bad direction, in %
  std::string worst_cell;               // its cell
};

// A night: a folder of DIR holding a run folder's result.json, or run folders of its own (a
// folder of scenarios, loadlab-nightly's STATE/runs/TIME/NAME).
struct IndexedNight {
  std::string name;        // the folder's name
  std::string started_at;  // its earliest run's start
  std::vector<IndexedRun> runs;
};

// The nights of `dir`, newest first (by their runs' start, then by name). Links (such as
// loadlab-nightly's `latest`) are not followed: each night shows once. A result.json that
// cannot be read shows as a run with its problem, and the page is still made.
std::vector<IndexedNight> index_nights(const std::filesystem::path& dir);

void write_night_index(std::ostream& out, const std::string& title, const std::vector<IndexedNight>& nights);

// Writes DIR/index.html and names it on `out`; returns the exit status (0). InputError (2)
// when DIR is not a folder; EnvironmentError when the page cannot be written.
int index_command(const std::string& dir, std::ostream& out);

}  // namespace loadlab::controller
