#include "loadlab/load/load_options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "loadlab/proto/protocols.hpp"
#include "loadlab/shared/credential_files.hpp"
#include "loadlab/shared/endpoint.hpp"
#include "loadlab/shared/http_syntax.hpp"
#include "loadlab/shared/input_error.hpp"
#include "loadlab/shared/limits.hpp"

namespace loadlab::load {

namespace {

using namespace limits;

bool is_token(std::string_view s) { return is_http_token(s); }

// Flag values are echoed in messages that must stay on one line.
std::string single_quoted(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\r')
      out += "\\r";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out + "'";
}

bool has_crlf(std::string_view s) { return has_line_break(s); }

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

Url parse_url(std::string_view text) {
  auto fail = [&](std::string message) -> Url { throw InputError("URL", message); };
  constexpr std::string_view kHttp = "http://", kHttps = "https://";
  auto starts = [&](std::string_view scheme) {
    return text.size() >= scheme.size() && iequals(text.substr(0, scheme.size()), scheme);
  };
  const bool tls = starts(kHttps);
  if (!tls && !starts(kHttp)) return fail("must be http(s)://HOST[:PORT][/PATH], got " + single_quoted(text));
  const std::string_view default_port = tls ? ":443" : ":80";
  std::string_view rest = text.substr(tls ? kHttps.size() : kHttp.size());
  size_t end = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, end);
  std::string_view target = end == std::string_view::npos ? std::string_view() : rest.substr(end);
  if (auto hash = target.find('#'); hash != std::string_view::npos) target = target.substr(0, hash);
  if (authority.empty() || authority.find('@') != std::string_view::npos || has_crlf(text) ||
      text.find(' ') != std::string_view::npos)
    return fail("must be http(s)://HOST[:PORT][/PATH], got " + single_quoted(text));

