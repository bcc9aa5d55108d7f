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

namespace {

// wrk's summary read line by line: the blocks (a latency distribution, wrk2's detailed
// spectrum) and the lines between them, then the figures.
class WrkParser {
 public:
  Figures parse(std::string_view out) {
    f_.run.format = "wrk";
    for (auto raw : lines(out)) {
      const auto line = trim(raw);
      const auto w = words(line);
      if (block_ == Block::kDistribution && distribution_row(line, w)) continue;
      if (block_ == Block::kSpectrum && spectrum_row(line, w)) continue;
      summary_line(line, w);
    }
    return finish();
  }

 private:
  enum class Block { kNone, kDistribution, kSpectrum };

  // A row of "Latency Distribution" ("50%    1.07ms"); false when the block has ended.
  bool distribution_row(std::string_view line, const std::vector<std::string_view>& w) {
    if (w.size() == 2 && percent(w[0])) {
      auto us = duration_us(w[1]);
      if (!us) not_recognised(kTool, "bad latency in \"" + std::string(line) + "\"");
      (dist_prefix_ == "latency" ? recorded_ : uncorrected_)[*percent(w[0])] = *us;
      return true;
    }
    block_ = Block::kNone;
    return false;
  }

  // A line of wrk2's "Detailed Percentile spectrum"; false when the block has ended.
  bool spectrum_row(std::string_view line, const std::vector<std::string_view>& w) {
    if (starts_with(line, "#[Mean")) {
      // "#[Mean    =        1.077, StdDeviation   =        0.357]" in ms (wrk2 scales by 1000).
      auto eq = line.find('=');
      auto comma = line.find(',');
      auto v = eq != std::string_view::npos && comma != std::string_view::npos
                   ? number(line.substr(eq + 1, comma - eq - 1))
                   : std::nullopt;
      if (v && dist_prefix_ == "latency") mean_us_ = *v * 1000;
      return true;
    }
    if (starts_with(line, "#[") || line.empty() || starts_with(line, "Value")) return true;
    if (starts_with(line, "---")) {
      block_ = Block::kNone;
      return true;
    }
    if (w.size() == 4 && number(w[0]) && number(w[1])) {
      if (spectrum_first_row_ && dist_prefix_ == "latency" && *number(w[1]) == 0)
        set_latency(f_, "latency", "min_us", *number(w[0]) * 1000);
      spectrum_first_row_ = false;
      return true;
    }
    block_ = Block::kNone;
    return false;
  }

  void summary_line(std::string_view line, const std::vector<std::string_view>& w) {
    if (starts_with(line, "Running ") && line.find(" test @ ") != std::string_view::npos) return;
    if (w.size() == 5 && w[1] == "threads" && w[2] == "and" && w[4] == "connections") {
      auto th = count(w[0]), co = count(w[3]);
      if (!th || !co) not_recognised(kTool, "bad \"" + std::string(line) + "\"");
      f_.result().set_threads(static_cast<uint32_t>(*th));
      f_.result().set_connections(static_cast<uint32_t>(*co));
      f_.mark_given("threads");
      f_.mark_given("connections");
      have_threads_ = true;
    } else if (starts_with(line, "Thread calibration:")) {
      f_.run.format = "wrk2";
    } else if (w.size() == 5 && w[0] == "Latency") {
      auto mean = duration_us(w[1]), max = duration_us(w[3]);
      if (!mean || !max) not_recognised(kTool, "bad latency line \"" + std::string(line) + "\"");
      mean_us_ = *mean;
      max_us_ = *max;
    } else if (starts_with(line, "Latency Distribution")) {
      block_ = Block::kDistribution;
      dist_prefix_ = line.find("Uncorrected") != std::string_view::npos ? "latency_uncorrected" : "latency";
      if (line.find("HdrHistogram") != std::string_view::npos) f_.run.format = "wrk2";
    } else if (starts_with(line, "Detailed Percentile spectrum")) {
      block_ = Block::kSpectrum;
      spectrum_first_row_ = true;
    } else if (w.size() == 6 && w[1] == "requests" && w[2] == "in" && w[5] == "read") {
      requests_line(line, w);
    } else if (starts_with(line, "Socket errors:")) {
      auto c = after(line, "connect "), r = after(line, "read "), wr = after(line, "write "),
           to = after(line, "timeout ");
      if (!c || !r || !wr || !to) not_recognised(kTool, "bad \"" + std::string(line) + "\"");
      connect_ = *c, read_ = *r, write_ = *wr, timeout_ = *to;
    } else if (starts_with(line, "Non-2xx or 3xx responses:")) {
      auto n = count(line.substr(25));
      if (!n) not_recognised(kTool, "bad \"" + std::string(line) + "\"");
      status_ = *n;
    }
  }

