#include "report/svg_chart.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "loadlab/shared/format.hpp"
#include "report/report_html.hpp"

namespace loadlab::controller {

namespace {

// The chart's frame in viewBox units.
constexpr double kWidth = 480, kHeight = 300;
constexpr double kLeft = 58, kRight = 14, kTop = 14, kBottom = 44;

std::string num(double v) { return fixed_text(v, 1); }

// Tick labels: "12.5k", "0.25", "1.2M".
std::string short_number(double v) {
  const double a = std::fabs(v);
  if (a >= 1e6) return fmt::format("{:g}M", std::round(v / 1e5) / 10);
  if (a >= 1e4) return fmt::format("{:g}k", std::round(v / 1e2) / 10);
  return fmt::format("{:g}", std::round(v * 1000) / 1000);
}

// A round step (1, 2, 2.5 or 5 × 10^k) that splits [0, max] into about `parts`.
double nice_step(double max, int parts) {
  const double raw = max / parts;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (raw <= m * mag) return m * mag;
  return 10 * mag;
}

// Round rates to mark an x axis from `lo` to `hi`: on a log axis 1, 2 and 5 × 10^k (1 and
// 3 × 10^k, then 10^k alone, when they would crowd it), on a linear one the multiples of a
// round step.
std::vector<double> round_ticks(double lo, double hi, bool log) {
  if (!(hi > lo)) return {lo};
  std::vector<double> ticks;
  if (log) {
    for (const auto& mantissas :
         {std::vector<double>{1, 2, 5}, std::vector<double>{1, 3}, std::vector<double>{1}}) {
      ticks.clear();
      for (double mag = std::pow(10.0, std::floor(std::log10(lo))); mag <= hi; mag *= 10)
        for (double m : mantissas)
          if (m * mag >= lo * (1 - 1e-9) && m * mag <= hi * (1 + 1e-9)) ticks.push_back(m * mag);
      if (ticks.size() <= 6) break;
    }
    return ticks;
  }
  const double step = nice_step(hi - lo, 4);
  for (double x = std::ceil(lo / step - 1e-9) * step; x <= hi * (1 + 1e-9); x += step) ticks.push_back(x);
  return ticks;
}

class XScale {
 public:
  explicit XScale(const LineChart& c) : n_(c.x_labels.size()) {
    if (c.x_values && c.x_values->size() == n_ && n_ > 0) {
      values_ = *c.x_values;
      lo_ = *std::min_element(values_.begin(), values_.end());
      hi_ = *std::max_element(values_.begin(), values_.end());
      log_ = lo_ > 0 && hi_ / lo_ > 50;
    }
  }
  double at(size_t i) const {
    const double inner = kWidth - kLeft - kRight - 20;  // 10 units of air at each end
    if (n_ <= 1) return kLeft + 10 + inner / 2;
    double f;
    if (values_.empty() || hi_ == lo_)
      f = static_cast<double>(i) / static_cast<double>(n_ - 1);
    else if (log_)
      f = std::log(values_[i] / lo_) / std::log(hi_ / lo_);
    else
      f = (values_[i] - lo_) / (hi_ - lo_);
    return kLeft + 10 + f * inner;
  }

