#include <fmt/format.h>

#include <iterator>

#include "load_result.hpp"
#include "loadlab/proto/histogram_proto.hpp"

namespace loadlab::load {

std::string_view error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kConnect:
      return "connect";
    case ErrorKind::kRead:
      return "read";
    case ErrorKind::kWrite:
      return "write";
    case ErrorKind::kTimeout:
      return "timeout";
    case ErrorKind::kBadResponse:
      return "bad_response";
    case ErrorKind::kStatus:
      return "status";
    case ErrorKind::kTls:
      return "tls";
  }
  return "unknown";
}

v1::LoadResult to_proto(const LoadResult& r) {
  v1::LoadResult out;
  out.set_requests(static_cast<uint64_t>(r.requests));
  out.set_responses(static_cast<uint64_t>(r.responses));
  out.set_errors(static_cast<uint64_t>(r.errors));
  out.set_duration_s(r.duration_s);
  out.set_qps(r.qps);
  out.set_window_completions(static_cast<uint64_t>(r.window_completions));
  out.set_completion_rate(r.completion_rate);
  out.set_threads(static_cast<uint32_t>(r.threads));
  out.set_connections(static_cast<uint32_t>(r.connections));
  out.set_rate(r.rate);
  out.set_achieved_rate(r.achieved_rate);
  out.set_rate_not_held(!r.rate_held);
  out.set_arrivals(r.arrivals);
  out.set_pace_granularity_us(r.pace_granularity_us);
  out.set_latency_corrected(r.rate > 0);
  proto::latency_of(r.histogram, out.mutable_latency());
  proto::latency_of(r.histogram_uncorrected, out.mutable_latency_uncorrected());
  proto::to_proto(r.histogram, out.mutable_histogram());
  proto::to_proto(r.histogram_uncorrected, out.mutable_histogram_uncorrected());
  out.set_tls_handshakes(static_cast<uint64_t>(r.tls_handshakes));
  out.set_tls_resumed(static_cast<uint64_t>(r.tls_resumed));
  out.set_tls_early_data(static_cast<uint64_t>(r.tls_early_data));
  out.set_window_open_ns(r.window_open_ns);
  out.set_window_close_ns(r.window_close_ns);
  if (r.tls_handshakes > 0) proto::latency_of(r.tls_histogram, out.mutable_tls_handshake());
  if (r.first_byte_histogram.count() > 0) proto::latency_of(r.first_byte_histogram, out.mutable_first_byte());
  out.set_connects(static_cast<uint64_t>(r.connects));
  if (r.connects > 0) proto::latency_of(r.connect_histogram, out.mutable_connect());
  for (const auto& [code, n] : r.status)
    (*out.mutable_status())[static_cast<uint32_t>(code)] = static_cast<uint64_t>(n);
  for (int k = 0; k < kErrorKindCount; ++k)
    if (r.errors_by_kind[k] > 0)
      (*out.mutable_error_kinds())[std::string(error_kind_name(static_cast<ErrorKind>(k)))] =
          static_cast<uint64_t>(r.errors_by_kind[k]);
  out.set_bytes_read(static_cast<uint64_t>(r.bytes_read));
  out.set_warmup_requests(static_cast<uint64_t>(r.warmup_requests));
  out.set_interrupted(r.interrupted);
  out.set_error(r.error);
  return out;
}

namespace {

std::string format_us(int64_t us) {
  if (us < 1000) return fmt::format("{}us", us);
  if (us < 1'000'000) return fmt::format("{:.2f}ms", us / 1e3);
  return fmt::format("{:.2f}s", us / 1e6);
}

std::string format_bytes(int64_t bytes) {
  if (bytes < 1024) return fmt::format("{}B", bytes);
  if (bytes < (1 << 20)) return fmt::format("{:.2f}KB", bytes / 1024.0);
  if (bytes < (int64_t{1} << 30)) return fmt::format("{:.2f}MB", bytes / 1048576.0);
  return fmt::format("{:.2f}GB", bytes / 1073741824.0);
}

// A line of one phase (connect, TLS, first byte): p50/p90/p99/max/mean of the requests that
// paid it, then `tail`.
void append_phase(std::string& out, const char* name, const Histogram& x, const std::string& tail) {
  fmt::format_to(std::back_inserter(out), "  {:<9} p50 {}  p90 {}  p99 {}  max {}  mean {}{}\n", name,
                 format_us(x.value_at_percentile(50)), format_us(x.value_at_percentile(90)),
                 format_us(x.value_at_percentile(99)), format_us(x.count() ? x.max() : 0),
                 format_us(x.count() ? static_cast<int64_t>(x.mean()) : 0), tail);
}

// The lines of the phases the requests paid: connect, TLS and first byte.
void append_phases(std::string& out, const LoadResult& r) {
  if (r.connect_histogram.count() > 0)
    append_phase(out, "Connect", r.connect_histogram, "  (" + std::to_string(r.connects) + " connects)");
  if (r.tls_handshakes > 0)
    append_phase(out, "TLS", r.tls_histogram,
                 "  (" + std::to_string(r.tls_handshakes) + " handshakes, " + std::to_string(r.tls_resumed) +
                     " resumed" +
                     (r.tls_early_data > 0 ? ", " + std::to_string(r.tls_early_data) + " with 0-RTT" : "") +
                     ")");
  if (r.first_byte_histogram.count() > 0) append_phase(out, "1st byte", r.first_byte_histogram, "");
}

// The lines of what went wrong: errors by kind, a failed TLS handshake; then the status codes.
void append_errors_and_status(std::string& out, const LoadResult& r) {
  auto append = std::back_inserter(out);  // fmt::format_to(append, ...) adds to `out`
  if (r.errors > 0) {
    fmt::format_to(append, "  Errors: {} (", r.errors);
    for (int k = 0; k < kErrorKindCount; ++k)
      fmt::format_to(append, "{}{} {}", k ? ", " : "", error_kind_name(static_cast<ErrorKind>(k)),
                     r.errors_by_kind[k]);
    out += ")\n";
  }
  if (!r.tls_error.empty()) out += "  TLS handshake failed: " + r.tls_error + "\n";
  if (!r.status.empty()) {
    out += "  Status:";
    for (const auto& [code, n] : r.status) fmt::format_to(append, " {}={}", code, n);
    out += "\n";
  }
}

}  // namespace

