#pragma once
// The one-line progress display on a terminal's stderr, rewritten in place:
// "\r  3.0 s  58 213 req/s  errors 0".
#include <string>

#include "load_runner.hpp"

namespace loadlab::load {

// Starts with '\r' and ends with "\x1b[K" (erase the rest of a longer previous line).
std::string format_progress_line(const Progress& p);

// 58213 -> "58 213": thousands separated by a space, as people read rates.
std::string group_thousands(int64_t n);

}  // namespace loadlab::load
