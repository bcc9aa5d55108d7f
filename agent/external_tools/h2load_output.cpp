// h2load's summary (nghttp2 src/h2load.cc), HTTP/1.1 or HTTP/2 alike:
//
//   spawning thread #0: 2 total client(s). 100 total requests      (1.0: "2 concurrent clients, ")
//   spawning thread #0: 4 total client(s). Timing-based test with 1s of warm-up time and 2s of
//     main duration for measurements.                               (-D, one line)
//   finished in 62.41ms, 3204.72 req/s, 338.00KB/s
//   requests: 200 total, 200 started, 200 done, 200 succeeded, 0 failed, 0 errored, 0 timeout
//   status codes: 200 2xx, 0 3xx, 0 4xx, 0 5xx
//   traffic: 21.09KB (21600) total, 11.33KB (11600) headers (space savings 0.00%), 3.71KB (3800) data
//                                                                   (1.0: "21600 bytes total, ...")
//                        min         max         mean         sd        +/- sd
//   time for request:     1.03ms      4.64ms      1.23ms       554us    90.00%
//   time for connect:       45us       204us       101us        73us    75.00%
//   time to 1st byte:     1.27ms      1.70ms      1.46ms       212us    75.00%
//   req/s           :     805.42      808.37      807.19        1.33    75.00%   (not in 1.0)
#include <array>
#include <cctype>
#include <map>
#include <optional>

#include "output_parsers.hpp"
#include "units.hpp"

