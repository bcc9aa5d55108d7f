// wrk's summary (wg/wrk 4.x) and wrk2's (giltene/wrk2: HdrHistogram blocks, calibration).
//
//   Running 2s test @ http://127.0.0.1:37883/
//     2 threads and 4 connections
//     Thread Stats   Avg      Stdev     Max   +/- Stdev
//       Latency     1.17ms  476.08us   6.75ms   95.48%
//       Req/Sec     1.78k    69.69     1.89k    52.50%
//     Latency Distribution                      (--latency; wrk2: "(HdrHistogram - ...)")
//        50%    1.07ms                          (wrk2: " 50.000%    1.37ms" ... "100.000%")
//     7076 requests in 2.00s, 746.30KB read
//     Socket errors: connect 0, read 0, write 0, timeout 2     (only when non-zero)
//     Non-2xx or 3xx responses: 1786                           (only when non-zero)
//   Requests/sec:   3533.96
//   Transfer/sec:    372.72KB
#include <array>
#include <cctype>
#include <map>
#include <optional>

#include "output_parsers.hpp"
#include "units.hpp"

namespace loadlab::clients::detail {

namespace {

// "50%" / "99.900%" → the percentile; nullopt otherwise.
std::optional<double> percent(std::string_view w) {
  if (w.empty() || w.back() != '%') return std::nullopt;
  return number(w.substr(0, w.size() - 1));
}

std::optional<uint64_t> after(std::string_view s, std::string_view key) {
  auto pos = s.find(key);
  if (pos == std::string_view::npos) return std::nullopt;
  auto rest = s.substr(pos + key.size());
  size_t n = 0;
  while (n < rest.size() && std::isdigit(static_cast<unsigned char>(rest[n]))) ++n;
  return count(rest.substr(0, n));
}

void take_distribution(Figures& f, const std::string& prefix, const std::map<double, double>& pct) {
  static const std::pair<double, const char*> kWanted[] = {
      {50.0, "p50_us"}, {90.0, "p90_us"}, {99.0, "p99_us"}, {99.9, "p999_us"}, {100.0, "max_us"}};
  for (auto [p, name] : kWanted)
    if (auto it = pct.find(p); it != pct.end()) set_latency(f, prefix, name, it->second);
}

}  // namespace

Figures parse_wrk(std::string_view out) {
  const Tool t = Tool::kWrk;
  Figures f;
  f.run.format = "wrk";
  enum class Block { kNone, kDistribution, kSpectrum } block = Block::kNone;
  std::string dist_prefix = "latency";
  std::map<double, double> recorded, uncorrected;
  bool have_summary = false, have_threads = false, spectrum_first_row = false;
  double mean_us = -1, max_us = -1;
  uint64_t connect = 0, read = 0, write = 0, timeout = 0, status = 0;

  for (auto raw : lines(out)) {
    auto line = trim(raw);
    auto w = words(line);
    if (block == Block::kDistribution) {
      if (w.size() == 2 && percent(w[0])) {
        auto us = duration_us(w[1]);
        if (!us) not_recognised(t, "bad latency in \"" + std::string(line) + "\"");
        (dist_prefix == "latency" ? recorded : uncorrected)[*percent(w[0])] = *us;
        continue;
      }
      block = Block::kNone;
    }
    if (block == Block::kSpectrum) {
      if (starts_with(line, "#[Mean")) {
        // "#[Mean    =        1.077, StdDeviation   =        0.357]" in ms (wrk2 scales by 1000).
        auto eq = line.find('=');
        auto comma = line.find(',');
        auto v = eq != std::string_view::npos && comma != std::string_view::npos
                     ? number(line.substr(eq + 1, comma - eq - 1))
                     : std::nullopt;
        if (v && dist_prefix == "latency") mean_us = *v * 1000;
        continue;
      }
      if (starts_with(line, "#[") || line.empty() || starts_with(line, "Value")) continue;
      if (starts_with(line, "---")) {
        block = Block::kNone;
        continue;
      }
      if (w.size() == 4 && number(w[0]) && number(w[1])) {
        if (spectrum_first_row && dist_prefix == "latency" && *number(w[1]) == 0)
          set_latency(f, "latency", "min_us", *number(w[0]) * 1000);
        spectrum_first_row = false;
        continue;
      }
      block = Block::kNone;
    }
    if (starts_with(line, "Running ") && line.find(" test @ ") != std::string_view::npos) continue;
    if (w.size() == 5 && w[1] == "threads" && w[2] == "and" && w[4] == "connections") {
      auto th = count(w[0]), co = count(w[3]);
      if (!th || !co) not_recognised(t, "bad \"" + std::string(line) + "\"");
      f.r().set_threads(static_cast<uint32_t>(*th));
      f.r().set_connections(static_cast<uint32_t>(*co));
      f.give("threads");
      f.give("connections");
      have_threads = true;
    } else if (starts_with(line, "Thread calibration:")) {
      f.run.format = "wrk2";
    } else if (w.size() == 5 && w[0] == "Latency") {
      auto mean = duration_us(w[1]), max = duration_us(w[3]);
      if (!mean || !max) not_recognised(t, "bad latency line \"" + std::string(line) + "\"");
      mean_us = *mean;
      max_us = *max;
    } else if (starts_with(line, "Latency Distribution")) {
      block = Block::kDistribution;
      dist_prefix = line.find("Uncorrected") != std::string_view::npos ? "latency_uncorrected" : "latency";
      if (line.find("HdrHistogram") != std::string_view::npos) f.run.format = "wrk2";
    } else if (starts_with(line, "Detailed Percentile spectrum")) {
      block = Block::kSpectrum;
      spectrum_first_row = true;
    } else if (w.size() == 6 && w[1] == "requests" && w[2] == "in" && w[5] == "read") {
      auto n = count(w[0]);
      auto d =
          w[3].size() > 1 && w[3].back() == ',' ? duration_us(w[3].substr(0, w[3].size() - 1)) : std::nullopt;
      auto b = binary_bytes(w[4]);
      if (!n || !d || !b) not_recognised(t, "bad summary \"" + std::string(line) + "\"");
      f.r().set_responses(*n);
      f.r().set_duration_s(*d / 1e6);
      f.r().set_bytes_read(*b);
      f.give("responses");
      f.give("duration_s");
      f.give("bytes_read");
      have_summary = true;
    } else if (starts_with(line, "Socket errors:")) {
      auto c = after(line, "connect "), r = after(line, "read "), wr = after(line, "write "),
           to = after(line, "timeout ");
      if (!c || !r || !wr || !to) not_recognised(t, "bad \"" + std::string(line) + "\"");
      connect = *c, read = *r, write = *wr, timeout = *to;
    } else if (starts_with(line, "Non-2xx or 3xx responses:")) {
      auto n = count(line.substr(25));
      if (!n) not_recognised(t, "bad \"" + std::string(line) + "\"");
      status = *n;
    }
  }
  if (!have_threads || !have_summary)
    not_recognised(t, "no \"N threads and M connections\" or \"N requests in T, B read\" line");

  // wrk records only latencies within its timeout: an empty distribution prints zeros.
  if (max_us > 0) {
    set_latency(f, "latency", "mean_us", mean_us);
    set_latency(f, "latency", "max_us", max_us);
    take_distribution(f, "latency", recorded);
    take_distribution(f, "latency_uncorrected", uncorrected);
  }
  if (f.run.format == "wrk2" && !recorded.empty()) f.r().set_latency_corrected(true);

  auto& kinds = *f.r().mutable_error_kinds();
  for (auto [k, v] : {std::pair<const char*, uint64_t>{"connect", connect},
                      {"read", read},
                      {"write", write},
                      {"timeout", timeout},
                      {"status", status}})
    if (v) kinds[k] = v;
  // A failed connect, read or write ends an attempt without a response; a timeout in wrk is a
  // response slower than --timeout, already among the responses (see docs/clients.md).
  f.r().set_requests(f.r().responses() + connect + read + write);
  f.r().set_errors(connect + read + write + timeout + status);
  f.give("requests");
  f.give("errors");
  f.give("error_kinds");
  if (f.r().duration_s() > 0) {
    f.r().set_qps(static_cast<double>(f.r().requests()) / f.r().duration_s());
    f.give("qps");
  }
  return f;
}

}  // namespace loadlab::clients::detail
