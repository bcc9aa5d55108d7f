#include "loadlab/controller/results.hpp"

#include <algorithm>
#include <stdexcept>

namespace loadlab::controller {

const RepResult& CellResult::median() const {
  if (reps.empty()) throw std::logic_error("median of a cell without repetitions");
  std::vector<const RepResult*> sorted;
  for (auto& r : reps) sorted.push_back(&r);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->qps < b->qps; });
  return *sorted[(sorted.size() - 1) / 2];
}

double CellResult::qps_min() const {
  double v = reps.empty() ? 0 : reps[0].qps;
  for (auto& r : reps) v = std::min(v, r.qps);
  return v;
}

double CellResult::qps_max() const {
  double v = 0;
  for (auto& r : reps) v = std::max(v, r.qps);
  return v;
}

nlohmann::json to_json(const UsageResult& u) {
  return {{"cpu_pct", u.cpu_pct},         {"cpu_user_pct", u.cpu_user_pct}, {"cpu_system_pct", u.cpu_system_pct},
          {"rss_kb_mean", u.rss_kb_mean}, {"rss_kb_peak", u.rss_kb_peak},   {"window_s", u.window_s},
          {"samples", u.samples}};
}

namespace {
nlohmann::json latency_json(const LatencyUs& l) {
  return {{"p50", l.p50}, {"p90", l.p90}, {"p99", l.p99}, {"p999", l.p999},
          {"max", l.max}, {"mean", l.mean}, {"min", l.min}};
}
nlohmann::json status_json(const std::map<uint32_t, uint64_t>& m) {
  nlohmann::json j = nlohmann::json::object();
  for (auto& [code, n] : m) j[std::to_string(code)] = n;
  return j;
}
}  // namespace

nlohmann::json to_json(const RepResult& r) {
  return {{"requests", r.requests},
          {"errors", r.errors},
          {"duration_s", r.duration_s},
          {"qps", r.qps},
          {"latency_us", latency_json(r.latency_us)},
          {"status", status_json(r.status)},
          {"error_kinds", r.error_kinds},
          {"bytes_read", r.bytes_read},
          {"server", to_json(r.server)},
          {"client", to_json(r.client)},
          {"target_startup_ms", r.target_startup_ms},
          {"histogram", r.histogram}};
}

nlohmann::json to_json(const CellResult& c) {
  nlohmann::json j = {{"key", c.cell.key()},
                      {"target", c.cell.target},
                      {"delay_ms", c.cell.delay_ms},
                      {"threads", c.cell.threads},
                      {"connections", c.cell.connections},
                      {"ok", c.ok()}};
  if (!c.error.empty()) j["error"] = c.error;
  nlohmann::json reps = nlohmann::json::array();
  for (auto& r : c.reps) reps.push_back(to_json(r));
  if (!c.reps.empty()) {
    const auto& m = c.median();
    j["requests"] = m.requests;
    j["errors"] = m.errors;
    j["duration_s"] = m.duration_s;
    j["qps"] = m.qps;
    j["qps_min"] = c.qps_min();
    j["qps_max"] = c.qps_max();
    j["latency_us"] = latency_json(m.latency_us);
    j["status"] = status_json(m.status);
    j["server"] = to_json(m.server);
    j["client"] = to_json(m.client);
  }
  j["repetitions"] = reps;
  return j;
}

}  // namespace loadlab::controller
