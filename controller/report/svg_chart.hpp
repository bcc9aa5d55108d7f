#pragma once
// Line charts as inline SVG for report.html: no script, no fonts to fetch, a viewBox so that
// they scale to the page's width.
#include <optional>
#include <string>
#include <vector>

namespace loadlab::controller {

struct ChartSeries {
  std::string name;                      // legend text
  std::vector<std::optional<double>> y;  // one per x; nullopt: no point (a gap in the line)
};

struct LineChart {
  std::string metric;                 // data-metric attribute, e.g. "qps"
  std::string panel;                  // data-panel attribute, e.g. "delay ms 5"; may be empty
  std::string title;                  // accessible name
  std::string x_title;                // e.g. "threads"
  std::string y_title;                // e.g. "QPS"
  std::vector<std::string> x_labels;  // the x values as text
  // Numeric x values (same length as x_labels) place points by value (log scale when they
  // span more than 50×); nullopt: evenly spaced categories.
  std::optional<std::vector<double>> x_values;
  std::vector<ChartSeries> series;
};

// The colour of series `i` (a fixed palette; after it, colours repeat with a dash pattern).
std::string series_colour(size_t i);
// <svg class="chart" ...>: axes, gridlines, one line and its points (with <title> tooltips)
// per series. Every text is escaped.
std::string svg_line_chart(const LineChart& chart);
// A small line without axes (a trend sparkline), points with tooltips `titles`.
std::string svg_sparkline(const std::vector<double>& values, const std::vector<std::string>& titles);

// A verdict's picture: the earlier nights a cell was judged against (grey points, with
// tooltips), the band a night of unchanged code falls in (shaded), and tonight's figure (a
// larger point in `tonight_class`'s colour: "regression", "improvement" or "") and its
// confirmation (a ring), each with a tooltip.
struct BandChart {
  std::vector<double> nights;
  std::vector<std::string> night_titles;
  std::optional<double> band_low, band_high;
  std::optional<double> tonight, confirmation;
  std::string tonight_title, confirmation_title, tonight_class;
};
std::string svg_band_chart(const BandChart& c);

// A capacity search's picture, the "hockey stick": for each cell a line through the latency
// its steps measured against the rate they asked (log scale when the rates span more than
// 50×), the objective's limit as a dashed line, and the capacity found as a ring. Latencies
// far above the limit are drawn at the top edge (their tooltip says the figure).
struct CapacityChart {
  std::string panel;    // data-panel attribute: the target
  std::string title;    // accessible name
  std::string y_title;  // e.g. "p99 ms"
  std::optional<double> limit;
  struct Series {
    std::string name;                                // the cell, without its target
    std::vector<std::pair<double, double>> points;   // (rate, latency), any order
    std::optional<std::pair<double, double>> found;  // the capacity and its latency
  };
  std::vector<Series> series;
};
std::string svg_capacity_chart(const CapacityChart& c);

}  // namespace loadlab::controller
