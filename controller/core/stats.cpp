#include "core/stats.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

namespace loadlab::controller {

std::optional<double> median(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace loadlab::controller
