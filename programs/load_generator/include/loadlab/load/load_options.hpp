#pragma once
// Options of one load run (the `loadlab-load` flags), with defaults, and their validation.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "loadlab/shared/input_error.hpp"
#include "loadlab/shared/limits.hpp"

namespace loadlab::load {

enum class OutputMode { kHuman, kJson, kJsonEvents };

struct LoadOptions {
  std::string url;  // http://HOST[:PORT][/PATH][?QUERY] or https://...
  int threads = 1;
  int connections = 0;  // total over all threads; 0 = one per thread
  // Stop condition: at most one of these; none means duration_s = 10.
  std::optional<int64_t> requests_per_thread;  // -n
  std::optional<int64_t> total_requests;       // --total
  std::optional<double> duration_s;            // -d
  double warmup_s = 0;
  // --rate: requests per second overall, open loop (each thread paces rate / threads);
  // none = closed loop. Latency then counts from each request's intended send time.
  std::optional<double> rate;
  // --arrivals: how the open loop's send times fall, "uniform" (an even pace; also "") or
  // "poisson" (exponential gaps from --seed: the same seed, the same send times).
  std::string arrivals;
  std::optional<uint64_t> seed;  // --seed, poisson only; none = 1
  // --pace-granularity: open loop, µs; a send that is due within this of now goes now, early,
  // in the same wake-up (its latency then counts from when it began). None = kDefaultPaceGranularityUs.
  std::optional<double> pace_granularity_us;
  // --start-on-signal: after warm-up, say so (ready) and go on loading, unmeasured, until
  // SIGUSR1 names the instant the window opens (a scheduled start across load agents).
  bool scheduled_start = false;
  // --pace-share FIRST/TOTAL: open loop over several workers (a cell's load agents): this
  // worker's threads are threads FIRST.. of TOTAL, each at rate / threads. Uniform: thread g of
  // the TOTAL sends at (g + m × TOTAL) / (TOTAL × rate a thread) after the pace's anchor (the
  // scheduled instant, with --start-on-signal), so the workers together keep one even pace;
  // Poisson: thread g draws stream g of the seed. None: FIRST 0 of TOTAL = threads.
  std::optional<std::pair<uint32_t, uint32_t>> pace_share;
  std::string csv_requests;  // --csv-requests FILE: one row per measured request; empty = none
  std::string method = "GET";
  std::vector<std::string> headers;  // "Name: value"
  std::string body;
  int timeout_ms = limits::kDefaultTimeoutMs;  // per request (and per connect)
  bool keep_alive = true;
  // https:// only (each refused with an http:// URL).
  std::string tls_version;  // --tls-version "1.2" | "1.3"; empty = 1.3
  std::string ca_file;  // --ca FILE: PEM certificates to verify the server with, instead of the system store
  bool insecure = false;    // --insecure: no certificate or host verification
  bool tls_resume = false;  // --tls-resume: a reconnecting connection offers its previous session
  // --zero-rtt (h3, with --tls-resume): a resumed connection sends the requests waiting for it
  // as 0-RTT early data.
  bool zero_rtt = false;
  // --protocol "http1" | "h2" | "h3"; empty = http1. h2 is HTTP/2 over TLS (ALPN h2) with an
  // https:// URL, over TCP with prior knowledge (h2c) with an http:// one; h3 is HTTP/3 over
  // QUIC (UDP to the URL's port, TLS 1.3, ALPN h3), https:// only.
  std::string protocol;
  std::optional<int> streams;  // --streams: concurrent streams per connection (h2, h3); none = 1
  OutputMode output = OutputMode::kHuman;
  std::string log_level = "warn";
};

// The parts of the URL a connection needs.
struct Url {
  bool tls = false;       // https://
  std::string host;       // without IPv6 brackets
  uint16_t port = 80;     // 443 for https:// without a port
  std::string authority;  // as written in the URL, for the Host header
  std::string target;     // path and query, "/" when absent
};

// Parses http(s)://HOST[:PORT][/PATH]; throws InputError("URL", ...) when it is not one.
[[nodiscard]] Url parse_url(std::string_view text);

// Fills the derived defaults (connections = threads, -d 10 when no stop condition is
// given) and checks every field; throws InputError naming the flag and what is allowed at
// the first that is not.
void complete_and_validate(LoadOptions& options);

// The bytes of one request, serialised once and written as is for every request.
std::string serialize_request(const LoadOptions& options, const Url& url);

// The header fields of one HTTP/2 request, built once: the pseudo-headers (:method,
// :scheme, :authority from the URL or a Host header, :path), then user-agent and the user's
// headers with lowercased names, without the connection-specific ones HTTP/2 forbids
// (RFC 9113 §8.2.2), and content-length as serialize_request sends it.
std::vector<std::pair<std::string, std::string>> h2_request_headers(const LoadOptions& options,
                                                                    const Url& url);

inline bool uses_h2(const LoadOptions& options) { return options.protocol == "h2"; }
inline bool uses_h3(const LoadOptions& options) { return options.protocol == "h3"; }
inline int streams_of(const LoadOptions& options) { return options.streams.value_or(1); }
inline bool poisson_arrivals(const LoadOptions& options) { return options.arrivals == "poisson"; }
// The open loop's pacing granularity when --pace-granularity is not given, µs (docs/load.md,
// "Pacing granularity", says how it was chosen); the most it may be is
// limits::kMaxPaceGranularityUs.
inline constexpr double kDefaultPaceGranularityUs = 0;
inline double pace_granularity_us_of(const LoadOptions& options) {
  return options.pace_granularity_us.value_or(kDefaultPaceGranularityUs);
}

// The TLS version a run forces: "1.2" or "1.3" (--tls-version, 1.3 by default).
inline std::string_view tls_version_of(const LoadOptions& options) {
  return options.tls_version.empty() ? std::string_view("1.3") : std::string_view(options.tls_version);
}

}  // namespace loadlab::load
