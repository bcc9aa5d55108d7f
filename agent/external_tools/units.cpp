#include "units.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <string>

namespace loadlab::clients {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Splits "1.44ms" into 1.44 and "ms"; nullopt when it does not start with a number.
std::optional<std::pair<double, std::string_view>> split(std::string_view text) {
  text = trim(text);
  size_t n = 0;
  while (n < text.size() && (std::isdigit(static_cast<unsigned char>(text[n])) || text[n] == '.')) ++n;
  if (n == 0) return std::nullopt;
  std::string digits(text.substr(0, n));
  char* end = nullptr;
  double v = std::strtod(digits.c_str(), &end);
  if (end != digits.c_str() + digits.size() || !std::isfinite(v)) return std::nullopt;
  return std::make_pair(v, text.substr(n));
}

}  // namespace

std::optional<double> duration_us(std::string_view text) {
  auto p = split(text);
  if (!p) return std::nullopt;
  auto [v, unit] = *p;
  if (unit == "us") return v;
  if (unit == "ms") return v * 1e3;
  if (unit == "s") return v * 1e6;
  if (unit == "m") return v * 60e6;
  if (unit == "h") return v * 3600e6;
  return std::nullopt;
}

std::optional<uint64_t> binary_bytes(std::string_view text) {
  auto p = split(text);
  if (!p) return std::nullopt;
  auto [v, unit] = *p;
  static constexpr std::string_view kUnits[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  double scale = 1;
  for (auto u : kUnits) {
    if (unit == u) return static_cast<uint64_t>(std::llround(v * scale));
    scale *= 1024;
  }
  return std::nullopt;
}

std::optional<double> number(std::string_view text) {
  auto p = split(text);
  if (!p || !p->second.empty()) return std::nullopt;
  return p->first;
}

std::optional<uint64_t> count(std::string_view text) {
  text = trim(text);
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty()) return std::nullopt;
  return v;
}

}  // namespace loadlab::clients