  // "7076 requests in 2.00s, 746.30KB read"
  void requests_line(std::string_view line, const std::vector<std::string_view>& w) {
    auto n = count(w[0]);
    auto d =
        w[3].size() > 1 && w[3].back() == ',' ? duration_us(w[3].substr(0, w[3].size() - 1)) : std::nullopt;
    auto b = binary_bytes(w[4]);
    if (!n || !d || !b) not_recognised(kTool, "bad summary \"" + std::string(line) + "\"");
    f_.result().set_responses(*n);
    f_.result().set_duration_s(*d / 1e6);
    f_.result().set_bytes_read(*b);
    f_.mark_given("responses");
    f_.mark_given("duration_s");
    f_.mark_given("bytes_read");
    have_summary_ = true;
  }

  Figures finish() {
    if (!have_threads_ || !have_summary_)
      not_recognised(kTool, "no \"N threads and M connections\" or \"N requests in T, B read\" line");
    // wrk records only latencies within its timeout: an empty distribution prints zeros.
    if (max_us_ > 0) {
      set_latency(f_, "latency", "mean_us", mean_us_);
      set_latency(f_, "latency", "max_us", max_us_);
      take_distribution(f_, "latency", recorded_);
      take_distribution(f_, "latency_uncorrected", uncorrected_);
    }
    if (f_.run.format == "wrk2" && !recorded_.empty()) f_.result().set_latency_corrected(true);
    auto& kinds = *f_.result().mutable_error_kinds();
    for (auto [k, v] : {std::pair<const char*, uint64_t>{"connect", connect_},
                        {"read", read_},
                        {"write", write_},
                        {"timeout", timeout_},
                        {"status", status_}})
      if (v) kinds[k] = v;
    // A failed connect, read or write ends an attempt without a response; a timeout in wrk is a
    // response slower than --timeout, already among the responses (see docs/clients.md).
    f_.result().set_requests(f_.result().responses() + connect_ + read_ + write_);
    f_.result().set_errors(connect_ + read_ + write_ + timeout_ + status_);
    f_.mark_given("requests");
    f_.mark_given("errors");
    f_.mark_given("error_kinds");
    if (f_.result().duration_s() > 0) {
      f_.result().set_qps(static_cast<double>(f_.result().requests()) / f_.result().duration_s());
      f_.mark_given("qps");
    }
    return std::move(f_);
  }

  static constexpr Tool kTool = Tool::kWrk;
  Figures f_;
  Block block_ = Block::kNone;
  std::string dist_prefix_ = "latency";
  std::map<double, double> recorded_, uncorrected_;
  bool have_summary_ = false, have_threads_ = false, spectrum_first_row_ = false;
  double mean_us_ = -1, max_us_ = -1;
  uint64_t connect_ = 0, read_ = 0, write_ = 0, timeout_ = 0, status_ = 0;
};

}  // namespace

Figures parse_wrk(std::string_view out) { return WrkParser().parse(out); }

}  // namespace loadlab::clients::detail