namespace loadlab::clients::detail {

namespace {

// "200 total, 200 started, 0 timeout" → {total: 200, started: 200, timeout: 0}.
std::map<std::string, uint64_t> counted(Tool t, std::string_view list) {
  std::map<std::string, uint64_t> out;
  size_t start = 0;
  while (start <= list.size()) {
    auto comma = list.find(',', start);
    auto item =
        trim(list.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    auto w = words(item);
    auto n = w.size() >= 2 ? count(w[0]) : std::nullopt;
    if (!n) not_recognised(t, "bad count \"" + std::string(item) + "\"");
    out[std::string(w[1])] = *n;
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

// "time for request:  1.03ms  4.64ms  1.23ms  554us  90.00%" → min, max, mean in µs.
std::array<double, 3> min_max_mean(Tool t, std::string_view line) {
  auto w = words(line.substr(line.find(':') + 1));
  std::array<double, 3> v{};
  for (size_t i = 0; i < 3; ++i) {
    auto us = i < w.size() ? duration_us(w[i]) : std::nullopt;
    if (!us) not_recognised(t, "bad \"" + std::string(line) + "\"");
    v[i] = *us;
  }
  return v;
}

// "traffic: 21.09KB (21600) total, ... 3.71KB (3800) data" or 1.0's "21600 bytes total, ...
// 3800 bytes data": the exact count before `what`.
std::optional<uint64_t> traffic_count(std::string_view line, std::string_view what) {
  auto pos = line.find(what);
  if (pos == std::string_view::npos) return std::nullopt;
  auto w = words(line.substr(0, pos));
  if (w.empty()) return std::nullopt;
  auto last = w.back();
  if (last == "bytes" && w.size() >= 2) return count(w[w.size() - 2]);
  if (last.size() > 2 && last.front() == '(' && last.back() == ')')
    return count(last.substr(1, last.size() - 2));
  return std::nullopt;
}

// Sets min_us, max_us and mean_us of `prefix` from a "time for ...:" line's figures.
void set_min_max_mean(Figures& f, const std::string& prefix, const std::array<double, 3>& v) {
  set_latency(f, prefix, "min_us", v[0]);
  set_latency(f, prefix, "max_us", v[1]);
  set_latency(f, prefix, "mean_us", v[2]);
}

// h2load's summary read line by line, then the figures.
class H2loadParser {
 public:
  Figures parse(std::string_view out) {
    f_.run.format = "h2load";
    for (auto raw : lines(out)) read_line(trim(raw));
    return finish();
  }

 private:
  void read_line(std::string_view line) {
    if (starts_with(line, "spawning thread #")) {
      spawning_line(line);
    } else if (starts_with(line, "finished in ")) {
      auto w = words(line.substr(12));
      auto d = !w.empty() && w[0].back() == ',' ? duration_us(w[0].substr(0, w[0].size() - 1)) : std::nullopt;
      if (!d) not_recognised(kTool, "bad \"" + std::string(line) + "\"");
      finished_us_ = *d;
    } else if (starts_with(line, "requests:")) {
      requests_ = counted(kTool, line.substr(9));
    } else if (starts_with(line, "status codes:")) {
      codes_ = counted(kTool, line.substr(13));
    } else if (starts_with(line, "traffic:")) {
      traffic_total_ = traffic_count(line, " total");
      traffic_data_ = traffic_count(line, " data");
      if (!traffic_total_) not_recognised(kTool, "bad \"" + std::string(line) + "\"");
    } else if (starts_with(line, "time for request:")) {
      request_time_ = min_max_mean(kTool, line);
    } else if (starts_with(line, "time for connect:")) {
      connect_time_ = min_max_mean(kTool, line);
    }
  }

  // "spawning thread #0: 2 total client(s). ..." (with -D: "... Xs of main duration ...").
  void spawning_line(std::string_view line) {
    auto colon = line.find(": ");
    auto w =
        colon == std::string_view::npos ? std::vector<std::string_view>{} : words(line.substr(colon + 2));
    auto n = w.size() >= 2 ? count(w[0]) : std::nullopt;
    if (!n) not_recognised(kTool, "bad \"" + std::string(line) + "\"");
    if (w[1] == "concurrent") f_.run.format = "h2load-1.0";
    ++threads_;
    clients_ += *n;
    auto of_main = line.find(" of main duration");
    if (of_main != std::string_view::npos) {
      auto before = line.substr(0, of_main);
      auto d = duration_us(before.substr(before.rfind(' ') + 1));
      if (!d) not_recognised(kTool, "bad \"" + std::string(line) + "\"");
      main_duration_us_ = *d;
    }
  }

  Figures finish() {
    for (const char* key : {"total", "done", "succeeded", "failed", "errored"})
      if (!requests_.count(key)) not_recognised(kTool, std::string("no \"requests: ...\" line with ") + key);
    for (const char* key : {"2xx", "3xx", "4xx", "5xx"})
      if (!codes_.count(key)) not_recognised(kTool, std::string("no \"status codes: ...\" line with ") + key);
    if (!finished_us_ || threads_ == 0)
      not_recognised(kTool, "no \"spawning thread\" or \"finished in\" line");
    auto& r = f_.result();
    r.set_threads(threads_);
    r.set_connections(static_cast<uint32_t>(clients_));
    r.set_duration_s((main_duration_us_ ? *main_duration_us_ : *finished_us_) / 1e6);
    // Each request ends as a response (any status) or in h2load's "errored" (never sent, or
    // lost to a failed connect, a reset or a timeout); "total" counts both in every version.
    const uint64_t responses = codes_["2xx"] + codes_["3xx"] + codes_["4xx"] + codes_["5xx"];
    r.set_requests(requests_["total"]);
    r.set_responses(responses);
    r.set_errors(requests_["failed"]);
    auto& kinds = *r.mutable_error_kinds();
    if (codes_["4xx"] + codes_["5xx"]) kinds["status"] = codes_["4xx"] + codes_["5xx"];
    const uint64_t timeouts = requests_.count("timeout") ? requests_["timeout"] : 0;
    if (timeouts) kinds["timeout"] = timeouts;
    if (requests_["errored"] > timeouts) kinds["errored"] = requests_["errored"] - timeouts;
    for (const char* g :
         {"threads", "connections", "duration_s", "requests", "responses", "errors", "error_kinds"})
      f_.mark_given(g);
    if (r.duration_s() > 0) {
      r.set_qps(static_cast<double>(r.requests()) / r.duration_s());
      f_.mark_given("qps");
    }
    // h2load's byte count restarts with each connection and is lost when a server closes it
    // (Connection: close): "0B (0) total" beside a non-zero data count is no figure.
    if (!(*traffic_total_ == 0 && traffic_data_.value_or(0) > 0)) {
      r.set_bytes_read(*traffic_total_);
      f_.mark_given("bytes_read");
    }
    if (request_time_ && responses > 0 && (*request_time_)[1] > 0)
      set_min_max_mean(f_, "latency", *request_time_);
    if (connect_time_ && (*connect_time_)[1] > 0) set_min_max_mean(f_, "connect", *connect_time_);
    return std::move(f_);
  }

  static constexpr Tool kTool = Tool::kH2load;
  Figures f_;
  uint32_t threads_ = 0;
  uint64_t clients_ = 0;
  std::optional<double> main_duration_us_, finished_us_;
  std::map<std::string, uint64_t> requests_, codes_;
  std::optional<std::array<double, 3>> request_time_, connect_time_;
  std::optional<uint64_t> traffic_total_, traffic_data_;
};

}  // namespace

Figures parse_h2load(std::string_view out) { return H2loadParser().parse(out); }

}  // namespace loadlab::clients::detail
