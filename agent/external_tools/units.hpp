#pragma once
// Numbers with units as the tools print them. Each returns nullopt for text that is not
// exactly a number followed by one of the units it knows (surrounding blanks allowed), so
// a format change is an error, never a silent 0.
#include <cstdint>
#include <optional>
#include <string_view>

namespace loadlab::clients {

// A duration in microseconds: "426us", "1.44ms", "3.00s", "118.00m", "2h" (wrk's time
// units, h2load's format_duration). NaN and negative values are rejected.
std::optional<double> duration_us(std::string_view text);

// A byte count with wrk's binary units (1K = 1024): "216.00B", "183.80KB", "1.41GB".
// Rounded to whole bytes; wrk prints two decimals, so the value is exact to 0.5 % of a unit.
std::optional<uint64_t> binary_bytes(std::string_view text);

// A plain decimal number ("3553.72", "0.0012", "12"); nullopt for NaN, inf or trailing text.
std::optional<double> number(std::string_view text);

// An unsigned integer ("7115"); nullopt for signs, decimals or trailing text.
std::optional<uint64_t> count(std::string_view text);

}  // namespace loadlab::clients
