#pragma once
// Small statistics shared by the reports (the verdicts' own are in verdict.hpp).
#include <vector>

namespace loadlab::controller {

double median(std::vector<double> v);  // the mean of the middle two for an even count; NAN when empty

}  // namespace loadlab::controller
