#pragma once
// `loadlab report DIR`: rebuilds a run folder's files derived from its result.json
// (report.html, matrix.md, matrix.csv), e.g. after an upgrade of loadlab's reports, or for a
// result.json copied from elsewhere. result.json itself is only read.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "results/results.hpp"

namespace loadlab::controller {

struct StoredRun {
  nlohmann::json header;  // result.json without "cells"
  std::string title;      // the scenario's name
  std::vector<CellResult> cells;
};

// result.json's cells, each read strictly as a loadlab.v1.CellResult. Throws InputError
// naming the JSON path (e.g. "/cells/2") and the file when it is not a loadlab result.
[[nodiscard]] StoredRun read_stored_run(const std::string& result_json);

// `dir`: a run folder or its result.json. Writes the derived files beside result.json and
// names them on `out`; returns the exit status (0). Throws InputError (exit 2) or
// EnvironmentError.
int report_command(const std::string& dir, std::ostream& out);

// `loadlab compare BASE NEW --report FILE`: NEW's report.html written to `file` with the
// comparison's `verdicts`, and for each cell profiled in NEW, its server (every repetition
// summed) drawn against BASE's same cell (a differential flame graph), or why it cannot be.
// `base` and `now`: run folders or their result.json. Throws InputError or EnvironmentError.
void write_compare_report(const std::string& file, const std::string& base, const std::string& now,
                          const v1::Verdicts& verdicts);

}  // namespace loadlab::controller