  // An authority without a port: "host" or "[v6]"; with one, parse_endpoint decides.
  bool has_port = authority.back() != ']' && authority.find(':') != std::string_view::npos &&
                  (authority.front() == '[' || authority.find(':') == authority.rfind(':'));
  auto endpoint =
      parse_endpoint(has_port ? std::string(authority) : std::string(authority) + std::string(default_port));
  if (!endpoint || endpoint->host.empty() || endpoint->port == 0)
    return fail("must be http(s)://HOST[:PORT][/PATH] with a port in 1..65535, got " + single_quoted(text));
  Url url;
  url.tls = tls;
  url.host = endpoint->host;
  url.port = endpoint->port;
  url.authority = std::string(authority);
  url.target = target.empty() ? "/" : std::string(target);
  if (url.target.front() == '?') url.target.insert(url.target.begin(), '/');
  return url;
}

namespace {

// The --tls-* flags: only with https://, each value checked.
void validate_tls(const LoadOptions& o, const Url& url) {
  const char* given = !o.tls_version.empty() ? "--tls-version"
                      : !o.ca_file.empty()   ? "--ca"
                      : o.insecure           ? "--insecure"
                      : o.tls_resume         ? "--tls-resume"
                      : o.zero_rtt           ? "--zero-rtt"
                                             : nullptr;
  if (!url.tls) {
    if (given) throw InputError(given, "needs an https:// URL, got " + single_quoted(o.url));
    return;
  }
  if (!o.tls_version.empty() && o.tls_version != "1.2" && o.tls_version != "1.3")
    throw InputError("--tls-version", "must be 1.2 or 1.3, got " + single_quoted(o.tls_version));
  if (!o.ca_file.empty() && o.insecure) throw InputError("--ca, --insecure", "give at most one");
  if (uses_h3(o) && o.tls_version == "1.2")
    throw InputError("--tls-version",
                     "must be 1.3 with --protocol h3 (QUIC runs over TLS 1.3 only), got '1.2'");
  if (o.zero_rtt && !uses_h3(o))
    throw InputError("--zero-rtt", "needs --protocol h3 (0-RTT is sent over QUIC here)");
  if (o.zero_rtt && !o.tls_resume)
    throw InputError("--zero-rtt", "needs --tls-resume (0-RTT rides on a resumed session)");
  if (!o.ca_file.empty()) {
    auto pem = read_credential_file(o.ca_file);
    if (!pem)
      throw InputError("--ca", "must be a readable regular file of at most " +
                                   std::to_string(kMaxCredentialFileBytes) + " bytes, got " +
                                   single_quoted(o.ca_file));
    // The shape only: OpenSSL, which reads them into the TLS context (tls_client.cpp), is the
    // secure family's, and validation runs in the plain program and the agent too.
    const auto begin = pem->find("-----BEGIN CERTIFICATE-----");
    if (begin == std::string::npos || pem->find("-----END CERTIFICATE-----", begin) == std::string::npos)
      throw InputError("--ca", "must hold PEM certificates (-----BEGIN CERTIFICATE-----), got " +
                                   single_quoted(o.ca_file));
  }
}

// --protocol and --streams.
void validate_protocol(const LoadOptions& o) {
  if (!o.protocol.empty() && o.protocol != "http1" && o.protocol != "h2" && o.protocol != "h3")
    throw InputError("--protocol", "must be http1, h2 or h3, got " + single_quoted(o.protocol));
  if (uses_h3(o) && !parse_url(o.url).tls)
    throw InputError("--protocol",
                     "h3 needs an https:// URL (QUIC is always encrypted), got " + single_quoted(o.url));
  if (!o.streams) return;
  if (!uses_h2(o) && !uses_h3(o))
    throw InputError("--streams", "needs --protocol h2 or h3 (HTTP/1.1 carries one request at a time)");
  if (*o.streams < 1 || *o.streams > kMaxStreams)
    throw InputError("--streams",
                     "must be in 1.." + std::to_string(kMaxStreams) + ", got " + std::to_string(*o.streams));
}

// The duration, the warm-up, and the two together: a run of at most kMaxLoadRunS.
void validate_run_time(const LoadOptions& o) {
  if (o.duration_s && (!std::isfinite(*o.duration_s) || *o.duration_s <= 0 || *o.duration_s > kMaxDurationS))
    throw InputError("-d/--duration",
                     fmt::format("must be > 0 and <= {:g} seconds, got {:g}", kMaxDurationS, *o.duration_s));
  if (!std::isfinite(o.warmup_s) || o.warmup_s < 0 || o.warmup_s > kMaxWarmupS)
    throw InputError("--warmup",
                     fmt::format("must be in 0..{:g} seconds, got {:g}", kMaxWarmupS, o.warmup_s));
  if (o.duration_s && o.warmup_s + *o.duration_s > kMaxLoadRunS)
    throw InputError("--warmup, -d/--duration",
                     fmt::format("a run of {:g} s warm-up and {:g} s measured is {:g} s, over the limit of "
                                 "{:g} s for both together",
                                 o.warmup_s, *o.duration_s, o.warmup_s + *o.duration_s, kMaxLoadRunS));
}

// --rate, --arrivals, --seed, --pace-granularity and --pace-share.
void validate_pace(const LoadOptions& o) {
  if (o.rate && (!std::isfinite(*o.rate) || *o.rate < kMinRatePerThread * o.threads ||
                 *o.rate > kMaxRatePerThread * o.threads)) {
    throw InputError("--rate", fmt::format("must be in {:g}..{:g} requests per second with {} threads "
                                           "({:g}..{:g} per thread), got {:g}",
                                           kMinRatePerThread * o.threads, kMaxRatePerThread * o.threads,
                                           o.threads, kMinRatePerThread, kMaxRatePerThread, *o.rate));
  }
  if (!o.arrivals.empty() && !proto::is_arrivals(o.arrivals))
    throw InputError("--arrivals", "must be uniform or poisson, got " + single_quoted(o.arrivals));
  if (poisson_arrivals(o) && !o.rate)
    throw InputError("--arrivals", "poisson paces an open loop: give --rate with it");
  if (o.seed && !poisson_arrivals(o))
    throw InputError("--seed", "seeds the Poisson gaps: give it with --arrivals poisson");
  if (o.pace_granularity_us) {
    if (!o.rate) throw InputError("--pace-granularity", "paces an open loop: give --rate with it");
    if (!std::isfinite(*o.pace_granularity_us) || *o.pace_granularity_us < 0 ||
        *o.pace_granularity_us > limits::kMaxPaceGranularityUs)
      throw InputError("--pace-granularity",
                       fmt::format("must be in 0..{:g} µs, got {:g}", limits::kMaxPaceGranularityUs,
                                   *o.pace_granularity_us));
    // A window placed later re-anchors the pace (anchor_pace_at_window): slots its first
    // granularity sent early, before the signal, would be counted as due in it and not sent.
    if (*o.pace_granularity_us > 0 && o.scheduled_start)
      throw InputError("--pace-granularity",
                       "must be 0 with --start-on-signal (the window re-anchors the pace)");
  }
  if (o.pace_share) {
    const auto [first, total] = *o.pace_share;
    if (!o.rate) throw InputError("--pace-share", "shares an open loop's pace: give --rate with it");
    if (total < 1 || total > static_cast<uint32_t>(limits::kMaxThreads) ||
        uint64_t{first} + static_cast<uint64_t>(o.threads) > total)
      throw InputError("--pace-share", fmt::format("FIRST/TOTAL must hold this worker's {} threads: FIRST + "
                                                   "{} <= TOTAL <= {}, got {}/{}",
                                                   o.threads, o.threads, limits::kMaxThreads, first, total));
  }
}

// What each request is: --timeout, the method, the headers, the body.
void validate_request(const LoadOptions& o) {
  if (o.timeout_ms < 1 || o.timeout_ms > kMaxTimeoutMs)
    throw InputError("--timeout", "must be in 1..3600000 ms, got " + std::to_string(o.timeout_ms));
  if (!is_token(o.method) || o.method.size() > static_cast<size_t>(kMaxMethodLength))
    throw InputError("-m/--method",
                     "must be an HTTP method token (e.g. GET, POST), got " + single_quoted(o.method));
  for (const auto& h : o.headers) {
    auto colon = h.find(':');
    if (colon == std::string::npos || !is_token(std::string_view(h).substr(0, colon)) || has_crlf(h))
      throw InputError("-H/--header",
                       "must be 'Name: value' with a token name and no line break, got " + single_quoted(h));
  }
  if (o.body.size() > static_cast<size_t>(kMaxBodyBytes))
    throw InputError("--body", "must be at most 1 MiB (" + std::to_string(kMaxBodyBytes) + " bytes), got " +
                                   std::to_string(o.body.size()));
}

}  // namespace

void complete_and_validate(LoadOptions& o) {
  validate_tls(o, parse_url(o.url));
  validate_protocol(o);
  if (o.threads < 1 || o.threads > kMaxThreads)
    throw InputError("-t/--threads",
                     "must be in 1.." + std::to_string(kMaxThreads) + ", got " + std::to_string(o.threads));
  if (o.connections == 0) o.connections = o.threads;
  int64_t max_connections = std::min<int64_t>(kMaxConnections, int64_t{kMaxConnectionsPerThread} * o.threads);
  if (o.connections < o.threads || o.connections > max_connections)
    throw InputError("-c/--connections", "must be in " + std::to_string(o.threads) + " (the thread count).." +
                                             std::to_string(max_connections) + " (" +
                                             std::to_string(kMaxConnectionsPerThread) + " a thread, " +
                                             std::to_string(kMaxConnections) + " in all), got " +
                                             std::to_string(o.connections));
  int stops = int(o.requests_per_thread.has_value()) + int(o.total_requests.has_value()) +
              int(o.duration_s.has_value());
  if (stops > 1) throw InputError("-n, --total, -d", "give at most one stop condition");
  if (stops == 0) o.duration_s = 10.0;
  if (o.requests_per_thread && (*o.requests_per_thread < 1 || *o.requests_per_thread > kMaxRequests))
    throw InputError("-n/--requests", "must be in 1..10^12, got " + std::to_string(*o.requests_per_thread));
  if (o.total_requests && (*o.total_requests < o.threads || *o.total_requests > kMaxRequests))
    throw InputError("--total", "must be in " + std::to_string(o.threads) +
                                    " (the thread count)..10^12, got " + std::to_string(*o.total_requests));
  validate_run_time(o);
  validate_pace(o);
  if (o.scheduled_start && !o.duration_s)
    throw InputError("--start-on-signal", "opens a window of -d seconds: give -d with it, not -n or --total");
  validate_request(o);
  static const char* kLevels[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};
  if (std::none_of(std::begin(kLevels), std::end(kLevels), [&](const char* l) { return o.log_level == l; }))
    throw InputError("--log-level", "must be one of trace, debug, info, warn, error, critical, off; got " +
                                        single_quoted(o.log_level));
}

namespace {

// Calls `add(name, value)` for each -H header, both trimmed.
template <class Add>
void for_each_header(const LoadOptions& o, Add add) {
  for (const auto& h : o.headers) {
    auto colon = h.find(':');
    add(trim(std::string_view(h).substr(0, colon)), trim(std::string_view(h).substr(colon + 1)));
  }
}

bool wants_length(const LoadOptions& o) {
  return !o.body.empty() || o.method == "POST" || o.method == "PUT" || o.method == "PATCH";
}

}  // namespace

std::string serialize_request(const LoadOptions& o, const Url& url) {
  bool user_host = false, user_length = false, user_connection = false;
  std::string extra;
  for_each_header(o, [&](std::string_view name, std::string_view value) {
    user_host |= iequals(name, "host");
    user_length |= iequals(name, "content-length");
    user_connection |= iequals(name, "connection");
    extra.append(name).append(": ").append(value).append("\r\n");
  });
  std::string r;
  r.reserve(128 + extra.size() + o.body.size());
  r.append(o.method).append(" ").append(url.target).append(" HTTP/1.1\r\n");
  if (!user_host) r.append("Host: ").append(url.authority).append("\r\n");
  r.append("User-Agent: loadlab-load\r\n");
  if (!o.keep_alive && !user_connection) r.append("Connection: close\r\n");
  r.append(extra);
  if (wants_length(o) && !user_length)
    r.append("Content-Length: ").append(std::to_string(o.body.size())).append("\r\n");
  r.append("\r\n").append(o.body);
  return r;
}

std::vector<std::pair<std::string, std::string>> h2_request_headers(const LoadOptions& o, const Url& url) {
  std::string authority = url.authority;
  bool user_length = false;
  std::vector<std::pair<std::string, std::string>> fields;
  for_each_header(o, [&](std::string_view name, std::string_view value) {
    std::string lower(name);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (lower == "host") {
      authority = value;  // HTTP/2 carries the host as :authority
      return;
    }
    static const char* kConnectionSpecific[] = {"connection", "keep-alive", "proxy-connection",
                                                "transfer-encoding", "upgrade"};
    if (std::any_of(std::begin(kConnectionSpecific), std::end(kConnectionSpecific),
                    [&](const char* c) { return lower == c; }))
      return;
    if (lower == "te" && !iequals(value, "trailers")) return;
    user_length |= lower == "content-length";
    fields.emplace_back(std::move(lower), std::string(value));
  });
  std::vector<std::pair<std::string, std::string>> out = {{":method", o.method},
                                                          {":scheme", url.tls ? "https" : "http"},
                                                          {":authority", authority},
                                                          {":path", url.target},
                                                          {"user-agent", "loadlab-load"}};
  for (auto& f : fields) out.push_back(std::move(f));
  if (wants_length(o) && !user_length) out.emplace_back("content-length", std::to_string(o.body.size()));
  return out;
}

}  // namespace loadlab::load