 private:
  size_t n_;
  std::vector<double> values_;
  double lo_ = 0, hi_ = 0;
  bool log_ = false;
};

double max_y(const LineChart& c) {
  double m = 0;
  for (auto& s : c.series)
    for (auto& y : s.y)
      if (y && std::isfinite(*y)) m = std::max(m, *y);
  return m > 0 ? m : 1;
}

void y_axis(std::ostream& o, double top, double step) {
  const double plot_h = kHeight - kTop - kBottom;
  for (double v = 0; v <= top * 1.0000001; v += step) {
    const double y = kHeight - kBottom - v / top * plot_h;
    o << "<line class=\"grid\" x1=\"" << kLeft << "\" x2=\"" << kWidth - kRight << "\" y1=\"" << num(y)
      << "\" y2=\"" << num(y) << "\"/>";
    o << "<text class=\"tick\" x=\"" << kLeft - 6 << "\" y=\"" << num(y + 4) << "\" text-anchor=\"end\">"
      << short_number(v) << "</text>";
  }
}

void x_axis(std::ostream& o, const LineChart& c, const XScale& x) {
  const size_t n = c.x_labels.size();
  const size_t every = n > 12 ? (n + 11) / 12 : 1;  // thin the labels, never the points
  o << "<line class=\"axis\" x1=\"" << kLeft << "\" x2=\"" << kWidth - kRight << "\" y1=\""
    << kHeight - kBottom << "\" y2=\"" << kHeight - kBottom << "\"/>";
  for (size_t i = 0; i < n; i += every)
    o << "<text class=\"tick\" x=\"" << num(x.at(i)) << "\" y=\"" << kHeight - kBottom + 16
      << "\" text-anchor=\"middle\">" << html_escape(c.x_labels[i]) << "</text>";
  o << "<text class=\"axis-title\" x=\"" << num(kLeft + (kWidth - kLeft - kRight) / 2) << "\" y=\""
    << kHeight - 6 << "\" text-anchor=\"middle\">" << html_escape(c.x_title) << "</text>";
  o << "<text class=\"axis-title\" transform=\"rotate(-90)\" x=\""
    << num(-(kTop + (kHeight - kTop - kBottom) / 2)) << "\" y=\"13\" text-anchor=\"middle\">"
    << html_escape(c.y_title) << "</text>";
}

std::string dash(size_t i) {
  return i < 10 ? "" : i < 20 ? " stroke-dasharray=\"6 3\"" : " stroke-dasharray=\"2 3\"";
}

void series_line(std::ostream& o, const LineChart& c, size_t si, const XScale& x, double top) {
  const auto& s = c.series[si];
  const double plot_h = kHeight - kTop - kBottom;
  auto y_of = [&](double v) { return kHeight - kBottom - std::max(0.0, v) / top * plot_h; };
  std::string d;
  bool pen_down = false;
  for (size_t i = 0; i < s.y.size() && i < c.x_labels.size(); ++i) {
    if (!s.y[i] || !std::isfinite(*s.y[i])) {
      pen_down = false;  // a failed or missing cell breaks the line
      continue;
    }
    d += (pen_down ? "L" : "M") + num(x.at(i)) + " " + num(y_of(*s.y[i]));
    pen_down = true;
  }
  const std::string colour = series_colour(si);
  o << "<g class=\"series\" data-series=\"" << html_escape(s.name) << "\">";
  if (!d.empty())
    o << "<path d=\"" << d << "\" fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"2\"" << dash(si)
      << "/>";
  for (size_t i = 0; i < s.y.size() && i < c.x_labels.size(); ++i) {
    if (!s.y[i] || !std::isfinite(*s.y[i])) continue;
    o << "<circle cx=\"" << num(x.at(i)) << "\" cy=\"" << num(y_of(*s.y[i])) << "\" r=\"3\" fill=\"" << colour
      << "\"><title>"
      << html_escape(s.name + ", " + c.x_title + " " + c.x_labels[i] + ": " + short_number(*s.y[i]) + " " +
                     c.y_title)
      << "</title></circle>";
  }
  o << "</g>";
}

}  // namespace

std::string series_colour(size_t i) {
  static const char* palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#59a14f", "#b07aa1",
                                  "#76b7b2", "#edc948", "#ff9da7", "#9c755f", "#79706e"};
  return palette[i % 10];
}

std::string svg_line_chart(const LineChart& c) {
  std::ostringstream o;
  const double max = max_y(c);
  const double step = nice_step(max * 1.05, 4);
  const double top = std::ceil(max * 1.05 / step) * step;
  XScale x(c);
  o << "<svg class=\"chart\" data-metric=\"" << html_escape(c.metric) << "\" data-panel=\""
    << html_escape(c.panel) << "\" viewBox=\"0 0 " << kWidth << " " << kHeight
    << "\" role=\"img\" aria-label=\"" << html_escape(c.title) << "\">";
  y_axis(o, top, step);
  x_axis(o, c, x);
  for (size_t i = 0; i < c.series.size(); ++i) series_line(o, c, i, x, top);
  o << "</svg>";
  return o.str();
}

