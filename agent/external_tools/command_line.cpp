#include "loadlab/clients/command_line.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "loadlab/proto/protocols.hpp"
#include "loadlab/shared/endpoint.hpp"
#include "loadlab/shared/http_syntax.hpp"
#include "loadlab/shared/json_input.hpp"
#include "loadlab/shared/limits.hpp"

namespace loadlab::clients {

namespace {

constexpr const char* kWrkScript = "loadlab-wrk.lua";
constexpr const char* kH2loadBody = "loadlab-h2load-body";
constexpr const char* kHeyBody = "loadlab-hey-body";  // -D: one argument holds at most 128 KiB

[[noreturn]] void refuse(const std::string& field, Tool tool, const std::string& message) {
  throw InputError(field, std::string(tool_name(tool)) + " " + message);
}

std::string fmt(double v) {
  std::ostringstream o;
  o.precision(15);
  o << v;
  return o.str();
}

// Whether `seconds` is a whole number of milliseconds (1.1 × 1000 is 1100.0000000000002 in binary).
bool whole_ms(double seconds) { return std::fabs(seconds * 1000 - std::round(seconds * 1000)) < 1e-6; }

uint32_t connections(const v1::LoadSpec& s) { return s.connections() ? s.connections() : s.threads(); }
uint32_t timeout_ms(const v1::LoadSpec& s) { return s.timeout_ms() ? s.timeout_ms() : kDefaultTimeoutMs; }
std::string method(const v1::LoadSpec& s) { return s.method().empty() ? "GET" : s.method(); }
v1::Protocol protocol(const v1::LoadSpec& s) {
  return s.protocol() == v1::PROTOCOL_UNSPECIFIED ? v1::PROTOCOL_HTTP1 : s.protocol();
}
bool http2(const v1::LoadSpec& s) {
  return protocol(s) == v1::PROTOCOL_H2 || protocol(s) == v1::PROTOCOL_H2C;
}

bool has_connection_header(const v1::LoadSpec& s) {
  for (const auto& [k, v] : s.headers()) {
    std::string lower;
    for (char c : k) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower == "connection") return true;
  }
  return false;
}

// How the load stops: one of a request count per thread, a total request count or a duration.
void check_stop(const v1::LoadSpec& s) {
  switch (s.stop_case()) {
    case v1::LoadSpec::kRequestsPerThread:
      if (s.requests_per_thread() < 1 ||
          s.requests_per_thread() > static_cast<uint64_t>(limits::kMaxRequests))
        throw InputError("requests_per_thread", "must be in 1.." + std::to_string(limits::kMaxRequests));
      break;
    case v1::LoadSpec::kTotalRequests:
      if (s.total_requests() < 1 || s.total_requests() > static_cast<uint64_t>(limits::kMaxRequests))
        throw InputError("total_requests", "must be in 1.." + std::to_string(limits::kMaxRequests));
      break;
    case v1::LoadSpec::kDurationS:
      if (!(s.duration_s() > 0) || s.duration_s() > limits::kMaxDurationS)
        throw InputError("duration_s", "must be in (0, " + fmt(limits::kMaxDurationS) + "] seconds");
      break;
    default:
      throw InputError("stop", "one of requests_per_thread, total_requests, duration_s is required");
  }
}

// The request: an HTTP method token, valid headers, a body within the limit.
void check_request(const v1::LoadSpec& s) {
  if (!s.method().empty() &&
      (!is_http_token(s.method()) || s.method().size() > static_cast<size_t>(limits::kMaxMethodLength)))
    throw InputError(
        "method", "must be an HTTP token of 1.." + std::to_string(limits::kMaxMethodLength) + " characters");
  for (const auto& [k, v] : s.headers()) {
    if (!is_http_token(k)) throw InputError("headers/" + k, "a header name must be an HTTP token");
    if (v.find_first_of("\r\n") != std::string::npos)
      throw InputError("headers/" + k, "a header value holds no line breaks");
  }
  if (s.body().size() > static_cast<size_t>(limits::kMaxBodyBytes))
    throw InputError("body", "must be at most " + std::to_string(limits::kMaxBodyBytes) + " bytes");
}

// What the tool can do: the protocol, TLS version, TLS resumption, 0-RTT, streams and closing
// connections the load asks for.
void check_tool_features(Tool tool, const v1::LoadSpec& s) {
  const auto spoken = protocols_of(tool);
  if (std::find(spoken.begin(), spoken.end(), protocol(s)) == spoken.end())
    refuse("protocol", tool,
           "speaks " + proto::protocol_names(spoken) + ", not " +
               std::string(proto::protocol_name(protocol(s))));
  if (!s.tls_version().empty() && s.tls_version() != proto::kDefaultTlsVersion)
    refuse("tls_version", tool,
           "cannot force a TLS version (it offers TLS 1.3 and takes what the server picks): tls_version must "
           "be 1.3, got " +
               s.tls_version());
  if (s.tls_resume()) refuse("tls_resume", tool, "cannot resume TLS sessions: tls_resume must be false");
  if (s.zero_rtt()) refuse("zero_rtt", tool, "cannot send 0-RTT early data: zero_rtt must be false");
  if (s.streams() > 1 && !(tool == Tool::kH2load && http2(s)))
    refuse("streams", tool,
           "keeps one request in flight per connection" +
               std::string(tool == Tool::kH2load ? " over HTTP/1.1" : "") + ": streams must be 1, got " +
               std::to_string(s.streams()));
  if (s.streams() > static_cast<uint32_t>(limits::kMaxStreams))
    throw InputError("streams", "must be in 1.." + std::to_string(limits::kMaxStreams));
  if (!s.arrivals().empty() && s.arrivals() != proto::kUniformArrivals)
    refuse("arrivals", tool,
           "paces its requests evenly (if at all): arrivals must be uniform, got " + s.arrivals());
  if (s.pace_granularity_us() != 0)
    refuse("pace_granularity_us", tool, "paces by its own timers: pace_granularity_us must be 0");
  if (!s.keep_alive() && has_connection_header(s))
    refuse("keep_alive", tool,
           "closes connections with a 'Connection: close' header: keep_alive false and a Connection header "
           "in headers contradict");
}

// What every tool needs, with the worker's own limits (shared/limits.hpp).
void check_common(Tool tool, const v1::LoadSpec& s) {
  auto ep = parse_endpoint(s.endpoint());
  if (!ep || ep->host.empty() || ep->port == 0)
    throw InputError("endpoint", "must be HOST:PORT with a port in 1..65535, got \"" + s.endpoint() + "\"");
  if (!s.path().empty() && (s.path()[0] != '/' || s.path().find_first_of(" \t\r\n") != std::string::npos))
    throw InputError("path", "must start with '/' and hold no spaces or line breaks");
  if (s.threads() < 1 || s.threads() > static_cast<uint32_t>(limits::kMaxThreads))
    throw InputError("threads", "must be in 1.." + std::to_string(limits::kMaxThreads));
  if (connections(s) > static_cast<uint32_t>(limits::kMaxConnections))
    throw InputError("connections", "must be at most " + std::to_string(limits::kMaxConnections));
  check_stop(s);
  if (!(s.warmup_s() >= 0) || s.warmup_s() > limits::kMaxWarmupS)
    throw InputError("warmup_s", "must be in 0.." + fmt(limits::kMaxWarmupS) + " seconds");
  if (!(s.rate() >= 0) || !std::isfinite(s.rate()))
    throw InputError("rate", "must be 0 (closed loop) or positive");
  check_request(s);
  if (s.timeout_ms() > static_cast<uint32_t>(limits::kMaxTimeoutMs))
    throw InputError("timeout_ms", "must be at most " + std::to_string(limits::kMaxTimeoutMs));
  check_tool_features(tool, s);
}

void check_wrk(const v1::LoadSpec& s) {
  const Tool t = Tool::kWrk;
  if (s.stop_case() == v1::LoadSpec::kRequestsPerThread)
    refuse("requests_per_thread", t, "stops only after a duration: use duration_s (whole seconds)");
  if (s.stop_case() == v1::LoadSpec::kTotalRequests)
    refuse("total_requests", t, "stops only after a duration: use duration_s (whole seconds)");
  if (s.duration_s() != std::floor(s.duration_s()))
    refuse("duration_s", t, "takes whole seconds (-d Ns), got " + fmt(s.duration_s()));
  if (s.warmup_s() > 0) refuse("warmup_s", t, "has no warm-up: warmup_s must be 0");
  if (s.rate() > 0) refuse("rate", t, "is closed loop only (wrk2's -R is not wrk): rate must be 0");
  if (connections(s) < s.threads()) refuse("connections", t, "needs at least one connection per thread");
  if (connections(s) % s.threads() != 0)
    refuse("connections", t,
           "gives each thread connections/threads and drops the remainder: connections must be a multiple "
           "of threads (" +
               std::to_string(s.threads()) + ")");
  if (timeout_ms(s) % 1000 != 0)
    refuse("timeout_ms", t,
           "takes whole seconds (--timeout Ns), got " + std::to_string(s.timeout_ms()) + " ms");
}

void check_hey(const v1::LoadSpec& s) {
  const Tool t = Tool::kHey;
  if (s.stop_case() == v1::LoadSpec::kRequestsPerThread)
    refuse("requests_per_thread", t,
           "has no per-thread count (its -n is split over workers = connections): use total_requests or "
           "duration_s");
  if (s.stop_case() == v1::LoadSpec::kTotalRequests) {
    if (s.total_requests() < connections(s) || s.total_requests() % connections(s) != 0)
      refuse("total_requests", t,
             "runs total/connections requests per worker and drops the remainder: total_requests must be a "
             "multiple of connections (" +
                 std::to_string(connections(s)) + ")");
    if (s.total_requests() > 2147483647ull) refuse("total_requests", t, "takes -n up to 2147483647");
  }
  if (s.stop_case() == v1::LoadSpec::kDurationS && !whole_ms(s.duration_s()))
    refuse("duration_s", t, "is given whole milliseconds (-z Nms), got " + fmt(s.duration_s()));
  for (char c : method(s))
    if (std::islower(static_cast<unsigned char>(c)))
      refuse("method", t, "upper-cases the method: give it in upper case, got " + s.method());
  if (s.warmup_s() > 0) refuse("warmup_s", t, "has no warm-up: warmup_s must be 0");
  if (timeout_ms(s) % 1000 != 0)
    refuse("timeout_ms", t, "takes whole seconds (-t N), got " + std::to_string(s.timeout_ms()) + " ms");
  for (const auto& [k, v] : s.headers()) {
    // hey reads -H with the pattern ^([\w-]+):\s*(.+) and exits on anything else.
    for (char c : k)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_')
        refuse("headers/" + k, t, "takes header names of letters, digits, '-' and '_' only");
    if (v.find_first_not_of(" \t") == std::string::npos)
      refuse("headers/" + k, t, "takes no header with an empty value");
  }
}

void check_h2load(const v1::LoadSpec& s) {
  const Tool t = Tool::kH2load;
  if (!s.keep_alive() && http2(s))
    refuse(
        "keep_alive", t,
        "closes connections only with a 'Connection: close' header, which HTTP/2 forbids: keep_alive must be "
        "true over h2 and h2c");
  if (connections(s) < s.threads())
    refuse("connections", t, "needs at least one client (connection) per thread");
  if (s.stop_case() == v1::LoadSpec::kDurationS) {
    if (!whole_ms(s.duration_s()))
      refuse("duration_s", t, "takes whole milliseconds (-D Nms), got " + fmt(s.duration_s()));
    if (!whole_ms(s.warmup_s()))
      refuse("warmup_s", t, "takes whole milliseconds (--warm-up-time Nms), got " + fmt(s.warmup_s()));
  } else {
    if (s.warmup_s() > 0)
      refuse("warmup_s", t, "warms up only before a duration (-D): warmup_s must be 0 here");
    uint64_t n = s.stop_case() == v1::LoadSpec::kTotalRequests ? s.total_requests()
                                                               : s.requests_per_thread() * s.threads();
    if (n < connections(s))
      refuse(s.stop_case() == v1::LoadSpec::kTotalRequests ? "total_requests" : "requests_per_thread", t,
             "needs at least one request per client (connection): " + std::to_string(connections(s)));
  }
  if (s.rate() > 0 && timeout_ms(s) * s.rate() <= 1000.0 * connections(s))
    refuse("timeout_ms", t,
           "times out idle connections (-N): with rate " + fmt(s.rate()) + " over " +
               std::to_string(connections(s)) +
               " connections the timeout must exceed the gap between a "
               "connection's requests, " +
               fmt(1000.0 * connections(s) / s.rate()) + " ms");
}

bool wrk_needs_script(const v1::LoadSpec& s) { return method(s) != "GET" || !s.body().empty(); }

std::string url(const v1::LoadSpec& s) {
  return std::string(proto::uses_tls(protocol(s)) ? "https://" : "http://") +
         parse_endpoint(s.endpoint())->to_string() + (s.path().empty() ? "/" : s.path());
}

std::string in_dir(const std::string& dir, const char* name) {
  if (dir.empty()) throw std::invalid_argument(std::string("command_line: aux_dir is required for ") + name);
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

std::vector<std::string> wrk_argv(const std::string& program, const v1::LoadSpec& s, const std::string& dir) {
  std::vector<std::string> a{program,
                             "-t",
                             std::to_string(s.threads()),
                             "-c",
                             std::to_string(connections(s)),
                             "-d",
                             fmt(s.duration_s()) + "s",
                             "--timeout",
                             std::to_string(timeout_ms(s) / 1000) + "s",
                             "--latency"};
  for (const auto& [k, v] : s.headers()) a.insert(a.end(), {"-H", k + ": " + v});
  if (!s.keep_alive()) a.insert(a.end(), {"-H", "Connection: close"});
  if (wrk_needs_script(s)) a.insert(a.end(), {"-s", in_dir(dir, kWrkScript)});
  a.push_back(url(s));
  return a;
}

std::vector<std::string> hey_argv(const std::string& program, const v1::LoadSpec& s, const std::string& dir) {
  std::vector<std::string> a{program, "-c", std::to_string(connections(s)), "-cpus",
                             std::to_string(s.threads())};
  if (s.stop_case() == v1::LoadSpec::kTotalRequests)
    a.insert(a.end(), {"-n", std::to_string(s.total_requests())});
  else
    a.insert(a.end(), {"-z", std::to_string(std::llround(s.duration_s() * 1000)) + "ms"});
  a.insert(a.end(), {"-t", std::to_string(timeout_ms(s) / 1000), "-m", method(s)});
  if (s.rate() > 0) a.insert(a.end(), {"-q", fmt(s.rate() / connections(s))});
  for (const auto& [k, v] : s.headers()) a.insert(a.end(), {"-H", k + ": " + v});
  if (!s.body().empty()) a.insert(a.end(), {"-D", in_dir(dir, kHeyBody)});
  if (!s.keep_alive()) a.push_back("-disable-keepalive");
  // hey follows redirects by default: an allowed host that redirects would carry the load
  // past the agent's --allow-load-to. (wrk and h2load never follow one.)
  a.push_back("-disable-redirects");
  a.push_back(url(s));
  return a;
}

std::vector<std::string> h2load_argv(const std::string& program, const v1::LoadSpec& s,
                                     const std::string& dir) {
  // HTTP/1.1 by --h1 (ALPN http/1.1 over TLS); h2 offers only h2 in ALPN, so a server
  // without HTTP/2 fails the run instead of serving HTTP/1.1; h2c is h2load's default on http://.
  std::vector<std::string> a{program};
  if (http2(s))
    a.insert(a.end(), {"--npn-list=h2", "-m", std::to_string(std::max<uint32_t>(1, s.streams()))});
  else
    a.push_back("--h1");
  a.insert(a.end(), {"-t", std::to_string(s.threads()), "-c", std::to_string(connections(s))});
  switch (s.stop_case()) {
    case v1::LoadSpec::kRequestsPerThread:
      // h2load gives thread i -n/t requests (+1 for the first n%t): n = per-thread × t is exact.
      a.insert(a.end(), {"-n", std::to_string(s.requests_per_thread() * s.threads())});
      break;
    case v1::LoadSpec::kTotalRequests:
      a.insert(a.end(), {"-n", std::to_string(s.total_requests())});
      break;
    default:
      a.insert(a.end(), {"-D", std::to_string(std::llround(s.duration_s() * 1000)) + "ms"});
      if (s.warmup_s() > 0)
        a.insert(a.end(), {"--warm-up-time", std::to_string(std::llround(s.warmup_s() * 1000)) + "ms"});
      break;
  }
  a.insert(a.end(), {"-N", std::to_string(timeout_ms(s)) + "ms"});
  if (s.rate() > 0) a.insert(a.end(), {"--rps", fmt(s.rate() / connections(s))});
  if (method(s) != "GET") a.insert(a.end(), {"-H", ":method: " + method(s)});
  for (const auto& [k, v] : s.headers()) a.insert(a.end(), {"-H", k + ": " + v});
  if (!s.keep_alive()) a.insert(a.end(), {"-H", "Connection: close"});
  if (!s.body().empty()) a.insert(a.end(), {"-d", in_dir(dir, kH2loadBody)});
  a.push_back(url(s));
  return a;
}

}  // namespace

std::vector<v1::Protocol> protocols_of(Tool tool) {
  if (tool == Tool::kH2load)
    return {v1::PROTOCOL_HTTP1, v1::PROTOCOL_HTTPS, v1::PROTOCOL_H2, v1::PROTOCOL_H2C};
  return {v1::PROTOCOL_HTTP1, v1::PROTOCOL_HTTPS};
}

void check_spec(Tool tool, const v1::LoadSpec& spec) {
  check_common(tool, spec);
  switch (tool) {
    case Tool::kWrk:
      return check_wrk(spec);
    case Tool::kHey:
      return check_hey(spec);
    case Tool::kH2load:
      return check_h2load(spec);
  }
}

std::string wrk_script(const v1::LoadSpec& spec) {
  auto quote = [](const std::string& s) {
    std::string out = "\"";
    for (unsigned char c : s) {
      if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
        out += static_cast<char>(c);
      } else {
        out += fmt::format("\\{:03}", c);  // Lua's decimal escape: any byte, exactly
      }
    }
    return out + "\"";
  };
  std::string script = "-- written by loadlab from a LoadSpec: method and body of every request\n";
  script += "wrk.method = " + quote(method(spec)) + "\n";
  if (!spec.body().empty()) script += "wrk.body = " + quote(spec.body()) + "\n";
  return script;
}

std::vector<AuxFile> aux_files(Tool tool, const v1::LoadSpec& spec) {
  check_spec(tool, spec);
  if (tool == Tool::kWrk && wrk_needs_script(spec)) return {{kWrkScript, wrk_script(spec)}};
  if (tool == Tool::kH2load && !spec.body().empty()) return {{kH2loadBody, spec.body()}};
  if (tool == Tool::kHey && !spec.body().empty()) return {{kHeyBody, spec.body()}};
  return {};
}

std::vector<std::string> command_line(Tool tool, const std::string& program_path, const v1::LoadSpec& spec,
                                      const std::string& aux_dir) {
  check_spec(tool, spec);
  switch (tool) {
    case Tool::kWrk:
      return wrk_argv(program_path, spec, aux_dir);
    case Tool::kHey:
      return hey_argv(program_path, spec, aux_dir);
    case Tool::kH2load:
      return h2load_argv(program_path, spec, aux_dir);
  }
  return {};
}

}  // namespace loadlab::clients
