#include "loadlab/shared/format.hpp"

#include <fmt/format.h>

namespace loadlab {

std::string fixed_text(double v, int decimals) { return fmt::format("{:.{}f}", v, decimals); }

std::string seconds_text(double s) { return fmt::format("{:.1f} s", s); }

std::string rate_text(double per_second) { return fmt::format("{:.0f} req/s", per_second); }

std::string pad_right(std::string_view text, std::size_t width) {
  std::string out(text);
  if (out.size() < width) out.append(width - out.size(), ' ');
  return out;
}

std::string pad_left(std::string_view text, std::size_t width) {
  std::string out;
  if (text.size() < width) out.assign(width - text.size(), ' ');
  out += text;
  return out;
}

}  // namespace loadlab
