#include "loadlab/agent/load_result_json.hpp"

#include <cmath>
#include <sstream>

#include "loadlab/shared/endpoint.hpp"
#include "loadlab/shared/histogram.hpp"
#include "loadlab/shared/limits.hpp"

namespace loadlab::agent {

namespace {
double num(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}
uint64_t count(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<uint64_t>() : 0;
}
std::string fmt(double v) {
  std::ostringstream o;
  o.precision(15);
  o << v;
  return o.str();
}
void fill_latency(const nlohmann::json& l, v1::Latency* lat) {
  lat->set_p50_us(num(l, "p50"));
  lat->set_p90_us(num(l, "p90"));
  lat->set_p99_us(num(l, "p99"));
  lat->set_p999_us(num(l, "p999"));
  lat->set_max_us(num(l, "max"));
  lat->set_mean_us(num(l, "mean"));
  lat->set_min_us(num(l, "min"));
}

void fill_histogram(const nlohmann::json& j, v1::Histogram* ph) {
  auto h = Histogram::from_json(j);
  ph->set_highest_trackable(static_cast<uint64_t>(h.highest_trackable()));
  ph->set_significant_digits(static_cast<uint32_t>(h.significant_digits()));
  for (auto& [index, n] : h.sparse()) {
    auto* b = ph->add_buckets();
    b->set_index(index);
    b->set_count(n);
  }
}

}  // namespace

std::string load_result_from_json(const nlohmann::json& j, v1::LoadResult* out) {
  if (!j.is_object()) return "result is not a JSON object";
  for (const char* key : {"requests", "errors", "duration_s", "qps", "latency_us", "histogram"})
    if (!j.contains(key)) return std::string("result lacks \"") + key + "\"";
  out->set_requests(count(j, "requests"));
  out->set_errors(count(j, "errors"));
  out->set_duration_s(num(j, "duration_s"));
  out->set_qps(num(j, "qps"));
  out->set_bytes_read(count(j, "bytes_read"));
  out->set_threads(static_cast<uint32_t>(count(j, "threads")));
  out->set_connections(static_cast<uint32_t>(count(j, "connections")));
  fill_latency(j["latency_us"], out->mutable_latency());
  if (j.contains("latency_uncorrected_us"))
    fill_latency(j["latency_uncorrected_us"], out->mutable_latency_uncorrected());
  if (j.contains("connect_us")) fill_latency(j["connect_us"], out->mutable_connect());
  out->set_connects(count(j, "connects"));
  out->set_rate(num(j, "rate"));
  out->set_achieved_rate(num(j, "achieved_rate"));
  out->set_rate_not_held(!j.value("rate_held", true));
  out->set_latency_corrected(j.value("latency_corrected", false));
  if (auto it = j.find("status"); it != j.end() && it->is_object())
    for (auto& [code, n] : it->items())
      if (n.is_number())
        (*out->mutable_status())[static_cast<uint32_t>(std::stoul(code))] = n.get<uint64_t>();
  if (auto it = j.find("errors_by_kind"); it != j.end() && it->is_object())
    for (auto& [kind, n] : it->items())
      if (n.is_number() && n.get<uint64_t>() > 0) (*out->mutable_error_kinds())[kind] = n.get<uint64_t>();
  try {
    fill_histogram(j["histogram"], out->mutable_histogram());
    if (j.contains("histogram_uncorrected"))
      fill_histogram(j["histogram_uncorrected"], out->mutable_histogram_uncorrected());
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

std::string validate_load_spec(const v1::LoadSpec& s) {
  if (!parse_endpoint(s.endpoint())) return "endpoint: must be HOST:PORT, got \"" + s.endpoint() + "\"";
  if (!s.path().empty() && s.path()[0] != '/') return "path: must start with '/'";
  if (s.threads() < 1 || s.threads() > 4096) return "threads: must be 1..4096";
  if (s.connections() != 0 && (s.connections() < s.threads() || s.connections() > 100000))
    return "connections: must be between threads (" + std::to_string(s.threads()) + ") and 100000";
  switch (s.stop_case()) {
    case v1::LoadSpec::kRequestsPerThread:
      if (s.requests_per_thread() < 1) return "requests_per_thread: must be >= 1";
      break;
    case v1::LoadSpec::kTotalRequests:
      if (s.total_requests() < s.threads()) return "total_requests: must be >= threads";
      break;
    case v1::LoadSpec::kDurationS:
      if (!(s.duration_s() > 0 && s.duration_s() <= 86400)) return "duration_s: must be in (0, 86400]";
      break;
    default:
      return "stop: one of requests_per_thread, total_requests, duration_s is required";
  }
  if (!(s.warmup_s() >= 0 && s.warmup_s() <= 3600)) return "warmup_s: must be in [0, 3600]";
  if (s.rate() != 0) {
    double per_thread = s.rate() / s.threads();
    if (!(per_thread >= limits::kMinRatePerThread && per_thread <= limits::kMaxRatePerThread))
      return "rate: must be 0 (closed loop) or " + std::to_string(limits::kMinRatePerThread) + ".." +
             std::to_string(limits::kMaxRatePerThread) + " requests per second per thread";
  }
  for (char c : s.method())
    if (!std::isupper(static_cast<unsigned char>(c))) return "method: must be an upper-case token like GET";
  for (auto& [k, v] : s.headers()) {
    if (k.empty() || k.find_first_of(":\r\n ") != std::string::npos)
      return "headers: bad header name \"" + k + "\"";
    if (v.find_first_of("\r\n") != std::string::npos)
      return "headers/" + k + ": value must not contain CR or LF";
  }
  return "";
}

std::vector<std::string> load_command_line(const std::string& binary, const v1::LoadSpec& s) {
  std::vector<std::string> argv{binary, "http://" + s.endpoint() + (s.path().empty() ? "/" : s.path()),
                                "-t",   std::to_string(s.threads()),
                                "-c",   std::to_string(s.connections() ? s.connections() : s.threads())};
  switch (s.stop_case()) {
    case v1::LoadSpec::kRequestsPerThread:
      argv.insert(argv.end(), {"-n", std::to_string(s.requests_per_thread())});
      break;
    case v1::LoadSpec::kTotalRequests:
      argv.insert(argv.end(), {"--total", std::to_string(s.total_requests())});
      break;
    default:
      argv.insert(argv.end(), {"-d", fmt(s.duration_s())});
  }
  if (s.warmup_s() > 0) argv.insert(argv.end(), {"--warmup", fmt(s.warmup_s())});
  if (!s.method().empty()) argv.insert(argv.end(), {"-m", s.method()});
  for (auto& [k, v] : s.headers()) argv.insert(argv.end(), {"-H", k + ": " + v});
  if (!s.body().empty()) argv.insert(argv.end(), {"--body", s.body()});
  if (s.timeout_ms() > 0) argv.insert(argv.end(), {"--timeout", std::to_string(s.timeout_ms())});
  if (s.rate() > 0) argv.insert(argv.end(), {"--rate", fmt(s.rate())});
  if (!s.keep_alive()) argv.push_back("--no-keepalive");
  argv.push_back("--json-events");
  return argv;
}

}  // namespace loadlab::agent
