#include "report/matrix_pivot.hpp"

#include <algorithm>
#include <cstdlib>

#include "report/reporters.hpp"

namespace loadlab::controller {

namespace {

std::optional<size_t> threads_axis(const std::vector<CellResult>& cells) {
  const auto& axes = axes_of(cells);
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i].first == "threads") return i;
  return std::nullopt;
}

bool is_number(const std::string& s) {
  if (s.empty()) return false;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

template <class T>
size_t index_of(std::vector<T>& values, const T& v) {
  auto it = std::find(values.begin(), values.end(), v);
  if (it != values.end()) return static_cast<size_t>(it - values.begin());
  values.push_back(v);
  return values.size() - 1;
}

}  // namespace

std::optional<size_t> column_axis(const std::vector<CellResult>& cells) {
  if (auto t = threads_axis(cells)) return t;
  const auto& axes = axes_of(cells);
  if (axes.empty()) return std::nullopt;
  return axes.size() - 1;
}

std::optional<size_t> numeric_column_axis(const std::vector<CellResult>& cells) {
  if (auto t = threads_axis(cells)) return t;
  for (size_t i = axes_of(cells).size(); i-- > 0;) {
    // keep_alive's values are 1 and 0 in keys, but yes/no is not a scale.
    bool numeric = axes_of(cells)[i].first != "keep_alive" &&
                   std::all_of(cells.begin(), cells.end(), [&](const CellResult& c) {
                     return i < c.cell.axes.size() && is_number(c.cell.axes[i].second);
                   });
    if (numeric) return i;
  }
  return std::nullopt;
}

Pivot pivot(const std::vector<CellResult>& cells, std::optional<size_t> column,
            const std::vector<size_t>& dropped) {
  Pivot p;
  auto kept = [&](size_t i) {
    return i != column && std::find(dropped.begin(), dropped.end(), i) == dropped.end();
  };
  const auto header = cell_header(cells, true);  // target, the axes, maybe conns
  const auto& axes = axes_of(cells);
  p.label_header.push_back(header.empty() ? "target" : header[0]);
  for (size_t i = 0; i < axes.size(); ++i)
    if (kept(i)) p.label_header.push_back(header[i + 1]);
  p.column_title = column ? header[*column + 1] : "all";
  if (!column) p.columns.push_back("all");
  std::vector<std::vector<std::string>> row_labels;
  for (auto& c : cells) {
    // The human values (keep-alive "yes"), target first, then the axes in order.
    const auto values = cell_values(c.cell, true);
    std::vector<std::string> labels{values[0]};
    for (size_t i = 0; i < c.cell.axes.size(); ++i)
      if (kept(i)) labels.push_back(values[i + 1]);
    size_t col = column && *column < c.cell.axes.size() ? index_of(p.columns, values[*column + 1]) : 0;
    size_t row = index_of(row_labels, labels);
    if (row == p.rows.size()) p.rows.push_back({labels, {}});
    auto& slots = p.rows[row].cells;
    if (slots.size() <= col) slots.resize(col + 1, nullptr);
    slots[col] = &c;
  }
  for (auto& r : p.rows) r.cells.resize(p.columns.size(), nullptr);
  return p;
}

}  // namespace loadlab::controller
