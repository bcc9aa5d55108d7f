#pragma once
// Metrics as a lab's Prometheus scrapes them: families of samples, written as OpenMetrics 1.0
// text (what Prometheus asks for first) or as Prometheus' text format 0.0.4 (what it, promtool
// and older scrapers read), chosen by the request's Accept header. Written here rather than
// taken from prometheus-cpp (Debian's 1.0): its serializer writes only the 0.0.4 format and its
// HTTP exposer (civetweb) cannot hold the agent's listen rules (mutual TLS, the token).
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace loadlab::metrics {

enum class Type { kCounter, kGauge, kInfo };

using Labels = std::vector<std::pair<std::string, std::string>>;

struct Sample {
  Labels labels;
  double value = 0;
};

// A family's name carries no suffix of its type: a counter `x` is sampled as `x_total`, an info
// `x` as `x_info` (value 1). A unit, when given, ends the name (`..._bytes`, `..._seconds`).
struct Family {
  std::string name;
  Type type = Type::kGauge;
  std::string help;
  std::string unit;
  std::vector<Sample> samples;
};

enum class Format { kOpenMetrics, kPrometheus };

// OpenMetrics when `accept` names application/openmetrics-text, else the 0.0.4 text format.
Format negotiate(std::string_view accept);
std::string_view content_type(Format format);
std::string render(const std::vector<Family>& families, Format format);

}  // namespace loadlab::metrics