std::string svg_sparkline(const std::vector<double>& values, const std::vector<std::string>& titles) {
  constexpr double w = 160, h = 36, pad = 4;
  std::ostringstream o;
  o << "<svg class=\"sparkline\" viewBox=\"0 0 " << w << " " << h << "\">";
  if (!values.empty()) {
    double lo = *std::min_element(values.begin(), values.end());
    double hi = *std::max_element(values.begin(), values.end());
    if (hi == lo) hi = lo + 1;
    auto px = [&](size_t i) {
      return values.size() == 1
                 ? w / 2
                 : pad + (w - 2 * pad) * static_cast<double>(i) / static_cast<double>(values.size() - 1);
    };
    auto py = [&](double v) { return h - pad - (v - lo) / (hi - lo) * (h - 2 * pad); };
    std::string d;
    for (size_t i = 0; i < values.size(); ++i) d += (i ? "L" : "M") + num(px(i)) + " " + num(py(values[i]));
    o << "<path d=\"" << d << "\" fill=\"none\" stroke=\"" << series_colour(0) << "\" stroke-width=\"1.5\"/>";
    for (size_t i = 0; i < values.size(); ++i)
      o << "<circle cx=\"" << num(px(i)) << "\" cy=\"" << num(py(values[i])) << "\" r=\"2\" fill=\""
        << series_colour(0) << "\"><title>" << html_escape(i < titles.size() ? titles[i] : "")
        << "</title></circle>";
  }
  o << "</svg>";
  return o.str();
}

std::string svg_band_chart(const BandChart& c) {
  constexpr double w = 220, h = 48, pad = 5;
  std::vector<double> all = c.nights;
  for (auto v : {c.band_low, c.band_high, c.tonight, c.confirmation})
    if (v) all.push_back(*v);
  std::ostringstream o;
  o << "<svg class=\"band\" viewBox=\"0 0 " << w << " " << h
    << "\" role=\"img\" aria-label=\"earlier nights, "
       "their band and tonight\">";
  if (all.empty()) return o.str() + "</svg>";
  double lo = *std::min_element(all.begin(), all.end()), hi = *std::max_element(all.begin(), all.end());
  if (hi == lo) hi = lo * 1.01 + 1;
  const double span = hi - lo;
  lo -= span * 0.05;
  hi += span * 0.05;
  // The nights on the left part, tonight (and its confirmation) at the right edge.
  const double right = w - 2 * pad - 24;
  auto px = [&](size_t i) {
    return c.nights.size() <= 1
               ? pad + right / 2
               : pad + right * static_cast<double>(i) / static_cast<double>(c.nights.size() - 1);
  };
  auto py = [&](double v) { return h - pad - (v - lo) / (hi - lo) * (h - 2 * pad); };
  if (c.band_low && c.band_high)
    o << "<rect class=\"band\" x=\"" << num(pad) << "\" y=\"" << num(py(*c.band_high)) << "\" width=\""
      << num(w - 2 * pad) << "\" height=\"" << num(py(*c.band_low) - py(*c.band_high))
      << "\" fill=\"#4c78a8\" fill-opacity=\"0.15\"><title>band "
      << html_escape(num(*c.band_low) + " .. " + num(*c.band_high)) << "</title></rect>";
  for (size_t i = 0; i < c.nights.size(); ++i)
    o << "<circle class=\"night\" cx=\"" << num(px(i)) << "\" cy=\"" << num(py(c.nights[i]))
      << "\" r=\"2.2\" fill=\"#777\"><title>"
      << html_escape(i < c.night_titles.size() ? c.night_titles[i] : "") << "</title></circle>";
  const std::string colour = c.tonight_class == "regression"    ? "#c0392b"
                             : c.tonight_class == "improvement" ? "#1e8449"
                                                                : "#222";
  const double x = w - pad - 14;
  if (c.tonight)
    o << "<circle class=\"tonight\" cx=\"" << num(x) << "\" cy=\"" << num(py(*c.tonight))
      << "\" r=\"3.6\" fill=\"" << colour << "\"><title>" << html_escape(c.tonight_title)
      << "</title></circle>";
  if (c.confirmation)
    o << "<circle class=\"confirmation\" cx=\"" << num(x + 8) << "\" cy=\"" << num(py(*c.confirmation))
      << "\" r=\"3.2\" fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"1.5\"><title>"
      << html_escape(c.confirmation_title) << "</title></circle>";
  o << "</svg>";
  return o.str();
}

