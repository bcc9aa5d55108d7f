#pragma once
// The figures of one load run and their two renderings: the protocol's LoadResult (printed
// as JSON for machines) and a wrk-like text for people.
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "loadlab/load/load_options.hpp"
#include "loadlab/shared/histogram.hpp"
#include "loadlab/v1/agent.pb.h"

namespace loadlab::load {

// Why a request failed. `kConnect` includes connects that timed out; `kTimeout` is a
// request (write + read) that exceeded --timeout; `kStatus` is a response with status >= 400;
// `kTls` is a failed TLS handshake (certificate refused, version refused, or timed out).
enum class ErrorKind : int { kConnect, kRead, kWrite, kTimeout, kBadResponse, kStatus, kTls };
inline constexpr int kErrorKindCount = 7;
std::string_view error_kind_name(ErrorKind kind);

struct LoadResult {
  // Measured requests that ended: a response with any status, or a failure. A request is
  // measured when it was started at or after the end of warm-up and, for -d, ended
  // inside the window. With -n/--total it equals the budget unless interrupted.
  int64_t requests = 0;
  int64_t responses = 0;  // of `requests`, those that got a complete HTTP response
  int64_t errors = 0;     // of `requests`, failures (every ErrorKind, status >= 400 included)
  std::array<int64_t, kErrorKindCount> errors_by_kind{};
  std::map<int, int64_t> status;  // response status -> count (measured responses)
  // Response bytes of measured responses as the HTTP layer read them: HTTP/1.1 the status
  // line, headers and body (chunk framing included); HTTP/2 the response's frames (9-byte
  // frame headers, the HPACK-compressed header block, DATA payloads). TLS records not counted.
  int64_t bytes_read = 0;
  int64_t warmup_requests = 0;  // requests that ended during warm-up (excluded above)
  // -d: the measured window (shorter if interrupted); -n/--total: end of warm-up to the
  // last measured completion.
  double duration_s = 0;
  double qps = 0;  // requests / duration_s
  // Requests of any start (warm-up's too) that ended inside the window, answered or failed, and
  // their rate: what the window served. In closed loop about `requests`; in an open loop that
  // did not hold its rate the backlog of warm-up's send slots fills the window, and only this
  // counts what the target did in it (docs/load.md, "When the rate is not held").
  int64_t window_completions = 0;
  double completion_rate = 0;
  int threads = 0;
  int connections = 0;
  bool interrupted = false;  // stopped early by SIGINT/SIGTERM (figures cover what was measured)
  std::string error;         // non-empty when the target could not be reached at all
  std::string csv_error;     // --csv-requests could not be written (the figures stand)
  // Open loop (--rate): the requested rate; 0 in closed loop.
  double rate = 0;
  // Open loop: measured requests begun per second of the window: the rate the pacing
  // delivered. `rate_held` is false when some thread began fewer than 99 % of the slots its
  // schedule had due in the window (the target or the client could not keep up).
  double achieved_rate = 0;
  std::string arrivals;            // open loop: "uniform" or "poisson"; "" in closed loop
  double pace_granularity_us = 0;  // open loop: --pace-granularity
  bool rate_held = true;
  // Latency in µs of measured responses, all threads merged. Open loop: from each request's
  // intended send time (corrected for coordinated omission, as wrk2 does); closed loop: from
  // the write of the request.
  Histogram histogram;
  // From the write of the request, whatever the loop: queueing behind a busy connection is
  // not counted. Equals `histogram` in closed loop.
  Histogram histogram_uncorrected;
  // Connects (TCP handshake) completed inside the window, µs; apart from request latency.
  Histogram connect_histogram;
  int64_t connects = 0;  // connections opened (TCP connects completed) inside the window
  // https://: TLS handshakes completed inside the window, µs, and how many resumed a session.
  Histogram tls_histogram;
  int64_t tls_handshakes = 0;
  int64_t tls_resumed = 0;
  int64_t tls_early_data = 0;  // --protocol h3 --zero-rtt: of those, whose 0-RTT data the server took
  // When the measured window opened and closed (steady_clock, CLOCK_MONOTONIC, ns); 0 when it
  // never did.
  int64_t window_open_ns = 0;
  int64_t window_close_ns = 0;
  // Measured responses: from the write of the request to the first byte of its response, µs.
  Histogram first_byte_histogram;
  bool tls = false;       // an https:// run
  std::string tls_error;  // why the first failed handshake failed (OpenSSL's reason)
};

v1::LoadResult to_proto(const LoadResult& result);

// "rate not held: achieved X of Y req/s" when an open loop fell behind its schedule, else "".
std::string rate_not_held_message(const LoadResult& result);

// A wrk-like text summary.
std::string format_summary(const LoadResult& result, const LoadOptions& options);

}  // namespace loadlab::load
