#include "results/cell_metrics.hpp"

#include <algorithm>
#include <stdexcept>

#include "loadlab/shared/format.hpp"

namespace loadlab::controller {

namespace {

bool unavailable(const v1::Repetition& r, const char* figure) {
  return figure && *figure &&
         std::find(r.unavailable().begin(), r.unavailable().end(), figure) != r.unavailable().end();
}

template <double (*Read)(const v1::Repetition&), const char* Figure>
std::optional<double> figure(const CellResult& c) {
  if (!c.ok() || unavailable(c.median(), Figure)) return std::nullopt;
  return Read(c.median());
}

constexpr char kNone[] = "";
constexpr char kP50[] = "latency.p50_us";
constexpr char kP90[] = "latency.p90_us";
constexpr char kP99[] = "latency.p99_us";

double qps(const v1::Repetition& r) { return r.qps(); }
double p50(const v1::Repetition& r) { return r.latency().p50_us() / 1000.0; }
double p90(const v1::Repetition& r) { return r.latency().p90_us() / 1000.0; }
double p99(const v1::Repetition& r) { return r.latency().p99_us() / 1000.0; }
double server_cpu(const v1::Repetition& r) { return r.server().cpu_pct(); }
double client_cpu(const v1::Repetition& r) { return r.client().cpu_pct(); }
// MB = peak RSS, as the terminal table shows it.
double server_mb(const v1::Repetition& r) { return static_cast<double>(r.server().rss_kb_peak()) / 1024.0; }
double client_mb(const v1::Repetition& r) { return static_cast<double>(r.client().rss_kb_peak()) / 1024.0; }

// A capacity search's cell: the median search's capacity (CellResult::capacity).
std::optional<double> capacity(const CellResult& c) {
  if (c.searches.empty() || !c.error.empty()) return std::nullopt;
  return c.capacity();
}

// A cell that counts its instructions (the scenario's `instructions`): the repetitions' median.
std::optional<double> instructions(const CellResult& c) {
  if (!c.ok()) return std::nullopt;
  return c.instructions();
}

}  // namespace

const std::vector<CellMetric>& cell_metrics() {
  static const std::vector<CellMetric> all = {
      {"qps", "QPS", 0, figure<qps, kNone>, nullptr},
      {"p50_ms", "p50 ms", 2, figure<p50, kP50>, kP50},
      {"p90_ms", "p90 ms", 2, figure<p90, kP90>, kP90},
      {"p99_ms", "p99 ms", 2, figure<p99, kP99>, kP99},
      {"server_cpu_pct", "server CPU %", 1, figure<server_cpu, kNone>, nullptr},
      {"server_mb", "server MB", 1, figure<server_mb, kNone>, nullptr},
      {"client_cpu_pct", "client CPU %", 1, figure<client_cpu, kNone>, nullptr},
      {"client_mb", "client MB", 1, figure<client_mb, kNone>, nullptr},
      {"capacity", "capacity req/s", 0, capacity, nullptr},
      {"instructions", "instructions per request", 0, instructions, nullptr},
  };
  return all;
}

const CellMetric& cell_metric(const std::string& id) {
  for (auto& m : cell_metrics())
    if (id == m.id) return m;
  throw std::out_of_range("no cell metric " + id);
}

std::string metric_text(const CellMetric& m, const CellResult& c) {
  if (!c.ok()) return "FAILED";
  auto v = m.value(c);
  if (!v) return "n/a";
  return fixed_text(*v, m.decimals);
}

}  // namespace loadlab::controller
