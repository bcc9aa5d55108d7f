#pragma once
// `loadlab run DIR` and `loadlab validate DIR`: every scenario of a folder (a scenario
// repository's checkout, run every night), each in a run folder of its own.
#include <ostream>
#include <string>
#include <vector>

#include "run/scenario_run.hpp"

namespace loadlab::controller {

// The scenario files of a folder: its *.json files (not those of its subfolders, where a lab
// keeps the files its scenarios include), sorted by name. InputError when it has none.
std::vector<std::string> scenario_files_in(const std::string& dir);

// Runs every scenario of `options.scenario_path` (a folder) in turn with the other options,
// each into OUT/NAME when `options.out_dir` is OUT, else runs/NAME-TIME. Every scenario is
// checked first: one that is bad input, has the name of another (a history tells runs apart
// by name), or is a link to a file outside the folder (or --include-root), is reported and
// left out, and the others run. A signal stops after the
// scenario in progress. Prints what each ended with; returns the worst exit status (the
// highest: 0 ok, 1 a regression or an unusable lab, 2 bad input, 3 failed cells, 128 + N
// stopped by signal N). `run_folders`, when given, gets the run folder of each scenario that
// made one.
int run_scenario_folder(const RunOptions& options, std::ostream& out, std::ostream& err,
                        std::vector<std::string>* run_folders = nullptr);

// Checks every scenario of a folder as `loadlab validate` checks one; prints one line per
// file; 0 when all are good, 2 otherwise. `include_root` as RunOptions's.
int validate_scenario_folder(const std::string& dir, const std::vector<std::string>& overrides,
                             const std::string& include_root, std::ostream& out, std::ostream& err);

}  // namespace loadlab::controller
