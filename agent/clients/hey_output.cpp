// hey's summary: the text/template form of hey 0.1.x (rakyll/hey requester/print.go) and the
// older printf form (same keys, status codes after the details, no summary at all when no
// request succeeded):
//
//   Summary:
//     Total:        0.0573 secs
//     Slowest:      0.0016 secs        (4 decimals of a second: 100 us resolution)
//     Fastest:      0.0010 secs
//     Average:      0.0011 secs        ("NaN" when nothing succeeded)
//     Requests/sec: 3492.8111
//     Total data:   3800 bytes         (response bodies only)
//   Response time histogram: ...
//   Latency distribution:
//     10% in 0.0011 secs ... 99% in 0.0014 secs   ("0% in 0.0000 secs" = not reached)
//   Details (average, fastest, slowest): ...
//   Status code distribution:
//     [200] 200 responses
//   Error distribution:
//     [4]   Get "http://...": context deadline exceeded (Client.Timeout exceeded ...)
#include <array>
#include <cctype>
#include <map>
#include <optional>

#include "output_parsers.hpp"
#include "units.hpp"

namespace loadlab::clients::detail {

namespace {

// "0.0012 secs" → µs.
std::optional<double> secs(std::string_view v) {
  v = trim(v);
  if (v.size() < 5 || v.substr(v.size() - 4) != "secs") return std::nullopt;
  auto n = number(v.substr(0, v.size() - 4));
  if (!n) return std::nullopt;
  return *n * 1e6;
}

// hey prints Go's error text; sorted into loadlab-load's kinds where the text is clear.
std::string error_kind(std::string_view message) {
  auto has = [&](std::string_view s) { return message.find(s) != std::string_view::npos; };
  if (has("dial tcp") || has("dial udp") || has("connection refused")) return "connect";
  if (has("Timeout exceeded") || has("deadline exceeded") || has("timeout")) return "timeout";
  if (has("connection reset") || has("EOF") || has("read:")) return "read";
  if (has("broken pipe") || has("write:")) return "write";
  if (has("malformed")) return "bad_response";
  return "other";
}

}  // namespace

Figures parse_hey(std::string_view out) {
  const Tool t = Tool::kHey;
  Figures f;
  f.run.format = "hey";
  enum class Block { kNone, kSummary, kLatency, kStatus, kErrors } block = Block::kNone;
  std::map<std::string, std::string_view> summary;
  std::map<int, double> pct;
  bool seen_summary = false, seen_status = false, seen_errors = false, seen_details = false;
  uint64_t responses = 0, failed_status = 0, errors = 0;
  auto& status = *f.r().mutable_status();
  auto& kinds = *f.r().mutable_error_kinds();

  for (auto raw : lines(out)) {
    auto line = trim(raw);
    if (line == "Summary:") {
      block = Block::kSummary;
      seen_summary = true;
      continue;
    }
    if (line == "Latency distribution:") {
      block = Block::kLatency;
      continue;
    }
    if (line == "Status code distribution:") {
      block = Block::kStatus;
      seen_status = true;
      continue;
    }
    if (line == "Error distribution:") {
      block = Block::kErrors;
      seen_errors = true;
      continue;
    }
    if (starts_with(line, "Response time histogram:")) {
      block = Block::kNone;
      continue;
    }
    if (starts_with(line, "Details (average, fastest, slowest):")) {
      block = Block::kNone;
      seen_details = true;
      continue;
    }
    if (line.empty()) {
      if (block != Block::kSummary) block = Block::kNone;  // the template leaves a blank in the summary
      continue;
    }
    switch (block) {
      case Block::kSummary: {
        auto colon = line.find(':');
        if (colon == std::string_view::npos)
          not_recognised(t, "bad summary line \"" + std::string(line) + "\"");
        summary[std::string(line.substr(0, colon))] = trim(line.substr(colon + 1));
        break;
      }
      case Block::kLatency: {
        // "50% in 0.0012 secs"
        auto w = words(line);
        if (w.size() != 4 || w[1] != "in" || w[0].back() != '%')
          not_recognised(t, "bad latency line \"" + std::string(line) + "\"");
        auto p = count(w[0].substr(0, w[0].size() - 1));
        auto us = secs(std::string(w[2]) + " " + std::string(w[3]));
        if (!p || !us) not_recognised(t, "bad latency line \"" + std::string(line) + "\"");
        if (*p > 0) pct[static_cast<int>(*p)] = *us;  // "0% in 0.0000 secs": percentile not reached
        break;
      }
      case Block::kStatus: {
        // "[200]	200 responses"
        auto w = words(line);
        if (w.size() != 3 || w[0].front() != '[' || w[0].back() != ']' || w[2] != "responses")
          not_recognised(t, "bad status line \"" + std::string(line) + "\"");
        auto code = count(w[0].substr(1, w[0].size() - 2));
        auto n = count(w[1]);
        if (!code || !n || *code > 999) not_recognised(t, "bad status line \"" + std::string(line) + "\"");
        status[static_cast<uint32_t>(*code)] += *n;
        responses += *n;
        if (*code >= 400) failed_status += *n;
        break;
      }
      case Block::kErrors: {
        // "[4]	Get "http://...": message"
        auto close = line.find(']');
        auto n = line.front() == '[' && close != std::string_view::npos ? count(line.substr(1, close - 1))
                                                                        : std::nullopt;
        if (!n) not_recognised(t, "bad error line \"" + std::string(line) + "\"");
        kinds[error_kind(line.substr(close + 1))] += *n;
        errors += *n;
        break;
      }
      case Block::kNone:
        break;
    }
  }
  if (!seen_status && !seen_errors)
    not_recognised(t, "no \"Status code distribution:\" or \"Error distribution:\"");
  if (seen_summary && !summary.count("Total")) not_recognised(t, "a summary without \"Total:\"");
  if (seen_summary && f.run.format == "hey" && !seen_details) not_recognised(t, "a summary without details");
  if (!out.empty() && out.front() != '\n' && seen_summary) f.run.format = "hey-printf";

  if (seen_summary) {
    auto total = secs(summary["Total"]);
    if (!total) not_recognised(t, "bad \"Total:\" " + std::string(summary["Total"]));
    f.r().set_duration_s(*total / 1e6);
    f.give("duration_s");
  }
  if (failed_status) kinds["status"] = failed_status;
  f.r().set_responses(responses);
  f.r().set_requests(responses + errors);
  f.r().set_errors(failed_status + errors);
  for (const char* g : {"responses", "requests", "errors", "error_kinds"}) f.give(g);
  if (seen_status) f.give("status");
  if (f.r().duration_s() > 0) {
    f.r().set_qps(static_cast<double>(f.r().requests()) / f.r().duration_s());
    f.give("qps");
  }
  if (responses > 0) {
    for (auto [key, name] : {std::pair<const char*, const char*>{"Slowest", "max_us"},
                             {"Fastest", "min_us"},
                             {"Average", "mean_us"}}) {
      auto us = secs(summary[key]);
      if (!us) not_recognised(t, std::string("bad \"") + key + ":\" " + std::string(summary[key]));
      set_latency(f, "latency", name, *us);
    }
    for (auto [p, name] : {std::pair<int, const char*>{50, "p50_us"}, {90, "p90_us"}, {99, "p99_us"}})
      if (pct.count(p)) set_latency(f, "latency", name, pct[p]);
  }
  return f;
}

}  // namespace loadlab::clients::detail
