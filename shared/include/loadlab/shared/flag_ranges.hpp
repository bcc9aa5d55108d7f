#pragma once
// The range check of a numeric command-line flag, for CLI11 (header only: the programs
// link CLI11, this library does not). Unlike CLI::Range it also refuses what is not a
// finite number (nan, inf, 1e309 read as inf), and it runs before CLI11 converts the text,
// so a value the flag's type cannot hold ("-t 1e309") gets the same message saying what is
// allowed: "--threshold-pct: must be a number in 0..1000, got -5". Bounds come from the
// limits table (loadlab/shared/limits.hpp).
#include <CLI/CLI.hpp>
#include <sstream>
#include <string>

namespace loadlab {

inline CLI::Validator number_in(double min, double max) {
  std::ostringstream range;
  range.precision(15);
  range << min << ".." << max;
  return CLI::Validator(
      [min, max, allowed = range.str()](std::string& text) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(text, v) || !(v >= min && v <= max))
          return "must be a number in " + allowed + ", got " + text;
        return "";
      },
      "in " + range.str());
}

}  // namespace loadlab
