#include <cstdio>

#include "load_result.hpp"

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
  }
  return "unknown";
}

namespace {

nlohmann::json percentiles(const Histogram& h) {
  return {
      {"p50", h.value_at_percentile(50)}, {"p90", h.value_at_percentile(90)},
      {"p99", h.value_at_percentile(99)}, {"p999", h.value_at_percentile(99.9)},
      {"max", h.count() ? h.max() : 0},   {"mean", h.count() ? h.mean() : 0.0},
      {"min", h.count() ? h.min() : 0},
  };
}

}  // namespace

nlohmann::json to_json(const LoadResult& r) {
  const Histogram& h = r.histogram;
  const Histogram& c = r.connect_histogram;
  nlohmann::json connect = {
      {"p50", c.value_at_percentile(50)},   {"p90", c.value_at_percentile(90)},
      {"p99", c.value_at_percentile(99)},   {"max", c.count() ? c.max() : 0},
      {"mean", c.count() ? c.mean() : 0.0},
  };
  nlohmann::json status = nlohmann::json::object();
  for (const auto& [code, n] : r.status) status[std::to_string(code)] = n;
  nlohmann::json kinds = nlohmann::json::object();
  for (int k = 0; k < kErrorKindCount; ++k)
    kinds[std::string(error_kind_name(static_cast<ErrorKind>(k)))] = r.errors_by_kind[k];
  nlohmann::json j = {
      {"requests", r.requests},
      {"responses", r.responses},
      {"errors", r.errors},
      {"duration_s", r.duration_s},
      {"qps", r.qps},
      {"threads", r.threads},
      {"connections", r.connections},
      {"rate", r.rate},
      {"achieved_rate", r.achieved_rate},
      {"rate_held", r.rate_held},
      {"latency_corrected", r.rate > 0},
      {"latency_us", percentiles(h)},
      {"latency_uncorrected_us", percentiles(r.histogram_uncorrected)},
      {"connects", r.connects},
      {"connect_us", connect},
      {"status", status},
      {"errors_by_kind", kinds},
      {"bytes_read", r.bytes_read},
      {"warmup_requests", r.warmup_requests},
      {"interrupted", r.interrupted},
      {"histogram", h.to_json()},
      {"histogram_uncorrected", r.histogram_uncorrected.to_json()},
  };
  if (!r.error.empty()) j["error"] = r.error;
  if (!r.csv_error.empty()) j["csv_error"] = r.csv_error;
  return j;
}

namespace {

std::string format_us(int64_t us) {
  char buf[32];
  if (us < 1000)
    std::snprintf(buf, sizeof buf, "%lldus", static_cast<long long>(us));
  else if (us < 1'000'000)
    std::snprintf(buf, sizeof buf, "%.2fms", us / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.2fs", us / 1e6);
  return buf;
}

std::string format_bytes(int64_t bytes) {
  char buf[32];
  if (bytes < 1024)
    std::snprintf(buf, sizeof buf, "%lldB", static_cast<long long>(bytes));
  else if (bytes < (1 << 20))
    std::snprintf(buf, sizeof buf, "%.2fKB", bytes / 1024.0);
  else if (bytes < (int64_t{1} << 30))
    std::snprintf(buf, sizeof buf, "%.2fMB", bytes / 1048576.0);
  else
    std::snprintf(buf, sizeof buf, "%.2fGB", bytes / 1073741824.0);
  return buf;
}

}  // namespace

std::string rate_not_held_message(const LoadResult& r) {
  if (r.rate <= 0 || r.rate_held || !r.error.empty()) return {};
  char buf[128];
  std::snprintf(buf, sizeof buf, "rate not held: achieved %.0f of %.0f req/s", r.achieved_rate, r.rate);
  return buf;
}

std::string format_summary(const LoadResult& r, const LoadOptions& o) {
  const Histogram& h = r.histogram;
  std::string out;
  char line[256];
  auto add = [&](const char* fmt, auto... args) {
    std::snprintf(line, sizeof line, fmt, args...);
    out += line;
  };
  add("loadlab-load %s\n", o.url.c_str());
  add("  %d threads and %d connections", r.threads, r.connections);
  if (o.warmup_s > 0)
    add(", %.1fs warm-up (%lld requests excluded)", o.warmup_s, (long long)r.warmup_requests);
  out += r.interrupted ? " (interrupted)\n" : "\n";
  add("  Latency   p50 %s  p90 %s  p99 %s  p99.9 %s  max %s  mean %s\n",
      format_us(h.value_at_percentile(50)).c_str(), format_us(h.value_at_percentile(90)).c_str(),
      format_us(h.value_at_percentile(99)).c_str(), format_us(h.value_at_percentile(99.9)).c_str(),
      format_us(h.count() ? h.max() : 0).c_str(),
      format_us(h.count() ? static_cast<int64_t>(h.mean()) : 0).c_str());
  if (r.rate > 0) {
    const Histogram& u = r.histogram_uncorrected;
    add("  (latency from intended send times, --rate %.0f/s; uncorrected from the write:)\n", r.rate);
    add("  Uncorr.   p50 %s  p90 %s  p99 %s  p99.9 %s  max %s\n",
        format_us(u.value_at_percentile(50)).c_str(), format_us(u.value_at_percentile(90)).c_str(),
        format_us(u.value_at_percentile(99)).c_str(), format_us(u.value_at_percentile(99.9)).c_str(),
        format_us(u.count() ? u.max() : 0).c_str());
  }
  if (r.connects > 0) {
    const Histogram& c = r.connect_histogram;
    add("  Connect   p50 %s  p90 %s  p99 %s  max %s  (%lld connects)\n",
        format_us(c.value_at_percentile(50)).c_str(), format_us(c.value_at_percentile(90)).c_str(),
        format_us(c.value_at_percentile(99)).c_str(), format_us(c.count() ? c.max() : 0).c_str(),
        static_cast<long long>(r.connects));
  }
  add("  %lld requests in %.2fs, %s read\n", (long long)r.requests, r.duration_s,
      format_bytes(r.bytes_read).c_str());
  if (r.errors > 0) {
    add("  Errors: %lld (", (long long)r.errors);
    for (int k = 0; k < kErrorKindCount; ++k)
      add("%s%s %lld", k ? ", " : "", error_kind_name(static_cast<ErrorKind>(k)).data(),
          (long long)r.errors_by_kind[k]);
    out += ")\n";
  }
  if (!r.status.empty()) {
    out += "  Status:";
    for (const auto& [code, n] : r.status) add(" %d=%lld", code, (long long)n);
    out += "\n";
  }
  add("Requests/sec: %.2f\n", r.qps);
  if (r.rate > 0) out += rate_not_held_message(r).empty() ? "" : rate_not_held_message(r) + "\n";
  if (!r.error.empty()) out += "Error: " + r.error + "\n";
  return out;
}

}  // namespace loadlab::load
