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

void UsageResult::add(const UsageResult& o) {
  window_s = std::max(window_s, o.window_s);
  cpu_pct += o.cpu_pct;
  cpu_user_pct += o.cpu_user_pct;
  cpu_system_pct += o.cpu_system_pct;
  rss_kb_mean += o.rss_kb_mean;
  rss_kb_peak += o.rss_kb_peak;
  samples += o.samples;
  // Machine figures stay per machine: keep the busiest.
  if (o.machine_cpu_pct > machine_cpu_pct) {
    machine_cpu_pct = o.machine_cpu_pct;
    machine_cores = o.machine_cores;
  }
  if (series.empty()) series = o.series;
}

std::vector<std::string> CellResult::flags() const {
  std::vector<std::string> out;
  for (auto& r : reps)
    for (auto& f : r.flags)
      if (std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
  return out;
}

nlohmann::json to_json(const UsageResult& u) {
  nlohmann::json series = nlohmann::json::array();
  for (auto& p : u.series) series.push_back({p.t_s, p.cpu_pct, p.rss_kb});
  return {{"cpu_pct", u.cpu_pct},
          {"cpu_user_pct", u.cpu_user_pct},
          {"cpu_system_pct", u.cpu_system_pct},
          {"rss_kb_mean", u.rss_kb_mean},
          {"rss_kb_peak", u.rss_kb_peak},
          {"window_s", u.window_s},
          {"samples", u.samples},
          {"machine_cpu_pct", u.machine_cpu_pct},
          {"machine_cores", u.machine_cores},
          {"series", series}};  // [t_s, cpu_pct, rss_kb] every sampling interval
}

namespace {
nlohmann::json latency_json(const LatencyUs& l) {
  return {{"p50", l.p50}, {"p90", l.p90},   {"p99", l.p99}, {"p999", l.p999},
          {"max", l.max}, {"mean", l.mean}, {"min", l.min}};
}
nlohmann::json status_json(const std::map<uint32_t, uint64_t>& m) {
  nlohmann::json j = nlohmann::json::object();
  for (auto& [code, n] : m) j[std::to_string(code)] = n;
  return j;
}
nlohmann::json parts_json(const std::vector<LoadPart>& parts) {
  nlohmann::json out = nlohmann::json::array();
  for (auto& p : parts)
    out.push_back({{"agent", p.agent},
                   {"threads", p.threads},
                   {"connections", p.connections},
                   {"requests", p.requests},
                   {"errors", p.errors},
                   {"qps", p.qps},
                   {"client", to_json(p.client)}});
  return out;
}

UsageResult usage_from_json(const nlohmann::json& j) {
  UsageResult u;
  u.window_s = j.value("window_s", 0.0);
  u.cpu_pct = j.value("cpu_pct", 0.0);
  u.cpu_user_pct = j.value("cpu_user_pct", 0.0);
  u.cpu_system_pct = j.value("cpu_system_pct", 0.0);
  u.rss_kb_mean = j.value("rss_kb_mean", uint64_t{0});
  u.rss_kb_peak = j.value("rss_kb_peak", uint64_t{0});
  u.samples = j.value("samples", 0u);
  u.machine_cpu_pct = j.value("machine_cpu_pct", -1.0);
  u.machine_cores = j.value("machine_cores", 0u);
  if (j.contains("series"))
    for (auto& p : j["series"])
      u.series.push_back({p[0].get<double>(), p[1].get<double>(), p[2].get<uint64_t>()});
  return u;
}

LatencyUs latency_from_json(const nlohmann::json& l) {
  return {l.value("p50", 0.0), l.value("p90", 0.0),  l.value("p99", 0.0), l.value("p999", 0.0),
          l.value("max", 0.0), l.value("mean", 0.0), l.value("min", 0.0)};
}

}  // namespace

CellResult cell_from_json(const nlohmann::json& j, const Cell& cell) {
  CellResult c;
  c.cell = cell;
  c.error = j.value("error", std::string());
  for (auto& r : j.at("repetitions")) {
    RepResult rep;
    rep.requests = r.at("requests").get<uint64_t>();
    rep.errors = r.at("errors").get<uint64_t>();
    rep.duration_s = r.at("duration_s").get<double>();
    rep.qps = r.at("qps").get<double>();
    rep.latency_us = latency_from_json(r.at("latency_us"));
    rep.latency_uncorrected_us =
        latency_from_json(r.value("latency_uncorrected_us", nlohmann::json::object()));
    rep.latency_corrected = r.value("latency_corrected", false);
    rep.rate = r.value("rate", 0.0);
    rep.achieved_rate = r.value("achieved_rate", 0.0);
    rep.rate_not_held = r.value("rate_not_held", false);
    rep.connects = r.value("connects", uint64_t{0});
    rep.connect_us = latency_from_json(r.value("connect_us", nlohmann::json::object()));
    for (auto& [code, n] : r.at("status").items())
      rep.status[static_cast<uint32_t>(std::stoul(code))] = n.get<uint64_t>();
    const auto kinds = r.value("error_kinds", nlohmann::json::object());  // items() needs a living object
    for (auto& [kind, n] : kinds.items()) rep.error_kinds[kind] = n.get<uint64_t>();
    rep.bytes_read = r.value("bytes_read", uint64_t{0});
    rep.histogram = r.at("histogram");
    rep.server = usage_from_json(r.at("server"));
    rep.client = usage_from_json(r.at("client"));
    rep.target_startup_ms = r.value("target_startup_ms", 0u);
    rep.target_agent = r.value("target_agent", std::string());
    for (auto& p : r.value("load_parts", nlohmann::json::array()))
      rep.parts.push_back({p.at("agent").get<std::string>(), p.at("threads").get<uint32_t>(),
                           p.at("connections").get<uint32_t>(), p.at("requests").get<uint64_t>(),
                           p.at("errors").get<uint64_t>(), p.at("qps").get<double>(),
                           usage_from_json(p.at("client"))});
    rep.flags = r.value("flags", std::vector<std::string>());
    rep.attempts = r.value("attempts", 1u);
    c.reps.push_back(std::move(rep));
  }
  return c;
}

nlohmann::json to_json(const RepResult& r) {
  return {{"requests", r.requests},
          {"errors", r.errors},
          {"duration_s", r.duration_s},
          {"qps", r.qps},
          {"latency_us", latency_json(r.latency_us)},
          {"latency_uncorrected_us", latency_json(r.latency_uncorrected_us)},
          {"latency_corrected", r.latency_corrected},
          {"rate", r.rate},
          {"achieved_rate", r.achieved_rate},
          {"rate_not_held", r.rate_not_held},
          {"connects", r.connects},
          {"connect_us", latency_json(r.connect_us)},
          {"status", status_json(r.status)},
          {"error_kinds", r.error_kinds},
          {"bytes_read", r.bytes_read},
          {"server", to_json(r.server)},
          {"client", to_json(r.client)},
          {"target_startup_ms", r.target_startup_ms},
          {"target_agent", r.target_agent},
          {"load_parts", parts_json(r.parts)},
          {"flags", r.flags},
          {"attempts", r.attempts},
          {"histogram", r.histogram}};
}

nlohmann::json to_json(const CellResult& c) {
  nlohmann::json j = {
      {"key", c.cell.key()},       {"target", c.cell.target},           {"delay_ms", c.cell.delay_ms},
      {"threads", c.cell.threads}, {"connections", c.cell.connections}, {"ok", c.ok()}};
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
    j["latency_uncorrected_us"] = latency_json(m.latency_uncorrected_us);
    j["latency_corrected"] = m.latency_corrected;
    j["status"] = status_json(m.status);
    j["server"] = to_json(m.server);
    j["client"] = to_json(m.client);
    j["server"].erase("series");  // the series stay with their repetition
    j["client"].erase("series");
  }
  j["flags"] = c.flags();
  j["repetitions"] = reps;
  return j;
}

}  // namespace loadlab::controller