namespace {

// One series of a capacity chart: its line, its points, and the capacity found, circled.
template <class Px, class Py>
void capacity_series(std::ostringstream& o, const CapacityChart::Series& series, size_t si,
                     const std::string& y_title, Px px, Py py) {
  auto points = series.points;
  std::sort(points.begin(), points.end());
  const std::string colour = series_colour(si);
  std::string d;
  for (const auto& [x, y] : points)
    if (x > 0 && std::isfinite(y)) d += (d.empty() ? "M" : "L") + num(px(x)) + " " + num(py(y));
  o << "<g class=\"series\" data-series=\"" << html_escape(series.name) << "\">";
  if (!d.empty())
    o << "<path d=\"" << d << "\" fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"2\"" << dash(si)
      << "/>";
  for (const auto& [x, y] : points)
    if (x > 0 && std::isfinite(y))
      o << "<circle cx=\"" << num(px(x)) << "\" cy=\"" << num(py(y)) << "\" r=\"2.5\" fill=\"" << colour
        << "\"><title>"
        << html_escape(series.name + ": " + short_number(x) + " req/s, " + y_title + " " + short_number(y))
        << "</title></circle>";
  if (const auto& f = series.found)
    o << "<circle class=\"found\" cx=\"" << num(px(f->first)) << "\" cy=\"" << num(py(f->second))
      << "\" r=\"6\" fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"2\"><title>"
      << html_escape(series.name + ": capacity " + short_number(f->first) + " req/s") << "</title></circle>";
  o << "</g>";
}

}  // namespace

std::string svg_capacity_chart(const CapacityChart& c) {
  double x_lo = INFINITY, x_hi = 0, y_max = 0;
  for (const auto& s : c.series)
    for (const auto& [x, y] : s.points) {
      if (!(x > 0) || !std::isfinite(y)) continue;
      x_lo = std::min(x_lo, x);
      x_hi = std::max(x_hi, x);
      y_max = std::max(y_max, y);
    }
  std::ostringstream o;
  o << "<svg class=\"chart capacity\" data-metric=\"capacity\" data-panel=\"" << html_escape(c.panel)
    << "\" viewBox=\"0 0 " << kWidth << " " << kHeight << "\" role=\"img\" aria-label=\""
    << html_escape(c.title) << "\">";
  if (x_hi == 0) return o.str() + "</svg>";
  // The blade of the stick can be a hundred times the limit: the plot stops at three limits.
  const double shown = c.limit ? std::min(y_max, 3 * *c.limit) : y_max;
  const double step = nice_step(std::max(shown, c.limit.value_or(0)) * 1.05, 4);
  const double top = std::ceil(std::max(shown, c.limit.value_or(0)) * 1.05 / step) * step;
  y_axis(o, top, step);
  const bool log = x_hi / x_lo > 50;
  const double inner = kWidth - kLeft - kRight - 20;
  auto px = [&](double x) {
    const double f = x_hi == x_lo ? 0.5
                     : log        ? std::log(x / x_lo) / std::log(x_hi / x_lo)
                                  : (x - x_lo) / (x_hi - x_lo);
    return kLeft + 10 + f * inner;
  };
  const double plot_h = kHeight - kTop - kBottom;
  auto py = [&](double y) { return kHeight - kBottom - std::clamp(y, 0.0, top) / top * plot_h; };
  // The x axis: round rates between the ends (by value or by log).
  o << "<line class=\"axis\" x1=\"" << kLeft << "\" x2=\"" << kWidth - kRight << "\" y1=\""
    << kHeight - kBottom << "\" y2=\"" << kHeight - kBottom << "\"/>";
  for (const double x : round_ticks(x_lo, x_hi, log)) {
    o << "<text class=\"tick\" x=\"" << num(px(x)) << "\" y=\"" << kHeight - kBottom + 16
      << "\" text-anchor=\"middle\">" << short_number(x) << "</text>";
  }
  o << "<text class=\"axis-title\" x=\"" << num(kLeft + (kWidth - kLeft - kRight) / 2) << "\" y=\""
    << kHeight - 6 << "\" text-anchor=\"middle\">rate asked, req/s" << (log ? " (log)" : "") << "</text>";
  o << "<text class=\"axis-title\" transform=\"rotate(-90)\" x=\"" << num(-(kTop + plot_h / 2))
    << "\" y=\"13\" text-anchor=\"middle\">" << html_escape(c.y_title) << "</text>";
  if (c.limit)
    o << "<line class=\"slo\" x1=\"" << kLeft << "\" x2=\"" << kWidth - kRight << "\" y1=\""
      << num(py(*c.limit)) << "\" y2=\"" << num(py(*c.limit))
      << "\" stroke=\"#c0392b\" stroke-dasharray=\"5 3\"><title>"
      << html_escape("objective: " + c.y_title + " <= " + short_number(*c.limit)) << "</title></line>";
  for (size_t si = 0; si < c.series.size(); ++si) capacity_series(o, c.series[si], si, c.y_title, px, py);
  o << "</svg>";
  return o.str();
}

}  // namespace loadlab::controller
