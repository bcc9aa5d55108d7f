#include "loadlab/load/load_spec.hpp"

#include <sstream>

#include "loadlab/proto/protocols.hpp"
#include "loadlab/shared/endpoint.hpp"
#include "loadlab/shared/http_syntax.hpp"
#include "loadlab/shared/input_error.hpp"

namespace loadlab::load {

namespace {

std::string fmt(double v) {
  std::ostringstream o;
  o.precision(17);
  o << v;
  return o.str();
}

}  // namespace

LoadOptions options_from_spec(const v1::LoadSpec& s) {
  LoadOptions o;
  const bool tls = proto::uses_tls(s.protocol());
  o.url = (tls ? "https://" : "http://") + s.endpoint() + (s.path().empty() ? "/" : s.path());
  if (tls) {
    o.tls_version = s.tls_version();
    o.insecure = true;  // a lab's targets make their own certificates: nothing to verify them by
    o.tls_resume = s.tls_resume();
  }
  // HTTP/2 over TLS (ALPN) or, on http://, with prior knowledge (h2c).
  if (s.protocol() == v1::PROTOCOL_H2 || s.protocol() == v1::PROTOCOL_H2C) o.protocol = "h2";
  if (s.protocol() == v1::PROTOCOL_H3) o.protocol = "h3";  // QUIC, always over TLS 1.3
  o.zero_rtt = s.zero_rtt();
  if (s.streams() != 0) o.streams = static_cast<int>(std::min<uint32_t>(s.streams(), INT32_MAX));
  o.threads = static_cast<int>(std::min<uint32_t>(s.threads(), INT32_MAX));
  o.connections = static_cast<int>(std::min<uint32_t>(s.connections(), INT32_MAX));
  switch (s.stop_case()) {
    case v1::LoadSpec::kRequestsPerThread:
      o.requests_per_thread = static_cast<int64_t>(std::min<uint64_t>(s.requests_per_thread(), INT64_MAX));
      break;
    case v1::LoadSpec::kTotalRequests:
      o.total_requests = static_cast<int64_t>(std::min<uint64_t>(s.total_requests(), INT64_MAX));
      break;
    case v1::LoadSpec::kDurationS:
      o.duration_s = s.duration_s();
      break;
    default:
      break;
  }
  o.warmup_s = s.warmup_s();
  if (s.rate() != 0) o.rate = s.rate();
  o.arrivals = s.arrivals();
  if (o.arrivals == proto::kPoissonArrivals) o.seed = s.seed();
  if (s.pace_granularity_us() != 0) o.pace_granularity_us = s.pace_granularity_us();
  if (!s.method().empty()) o.method = s.method();
  for (const auto& [k, v] : s.headers()) o.headers.push_back(k + ": " + v);
  o.body = s.body();
  if (s.timeout_ms() != 0) o.timeout_ms = static_cast<int>(std::min<uint32_t>(s.timeout_ms(), INT32_MAX));
  o.keep_alive = s.keep_alive();
  o.scheduled_start = s.scheduled_start();
  if (s.cell_threads() != 0) o.pace_share = std::make_pair(s.first_thread(), s.cell_threads());
  o.output = OutputMode::kJsonEvents;
  return o;
}

void validate_spec(const v1::LoadSpec& s) {
  auto ep = parse_endpoint(s.endpoint());
  if (!ep || ep->host.empty() || ep->port == 0)
    throw InputError("endpoint", "must be HOST:PORT with a port in 1..65535, got \"" + s.endpoint() + "\"");
  if (!s.path().empty() && (s.path()[0] != '/' || s.path().find_first_of(" \r\n") != std::string::npos))
    throw InputError("path", "must start with '/' and hold no spaces or line breaks");
  if (s.stop_case() == v1::LoadSpec::STOP_NOT_SET)
    throw InputError("stop", "one of requests_per_thread, total_requests, duration_s is required");
  for (const auto& [k, v] : s.headers())
    if (k.find(':') != std::string::npos) throw InputError("headers/" + k, "a header name holds no ':'");
  std::vector<std::string> names;
  for (const auto& [k, v] : s.headers()) names.push_back(k);
  if (auto same = same_header_names(names))
    throw InputError("headers/" + same->second,
                     "names the same header as headers/" + same->first +
                         " (header names are compared ignoring case: give it once)");
  LoadOptions o = options_from_spec(s);
  try {
    complete_and_validate(o);
  } catch (const InputError& e) {
    throw e.within("LoadSpec (as loadlab-load flags)");
  }
}

std::vector<std::string> command_line(const std::string& binary, const LoadOptions& o,
                                      const std::string& body_file) {
  std::vector<std::string> argv{binary, o.url,
                                "-t",   std::to_string(o.threads),
                                "-c",   std::to_string(o.connections ? o.connections : o.threads)};
  if (o.requests_per_thread) argv.insert(argv.end(), {"-n", std::to_string(*o.requests_per_thread)});
  if (o.total_requests) argv.insert(argv.end(), {"--total", std::to_string(*o.total_requests)});
  if (o.duration_s) argv.insert(argv.end(), {"-d", fmt(*o.duration_s)});
  if (o.warmup_s > 0) argv.insert(argv.end(), {"--warmup", fmt(o.warmup_s)});
  if (o.method != "GET") argv.insert(argv.end(), {"-m", o.method});
  for (const auto& h : o.headers) argv.insert(argv.end(), {"-H", h});
  if (!o.body.empty())
    argv.insert(argv.end(),
                {body_file.empty() ? "--body" : "--body-file", body_file.empty() ? o.body : body_file});
  argv.insert(argv.end(), {"--timeout", std::to_string(o.timeout_ms)});
  if (o.rate) argv.insert(argv.end(), {"--rate", fmt(*o.rate)});
  if (!o.arrivals.empty()) argv.insert(argv.end(), {"--arrivals", o.arrivals});
  if (o.seed) argv.insert(argv.end(), {"--seed", std::to_string(*o.seed)});
  if (o.pace_granularity_us) argv.insert(argv.end(), {"--pace-granularity", fmt(*o.pace_granularity_us)});
  if (!o.keep_alive) argv.push_back("--no-keepalive");
  if (!o.tls_version.empty()) argv.insert(argv.end(), {"--tls-version", o.tls_version});
  if (!o.ca_file.empty()) argv.insert(argv.end(), {"--ca", o.ca_file});
  if (o.insecure) argv.push_back("--insecure");
  if (o.tls_resume) argv.push_back("--tls-resume");
  if (o.zero_rtt) argv.push_back("--zero-rtt");
  if (!o.protocol.empty()) argv.insert(argv.end(), {"--protocol", o.protocol});
  if (o.streams) argv.insert(argv.end(), {"--streams", std::to_string(*o.streams)});
  if (o.scheduled_start) argv.push_back("--start-on-signal");
  if (o.pace_share)
    argv.insert(argv.end(), {"--pace-share", std::to_string(o.pace_share->first) + "/" +
                                                 std::to_string(o.pace_share->second)});
  argv.push_back("--json-events");
  return argv;
}

}  // namespace loadlab::load
