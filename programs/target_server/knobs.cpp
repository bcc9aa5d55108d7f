#include "knobs.hpp"

#include <charconv>
#include <cmath>
#include <limits>

namespace loadlab::target {

namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

std::string quote(std::string_view value) {
  constexpr std::size_t kMax = 64;  // a message echoes a bounded part of what it was sent
  std::string out = "'";
  out.append(value.substr(0, kMax));
  if (value.size() > kMax) out += "...";
  return out + "'";
}

}  // namespace

std::uint64_t Random::next() {
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double Random::uniform01() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

std::chrono::nanoseconds sample_delay(const DelaySpec& spec, Random& random) {
  double ms = spec.a_ms;
  switch (spec.kind) {
    case DelaySpec::Kind::fixed:
      break;
    case DelaySpec::Kind::uniform:
      ms = spec.a_ms + (spec.b_ms - spec.a_ms) * random.uniform01();
      break;
    case DelaySpec::Kind::exponential:
      ms = std::min(kMaxDelayMs, -spec.a_ms * std::log1p(-random.uniform01()));
      break;
  }
  return std::chrono::nanoseconds(static_cast<std::int64_t>(ms * 1e6));
}

std::optional<double> parse_fixed(std::string_view text, double max) {
  double value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value, std::chars_format::fixed);
  if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(value)) return std::nullopt;
  if (value < 0 || value > max) return std::nullopt;
  return value;
}

std::optional<double> parse_ms(std::string_view text) { return parse_fixed(text, kMaxDelayMs); }

std::optional<std::chrono::nanoseconds> parse_work_us(std::string_view text, std::uint64_t max_us) {
  const auto us = parse_fixed(text, static_cast<double>(max_us));
  if (!us) return std::nullopt;
  return std::chrono::nanoseconds(std::llround(*us * 1000));
}

std::optional<DelaySpec> parse_delay(std::string_view text) {
  DelaySpec spec;
  if (text.starts_with("uniform:")) {
    auto range = text.substr(8);
    auto dash = range.find('-');
    if (dash == std::string_view::npos) return std::nullopt;
    auto a = parse_ms(range.substr(0, dash));
    auto b = parse_ms(range.substr(dash + 1));
    if (!a || !b || *a > *b) return std::nullopt;
    spec.kind = DelaySpec::Kind::uniform;
    spec.a_ms = *a;
    spec.b_ms = *b;
    return spec;
  }
  if (text.starts_with("exp:")) {
    auto mean = parse_ms(text.substr(4));
    if (!mean) return std::nullopt;
    spec.kind = DelaySpec::Kind::exponential;
    spec.a_ms = *mean;
    return spec;
  }
  auto fixed = parse_ms(text);
  if (!fixed) return std::nullopt;
  spec.a_ms = *fixed;
  return spec;
}

std::optional<std::uint64_t> parse_uint(std::string_view text, std::uint64_t min, std::uint64_t max) {
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < min || value > max) return std::nullopt;
  return value;
}

std::string expected_delay() {
  return "expected D, uniform:A-B (A <= B) or exp:MEAN, in ms, each 0..60000 (fractions allowed)";
}

std::string expected_range(std::uint64_t min, std::uint64_t max) {
  return "expected an integer in " + std::to_string(min) + ".." + std::to_string(max);
}

std::string expected_work_us(std::uint64_t max_us) {
  return "expected us in 0.." + std::to_string(max_us) + " (fractions allowed)";
}

bool RequestKnobs::apply(std::string_view name, std::string_view value) {
  constexpr std::string_view kPrefix = "x-loadlab-";
  if (name.size() <= kPrefix.size() || !iequals(name.substr(0, kPrefix.size()), kPrefix)) return false;
  auto knob = name.substr(kPrefix.size());
  auto bad = [&](const std::string& expected) {
    if (error.empty()) error = std::string(name) + ": " + expected + ", got " + quote(value);
    return true;
  };
  if (iequals(knob, "delay-ms")) {
    delay = parse_delay(value);
    return delay ? true : bad(expected_delay());
  }
  if (iequals(knob, "body-size")) {
    body_size = parse_uint(value, 0, kMaxBodySize);
    return body_size ? true : bad(expected_range(0, kMaxBodySize));
  }
  if (iequals(knob, "status")) {
    auto code = parse_uint(value, kMinStatus, kMaxStatus);
    if (code) status = static_cast<unsigned>(*code);
    return code ? true : bad(expected_range(kMinStatus, kMaxStatus));
  }
  if (iequals(knob, "work-us")) {
    work = parse_work_us(value, kMaxRequestWorkUs);
    return work ? true : bad(expected_work_us(kMaxRequestWorkUs) + ": the most CPU one request may ask for");
  }
  return false;  // another x-loadlab- header: not ours to judge
}

}  // namespace loadlab::target
