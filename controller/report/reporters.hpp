#pragma once
// Renderings of a result matrix: the terminal table, CSV and Markdown.
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "results/results.hpp"

namespace loadlab::controller {

// The matrix's axes (name, value as written) of a run's cells: every cell has the same.
const std::vector<std::pair<std::string, std::string>>& axes_of(const std::vector<CellResult>& cells);

// The columns that say which cell a row is: the target, each matrix axis in the
// scenario's order, and the connections unless they are an axis. `human`: the table's
// headers and values ("delay ms", keep-alive "yes"); else CSV's (axis names, "true").
std::vector<std::string> cell_header(const std::vector<CellResult>& cells, bool human);
std::vector<std::string> cell_values(const Cell& c, bool human);

// Human columns shared by the terminal table and Markdown; one row per cell.
std::vector<std::string> summary_header(const std::vector<CellResult>& cells);
std::vector<std::vector<std::string>> summary_rows(const std::vector<CellResult>& cells);

// A failed cell's status on one line, for rows and progress lines: "FAILED: " and the error
// with its line breaks (an agent quotes a target's last output lines) as " | ", or as a space
// after a line ending in ':'. CSV and result.json keep the error as it is.
std::string failed_status(const std::string& error);

void write_table(std::ostream& out, const std::vector<CellResult>& cells);  // aligned text
// One table per metric (QPS, p99 ms, server CPU %, server MB, client CPU %) with rows target ×
// the other axes and columns the `threads` axis (else the last axis), as the seed articles
// lay them out; then "All figures": one row per cell, as the terminal table.
void write_markdown(std::ostream& out, const std::string& title, const std::vector<CellResult>& cells);
void write_csv(std::ostream& out, const std::vector<CellResult>& cells);  // machine columns, RFC 4180

struct ReportSections;
// matrix.md's verdicts, when the run has them: "Against the baseline" and "A/B" (with each
// cell's pairs), a row per cell with its verdict, change, figures, minimum detectable change
// and why.
void write_markdown_verdicts(std::ostream& out, const ReportSections& sections);

}  // namespace loadlab::controller
