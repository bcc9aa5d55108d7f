#pragma once
// The per-cell figures that reports lay out in pivot tables and charts: each one's name,
// unit and how it is read from a cell's median repetition. One definition for matrix.md's
// tables and report.html's charts.
#include <optional>
#include <string>
#include <vector>

#include "results/results.hpp"

namespace loadlab::controller {

struct CellMetric {
  const char* id;     // e.g. "p99_ms": a stable name, used in HTML attributes
  const char* title;  // e.g. "p99 ms": a table's or chart's heading
  int decimals;       // for text
  // The figure, or nullopt for a failed cell or one the client cannot give (n/a).
  std::optional<double> (*value)(const CellResult&);
  // Why value() has none for an ok cell: the repetition's `unavailable` entry, or nullptr.
  const char* unavailable_figure;
};

// qps, p50_ms, p90_ms, p99_ms, server_cpu_pct, server_mb, client_cpu_pct, client_mb, capacity
// (a capacity search's cell: its median search's capacity; none for other cells).
const std::vector<CellMetric>& cell_metrics();
// The metric named `id`; throws std::out_of_range for an unknown one (a programming error).
const CellMetric& cell_metric(const std::string& id);

// The text of `m` for `c`: the figure, "n/a" where the client cannot give it, "FAILED" for
// a failed cell.
std::string metric_text(const CellMetric& m, const CellResult& c);

}  // namespace loadlab::controller