std::string rate_not_held_message(const LoadResult& r) {
  if (r.rate <= 0 || r.rate_held || !r.error.empty()) return {};
  return fmt::format("rate not held: achieved {:.0f} of {:.0f} req/s; the window served {:.0f} req/s",
                     r.achieved_rate, r.rate, r.completion_rate);
}

std::string format_summary(const LoadResult& r, const LoadOptions& o) {
  const Histogram& h = r.histogram;
  std::string out;
  auto append = std::back_inserter(out);  // fmt::format_to(append, ...) adds to `out`
  fmt::format_to(append, "loadlab-load {}\n", o.url);
  fmt::format_to(append, "  {} threads and {} connections", r.threads, r.connections);
  if (uses_h2(o)) fmt::format_to(append, " (HTTP/2, {} streams each)", streams_of(o));
  if (uses_h3(o)) fmt::format_to(append, " (HTTP/3 over QUIC, {} streams each)", streams_of(o));
  if (o.warmup_s > 0)
    fmt::format_to(append, ", {:.1f}s warm-up ({} requests excluded)", o.warmup_s, r.warmup_requests);
  out += r.interrupted ? " (interrupted)\n" : "\n";
  fmt::format_to(append, "  Latency   p50 {}  p90 {}  p99 {}  p99.9 {}  max {}  mean {}\n",
                 format_us(h.value_at_percentile(50)), format_us(h.value_at_percentile(90)),
                 format_us(h.value_at_percentile(99)), format_us(h.value_at_percentile(99.9)),
                 format_us(h.count() ? h.max() : 0),
                 format_us(h.count() ? static_cast<int64_t>(h.mean()) : 0));
  if (r.rate > 0) {
    const Histogram& u = r.histogram_uncorrected;
    // A granularity sends slots early; their latency counts from when they began (docs/load.md).
    const std::string early =
        r.pace_granularity_us > 0 ? fmt::format(", sent up to {:g} µs early", r.pace_granularity_us) : "";
    fmt::format_to(
        append,
        "  (latency from intended send times, --rate {:.0f}/s, {} arrivals{}; uncorrected from the "
        "write:)\n",
        r.rate, r.arrivals, early);
    fmt::format_to(append, "  Uncorr.   p50 {}  p90 {}  p99 {}  p99.9 {}  max {}\n",
                   format_us(u.value_at_percentile(50)), format_us(u.value_at_percentile(90)),
                   format_us(u.value_at_percentile(99)), format_us(u.value_at_percentile(99.9)),
                   format_us(u.count() ? u.max() : 0));
  }
  append_phases(out, r);
  fmt::format_to(append, "  {} requests in {:.2f}s, {} read\n", r.requests, r.duration_s,
                 format_bytes(r.bytes_read));
  if (r.rate > 0)
    fmt::format_to(append, "  {} ended inside the window, whatever their send slot ({:.2f}/s)\n",
                   r.window_completions, r.completion_rate);
  append_errors_and_status(out, r);
  // An open loop that fell behind: the window served its completions, not its slots' requests.
  fmt::format_to(append, "Requests/sec: {:.2f}\n", r.rate > 0 && !r.rate_held ? r.completion_rate : r.qps);
  if (r.rate > 0) out += rate_not_held_message(r).empty() ? "" : rate_not_held_message(r) + "\n";
  if (!r.error.empty()) out += "Error: " + r.error + "\n";
  return out;
}

}  // namespace loadlab::load
