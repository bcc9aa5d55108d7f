#pragma once
// Small statistics shared by the reports (the verdicts' own are in verdict.hpp).
#include <optional>
#include <vector>

namespace loadlab::controller {

// The mean of the middle two for an even count; none when `v` is empty.
std::optional<double> median(std::vector<double> v);

}  // namespace loadlab::controller
