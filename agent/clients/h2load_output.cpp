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

}  // namespace

Figures parse_h2load(std::string_view out) {
  const Tool t = Tool::kH2load;
  Figures f;
  f.run.format = "h2load";
  uint32_t threads = 0;
  uint64_t clients = 0;
  std::optional<double> main_duration_us, finished_us;
  std::map<std::string, uint64_t> requests, codes;
  std::optional<std::array<double, 3>> request_time, connect_time;
  std::optional<uint64_t> traffic_total, traffic_data;

  for (auto raw : lines(out)) {
    auto line = trim(raw);
    if (starts_with(line, "spawning thread #")) {
      auto colon = line.find(": ");
      auto w =
          colon == std::string_view::npos ? std::vector<std::string_view>{} : words(line.substr(colon + 2));
      auto n = w.size() >= 2 ? count(w[0]) : std::nullopt;
      if (!n) not_recognised(t, "bad \"" + std::string(line) + "\"");
      if (w[1] == "concurrent") f.run.format = "h2load-1.0";
      ++threads;
      clients += *n;
      auto of_main = line.find(" of main duration");
      if (of_main != std::string_view::npos) {
        auto before = line.substr(0, of_main);
        auto d = duration_us(before.substr(before.rfind(' ') + 1));
        if (!d) not_recognised(t, "bad \"" + std::string(line) + "\"");
        main_duration_us = *d;
      }
    } else if (starts_with(line, "finished in ")) {
      auto w = words(line.substr(12));
      auto d = !w.empty() && w[0].back() == ',' ? duration_us(w[0].substr(0, w[0].size() - 1)) : std::nullopt;
      if (!d) not_recognised(t, "bad \"" + std::string(line) + "\"");
      finished_us = *d;
    } else if (starts_with(line, "requests:")) {
      requests = counted(t, line.substr(9));
    } else if (starts_with(line, "status codes:")) {
      codes = counted(t, line.substr(13));
    } else if (starts_with(line, "traffic:")) {
      // "21.09KB (21600) total, ... 3.71KB (3800) data" or 1.0's "21600 bytes total, ... 3800 bytes data".
      auto exact = [&](std::string_view what) -> std::optional<uint64_t> {
        auto pos = line.find(what);
        if (pos == std::string_view::npos) return std::nullopt;
        auto w = words(line.substr(0, pos));
        if (w.empty()) return std::nullopt;
        auto last = w.back();
        if (last == "bytes" && w.size() >= 2) return count(w[w.size() - 2]);
        if (last.size() > 2 && last.front() == '(' && last.back() == ')')
          return count(last.substr(1, last.size() - 2));
        return std::nullopt;
      };
      traffic_total = exact(" total");
      traffic_data = exact(" data");
      if (!traffic_total) not_recognised(t, "bad \"" + std::string(line) + "\"");
    } else if (starts_with(line, "time for request:")) {
      request_time = min_max_mean(t, line);
    } else if (starts_with(line, "time for connect:")) {
      connect_time = min_max_mean(t, line);
    }
  }
  for (const char* key : {"total", "done", "succeeded", "failed", "errored"})
    if (!requests.count(key)) not_recognised(t, std::string("no \"requests: ...\" line with ") + key);
  for (const char* key : {"2xx", "3xx", "4xx", "5xx"})
    if (!codes.count(key)) not_recognised(t, std::string("no \"status codes: ...\" line with ") + key);
  if (!finished_us || threads == 0) not_recognised(t, "no \"spawning thread\" or \"finished in\" line");

  f.r().set_threads(threads);
  f.r().set_connections(static_cast<uint32_t>(clients));
  f.r().set_duration_s((main_duration_us ? *main_duration_us : *finished_us) / 1e6);
  // Each request ends as a response (any status) or in h2load's "errored" (never sent, or
  // lost to a failed connect, a reset or a timeout); "total" counts both in every version.
  uint64_t responses = codes["2xx"] + codes["3xx"] + codes["4xx"] + codes["5xx"];
  f.r().set_requests(requests["total"]);
  f.r().set_responses(responses);
  f.r().set_errors(requests["failed"]);
  auto& kinds = *f.r().mutable_error_kinds();
  if (codes["4xx"] + codes["5xx"]) kinds["status"] = codes["4xx"] + codes["5xx"];
  uint64_t timeouts = requests.count("timeout") ? requests["timeout"] : 0;
  if (timeouts) kinds["timeout"] = timeouts;
  if (requests["errored"] > timeouts) kinds["errored"] = requests["errored"] - timeouts;
  for (const char* g :
       {"threads", "connections", "duration_s", "requests", "responses", "errors", "error_kinds"})
    f.give(g);
  if (f.r().duration_s() > 0) {
    f.r().set_qps(static_cast<double>(f.r().requests()) / f.r().duration_s());
    f.give("qps");
  }
  // h2load's byte count restarts with each connection and is lost when a server closes it
  // (Connection: close): "0B (0) total" beside a non-zero data count is no figure.
  if (!(*traffic_total == 0 && traffic_data.value_or(0) > 0)) {
    f.r().set_bytes_read(*traffic_total);
    f.give("bytes_read");
  }
  if (request_time && responses > 0 && (*request_time)[1] > 0) {
    set_latency(f, "latency", "min_us", (*request_time)[0]);
    set_latency(f, "latency", "max_us", (*request_time)[1]);
    set_latency(f, "latency", "mean_us", (*request_time)[2]);
  }
  if (connect_time && (*connect_time)[1] > 0) {
    set_latency(f, "connect", "min_us", (*connect_time)[0]);
    set_latency(f, "connect", "max_us", (*connect_time)[1]);
    set_latency(f, "connect", "mean_us", (*connect_time)[2]);
  }
  return f;
}

}  // namespace loadlab::clients::detail
