#pragma once
// A result matrix laid out as the seed articles' tables: one axis's values as columns (e.g.
// threads), one row per combination of the target and the other axes (e.g. target × delay).
// matrix.md's tables and report.html's charts (rows = a chart's lines) are built on it.
#include <optional>
#include <string>
#include <vector>

#include "results/results.hpp"

namespace loadlab::controller {

// The axis (index into the cells' axes) whose values become columns: `threads` when it is
// an axis, else the last axis; nullopt for a matrix without axes.
std::optional<size_t> column_axis(const std::vector<CellResult>& cells);
// The x axis of a chart: `threads` when it is an axis, else the last axis whose values are
// all numbers; nullopt when there is none.
std::optional<size_t> numeric_column_axis(const std::vector<CellResult>& cells);

struct PivotRow {
  std::vector<std::string> labels;       // the target, then each other axis's value (human)
  std::vector<const CellResult*> cells;  // one per column; nullptr: no such cell (yet)
};

struct Pivot {
  std::vector<std::string> label_header;  // "target", then the other axes' columns
  std::string column_title;               // the column axis's heading, e.g. "threads"
  std::vector<std::string> columns;       // its values in the order cells have them
  std::vector<PivotRow> rows;             // in the order cells have them
};

// `cells` pivoted on axis `column` (nullopt: one column, "all"); axes in `dropped` (e.g. the
// one that splits charts into panels) are left out of the row labels. Pointers point into
// `cells`.
Pivot pivot(const std::vector<CellResult>& cells, std::optional<size_t> column,
            const std::vector<size_t>& dropped = {});

}  // namespace loadlab::controller
