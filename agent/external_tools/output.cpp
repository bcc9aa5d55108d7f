#include "loadlab/clients/output.hpp"

#include <cctype>

#include "output_parsers.hpp"

namespace loadlab::clients {

namespace detail {

void not_recognised(Tool tool, const std::string& why) {
  throw ToolFailed(std::string(tool_name(tool)) + " output not recognised: " + why);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> lines(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    auto nl = text.find('\n');
    out.push_back(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

std::vector<std::string_view> words(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    size_t j = i;
    while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

void set_latency(Figures& f, const std::string& prefix, const std::string& name, double us) {
  v1::Latency* l = prefix == "latency_uncorrected" ? f.result().mutable_latency_uncorrected()
                   : prefix == "connect"           ? f.result().mutable_connect()
                                                   : f.result().mutable_latency();
  if (name == "p50_us") l->set_p50_us(us);
  if (name == "p90_us") l->set_p90_us(us);
  if (name == "p99_us") l->set_p99_us(us);
  if (name == "p999_us") l->set_p999_us(us);
  if (name == "max_us") l->set_max_us(us);
  if (name == "mean_us") l->set_mean_us(us);
  if (name == "min_us") l->set_min_us(us);
  f.mark_given(prefix + "." + name);
}

}  // namespace detail

namespace {

using detail::Figures;

// The last few non-empty lines of the tool's own words, for an error message.
std::string tail(const std::string& text, size_t max_lines = 4) {
  auto all = detail::lines(text);
  std::vector<std::string_view> kept;
  for (auto it = all.rbegin(); it != all.rend() && kept.size() < max_lines; ++it)
    if (!detail::trim(*it).empty()) kept.insert(kept.begin(), detail::trim(*it));
  std::string out;
  for (auto l : kept) out += (out.empty() ? "" : " | ") + std::string(l);
  return out.empty() ? "(no output)" : out;
}

// The tool's own word on why nothing came back: its error lines, else the summary's tail.
std::string reason(Tool tool, const std::string& out, const std::string& err) {
  if (!detail::trim(err).empty()) return tail(err);
  if (tool == Tool::kHey) {
    auto pos = out.find("Error distribution:");
    if (pos != std::string::npos) return tail(out.substr(pos + 19), 3);
  }
  if (tool == Tool::kH2load) {
    for (auto l : detail::lines(out))
      if (detail::starts_with(detail::trim(l), "requests:")) return std::string(detail::trim(l));
  }
  return tail(out);
}

}  // namespace

const std::vector<std::string>& all_figures() {
  static const std::vector<std::string> kAll = {"requests",
                                                "errors",
                                                "duration_s",
                                                "qps",
                                                "latency.p50_us",
                                                "latency.p90_us",
                                                "latency.p99_us",
                                                "latency.p999_us",
                                                "latency.max_us",
                                                "latency.mean_us",
                                                "latency.min_us",
                                                "status",
                                                "error_kinds",
                                                "bytes_read",
                                                "threads",
                                                "connections",
                                                "histogram",
                                                "latency_uncorrected",
                                                "histogram_uncorrected",
                                                "connects",
                                                "connect",
                                                "achieved_rate",
                                                "rate_not_held",
                                                "responses",
                                                "warmup_requests",
                                                "window_completions",
                                                "completion_rate"};
  return kAll;
}

ParsedRun parse_output(Tool tool, const std::string& stdout_text, const std::string& stderr_text,
                       int exit_code) {
  const std::string name(tool_name(tool));
  if (exit_code < 0)
    throw ToolFailed(name + " was killed by a signal: " + tail(stderr_text + "\n" + stdout_text));
  if (exit_code != 0)
    throw ToolFailed(name + " failed (exit status " + std::to_string(exit_code) +
                     "): " + tail(stderr_text.empty() ? stdout_text : stderr_text));
  Figures f = tool == Tool::kWrk   ? detail::parse_wrk(stdout_text)
              : tool == Tool::kHey ? detail::parse_hey(stdout_text)
                                   : detail::parse_h2load(stdout_text);
  const v1::LoadResult& r = f.run.result;
  if (r.responses() == 0 && r.error_kinds().count("timeout") == 0)
    throw ToolFailed(name + " got no response from the target: " + reason(tool, stdout_text, stderr_text));
  // A whole Latency message counts as given when any of its fields is (connect: min/max/mean
  // only, which is all the field promises besides percentiles).
  for (const char* group : {"latency_uncorrected", "connect"})
    for (const auto& g : std::set<std::string>(f.given))
      if (g.rfind(std::string(group) + ".", 0) == 0) f.mark_given(group);
  for (const auto& figure : all_figures())
    if (!f.given.count(figure)) {
      f.run.unavailable.push_back(figure);
      f.run.result.add_unavailable(figure);
    }
  return std::move(f.run);
}

}  // namespace loadlab::clients
