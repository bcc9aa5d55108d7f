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

// hey's summary read line by line: each block's lines (the summary's "Key: value", the
// latency distribution, status codes, errors), then the figures.
class HeyParser {
 public:
  explicit HeyParser(std::string_view out) : out_(out) { f_.run.format = "hey"; }

  Figures parse() {
    for (auto raw : lines(out_)) {
      const auto line = trim(raw);
      if (heading(line)) continue;
      if (line.empty()) {
        if (block_ != Block::kSummary) block_ = Block::kNone;  // the template leaves a blank in the summary
        continue;
      }
      switch (block_) {
        case Block::kSummary:
          summary_line(line);
          break;
        case Block::kLatency:
          latency_line(line);
          break;
        case Block::kStatus:
          status_line(line);
          break;
        case Block::kErrors:
          error_line(line);
          break;
        case Block::kNone:
          break;
      }
    }
    return finish();
  }

 private:
  enum class Block { kNone, kSummary, kLatency, kStatus, kErrors };

  // A block's heading line (it starts the block); false for any other line.
  bool heading(std::string_view line) {
    if (line == "Summary:") {
      block_ = Block::kSummary;
      seen_summary_ = true;
    } else if (line == "Latency distribution:") {
      block_ = Block::kLatency;
    } else if (line == "Status code distribution:") {
      block_ = Block::kStatus;
      seen_status_ = true;
    } else if (line == "Error distribution:") {
      block_ = Block::kErrors;
      seen_errors_ = true;
    } else if (starts_with(line, "Response time histogram:")) {
      block_ = Block::kNone;
    } else if (starts_with(line, "Details (average, fastest, slowest):")) {
      block_ = Block::kNone;
      seen_details_ = true;
    } else {
      return false;
    }
    return true;
  }

  void summary_line(std::string_view line) {
    auto colon = line.find(':');
    if (colon == std::string_view::npos)
      not_recognised(kTool, "bad summary line \"" + std::string(line) + "\"");
    summary_[std::string(line.substr(0, colon))] = trim(line.substr(colon + 1));
  }

  // "50% in 0.0012 secs"
  void latency_line(std::string_view line) {
    auto w = words(line);
    if (w.size() != 4 || w[1] != "in" || w[0].back() != '%')
      not_recognised(kTool, "bad latency line \"" + std::string(line) + "\"");
    auto p = count(w[0].substr(0, w[0].size() - 1));
    auto us = secs(std::string(w[2]) + " " + std::string(w[3]));
    if (!p || !us) not_recognised(kTool, "bad latency line \"" + std::string(line) + "\"");
    if (*p > 0) pct_[static_cast<int>(*p)] = *us;  // "0% in 0.0000 secs": percentile not reached
  }

  // "[200]	200 responses"
  void status_line(std::string_view line) {
    auto w = words(line);
    if (w.size() != 3 || w[0].front() != '[' || w[0].back() != ']' || w[2] != "responses")
      not_recognised(kTool, "bad status line \"" + std::string(line) + "\"");
    auto code = count(w[0].substr(1, w[0].size() - 2));
    auto n = count(w[1]);
    if (!code || !n || *code > 999) not_recognised(kTool, "bad status line \"" + std::string(line) + "\"");
    (*f_.result().mutable_status())[static_cast<uint32_t>(*code)] += *n;
    responses_ += *n;
    if (*code >= 400) failed_status_ += *n;
  }

  // "[4]	Get "http://...": message"
  void error_line(std::string_view line) {
    auto close = line.find(']');
    auto n = line.front() == '[' && close != std::string_view::npos ? count(line.substr(1, close - 1))
                                                                    : std::nullopt;
    if (!n) not_recognised(kTool, "bad error line \"" + std::string(line) + "\"");
    (*f_.result().mutable_error_kinds())[error_kind(line.substr(close + 1))] += *n;
    errors_ += *n;
  }

  Figures finish() {
    if (!seen_status_ && !seen_errors_)
      not_recognised(kTool, "no \"Status code distribution:\" or \"Error distribution:\"");
    if (seen_summary_ && !summary_.count("Total")) not_recognised(kTool, "a summary without \"Total:\"");
    if (seen_summary_ && !seen_details_) not_recognised(kTool, "a summary without details");
    if (!out_.empty() && out_.front() != '\n' && seen_summary_) f_.run.format = "hey-printf";
    if (seen_summary_) {
      auto total = secs(summary_["Total"]);
      if (!total) not_recognised(kTool, "bad \"Total:\" " + std::string(summary_["Total"]));
      f_.result().set_duration_s(*total / 1e6);
      f_.mark_given("duration_s");
    }
    if (failed_status_) (*f_.result().mutable_error_kinds())["status"] = failed_status_;
    f_.result().set_responses(responses_);
    f_.result().set_requests(responses_ + errors_);
    f_.result().set_errors(failed_status_ + errors_);
    for (const char* g : {"responses", "requests", "errors", "error_kinds"}) f_.mark_given(g);
    if (seen_status_) f_.mark_given("status");
    if (f_.result().duration_s() > 0) {
      f_.result().set_qps(static_cast<double>(f_.result().requests()) / f_.result().duration_s());
      f_.mark_given("qps");
    }
    if (responses_ > 0) latencies();
    return std::move(f_);
  }

  void latencies() {
    for (auto [key, name] : {std::pair<const char*, const char*>{"Slowest", "max_us"},
                             {"Fastest", "min_us"},
                             {"Average", "mean_us"}}) {
      auto us = secs(summary_[key]);
      if (!us) not_recognised(kTool, std::string("bad \"") + key + ":\" " + std::string(summary_[key]));
      set_latency(f_, "latency", name, *us);
    }
    for (auto [p, name] : {std::pair<int, const char*>{50, "p50_us"}, {90, "p90_us"}, {99, "p99_us"}})
      if (pct_.count(p)) set_latency(f_, "latency", name, pct_[p]);
  }

  static constexpr Tool kTool = Tool::kHey;
  std::string_view out_;
  Figures f_;
  Block block_ = Block::kNone;
  std::map<std::string, std::string_view> summary_;
  std::map<int, double> pct_;
  bool seen_summary_ = false, seen_status_ = false, seen_errors_ = false, seen_details_ = false;
  uint64_t responses_ = 0, failed_status_ = 0, errors_ = 0;
};

}  // namespace

Figures parse_hey(std::string_view out) { return HeyParser(out).parse(); }

}  // namespace loadlab::clients::detail
