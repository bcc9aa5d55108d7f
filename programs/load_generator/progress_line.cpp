#include "progress_line.hpp"

#include <cmath>

#include "loadlab/shared/format.hpp"

namespace loadlab::load {

std::string group_thousands(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ' ';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

std::string format_progress_line(const Progress& p) {
  std::string line = "\r  " + seconds_text(p.elapsed_s);
  if (p.warmup) line += "  warm-up";
  line += "  " + group_thousands(std::llround(p.qps)) + " req/s  errors " + group_thousands(p.errors);
  line += "\x1b[K";
  return line;
}

}  // namespace loadlab::load
