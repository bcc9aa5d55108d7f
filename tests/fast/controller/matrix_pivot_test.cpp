#include "report/matrix_pivot.hpp"

#include <gtest/gtest.h>

#include "report_fixture.hpp"
#include "results/cell_metrics.hpp"

namespace loadlab::controller {
namespace {

using testing::report_cell;
using testing::report_matrix;

TEST(MatrixPivot, ThreadsAreColumnsAndTargetTimesDelayAreRows) {
  auto cells = report_matrix();
  auto p = pivot(cells, column_axis(cells));
  EXPECT_EQ(p.column_title, "threads");
  EXPECT_EQ(p.columns, (std::vector<std::string>{"1", "10"}));
  EXPECT_EQ(p.label_header, (std::vector<std::string>{"target", "delay ms"}));
  ASSERT_EQ(p.rows.size(), 4u);
  EXPECT_EQ(p.rows[3].labels, (std::vector<std::string>{"go", "5"}));
  ASSERT_EQ(p.rows[3].cells.size(), 2u);
  EXPECT_EQ(p.rows[3].cells[1]->cell.threads, 10u);
  EXPECT_EQ(p.rows[3].cells[1]->cell.delay_ms, 5u);
  EXPECT_EQ(p.rows[3].cells[1]->cell.target, "go");
}

TEST(MatrixPivot, WithoutAThreadsAxisTheLastAxisIsTheColumnAndMissingCellsAreEmpty) {
  std::vector<CellResult> cells;
  for (std::string ka : {"1", "0"})
    for (std::string d : {"0", "5"}) {
      auto c = report_cell("beast", 0, 1);
      c.cell.axes = {{"keep_alive", ka}, {"delay_ms", d}};
      cells.push_back(c);
    }
  cells.pop_back();  // a cell that has not finished yet
  EXPECT_EQ(column_axis(cells), 1u);
  EXPECT_EQ(numeric_column_axis(cells), 1u);  // delay_ms: numbers
  auto p = pivot(cells, column_axis(cells));
  EXPECT_EQ(p.column_title, "delay ms");
  EXPECT_EQ(p.label_header, (std::vector<std::string>{"target", "keep-alive"}));
  ASSERT_EQ(p.rows.size(), 2u);
  EXPECT_EQ(p.rows[1].labels, (std::vector<std::string>{"beast", "no"}));
  EXPECT_NE(p.rows[1].cells[0], nullptr);
  EXPECT_EQ(p.rows[1].cells[1], nullptr);
  // keep-alive is the last axis but not a number: charts take delay_ms as x.
  for (auto& c : cells) std::swap(c.cell.axes[0], c.cell.axes[1]);
  EXPECT_EQ(column_axis(cells), 1u);
  EXPECT_EQ(numeric_column_axis(cells), 0u);
}

TEST(MatrixPivot, AMatrixWithoutAxesIsOneColumn) {
  auto c = report_cell("beast", 0, 1);
  c.cell.axes.clear();
  std::vector<CellResult> cells{c};
  EXPECT_FALSE(column_axis(cells));
  auto p = pivot(cells, column_axis(cells));
  EXPECT_EQ(p.columns, std::vector<std::string>{"all"});
  ASSERT_EQ(p.rows.size(), 1u);
  EXPECT_EQ(p.rows[0].cells[0], &cells[0]);
}

TEST(CellMetrics, FiguresComeFromTheMedianRepetitionWithNaAndFailed) {
  auto c = report_cell("beast", 5, 10);
  EXPECT_EQ(metric_text(cell_metric("qps"), c), "10005");
  EXPECT_EQ(metric_text(cell_metric("p99_ms"), c), "6.00");
  EXPECT_EQ(metric_text(cell_metric("server_mb"), c), "20.0");
  c.reps[0].add_unavailable("latency.p99_us");
  EXPECT_EQ(metric_text(cell_metric("p99_ms"), c), "n/a");
  EXPECT_FALSE(cell_metric("p99_ms").value(c));
  EXPECT_EQ(metric_text(cell_metric("p50_ms"), c), "5.50");
  EXPECT_EQ(metric_text(cell_metric("qps"), report_cell("beast", 5, 10, "ready: timeout")), "FAILED");
}

}  // namespace
}  // namespace loadlab::controller
