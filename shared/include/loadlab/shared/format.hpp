#pragma once
// Numbers and units as tables, reports and progress lines write them ("12.35", "3.0 s",
// "58213 req/s"), and table cells padded to a width as printf pads them.
#include <cstddef>
#include <string>
#include <string_view>

namespace loadlab {

// `v` with `decimals` digits after the point, as printf's "%.*f": fixed_text(2.345, 1) is "2.3".
std::string fixed_text(double v, int decimals);

// A duration in seconds with one decimal: "12.3 s".
std::string seconds_text(double s);

// A rate in whole requests a second: "58213 req/s".
std::string rate_text(double per_second);

// `text`, then spaces up to `width` bytes, as printf's "%-*s" pads; `text` whole when longer.
// Bytes, not screen columns: a multi-byte UTF-8 character ("–", "µ") counts as its bytes, so
// the tables keep the bytes they always had.
std::string pad_right(std::string_view text, std::size_t width);

// Spaces up to `width` bytes, then `text`, as printf's "%*s" pads.
std::string pad_left(std::string_view text, std::size_t width);

}  // namespace loadlab
