#include "loadlab/metrics/exposition.hpp"

#include <fmt/format.h>

#include <cmath>

namespace loadlab::metrics {

namespace {

// Backslash and newline escaped, and the double quote when `quote`: a label value's escapes
// (both formats), and a HELP text's (OpenMetrics escapes its quote, 0.0.4 does not).
std::string escaped(std::string_view v, bool quote) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '"' && quote)
      out += "\\\"";
    else
      out += c;
  }
  return out;
}

std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
  return fmt::format("{}", v);
}

std::string sample_name(const Family& f) {
  switch (f.type) {
    case Type::kCounter:
      return f.name + "_total";
    case Type::kInfo:
      return f.name + "_info";
    case Type::kGauge:
      break;
  }
  return f.name;
}

}  // namespace

Format negotiate(std::string_view accept) {
  return accept.find("application/openmetrics-text") != std::string_view::npos ? Format::kOpenMetrics
                                                                               : Format::kPrometheus;
}

std::string_view content_type(Format format) {
  return format == Format::kOpenMetrics ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
                                        : "text/plain; version=0.0.4; charset=utf-8";
}

std::string render(const std::vector<Family>& families, Format format) {
  std::string out;
  for (const auto& f : families) {
    const std::string name = sample_name(f);
    if (format == Format::kOpenMetrics) {
      const char* type = f.type == Type::kCounter ? "counter" : f.type == Type::kInfo ? "info" : "gauge";
      out += fmt::format("# TYPE {} {}\n", f.name, type);
      if (!f.unit.empty()) out += fmt::format("# UNIT {} {}\n", f.name, f.unit);
      if (!f.help.empty())
        out += fmt::format("# HELP {} {}\n", f.name, escaped(f.help, format == Format::kOpenMetrics));
    } else {
      // 0.0.4 has no info type: an info is a gauge of value 1; a family is named as its samples.
      if (!f.help.empty())
        out += fmt::format("# HELP {} {}\n", name, escaped(f.help, format == Format::kOpenMetrics));
      out += fmt::format("# TYPE {} {}\n", name, f.type == Type::kCounter ? "counter" : "gauge");
    }
    for (const auto& s : f.samples) {
      out += name;
      if (!s.labels.empty()) {
        out += '{';
        for (size_t i = 0; i < s.labels.size(); ++i)
          out +=
              fmt::format("{}{}=\"{}\"", i ? "," : "", s.labels[i].first, escaped(s.labels[i].second, true));
        out += '}';
      }
      out += ' ';
      out += number(f.type == Type::kInfo ? 1 : s.value);
      out += '\n';
    }
  }
  if (format == Format::kOpenMetrics) out += "# EOF\n";
  return out;
}

}  // namespace loadlab::metrics
