#include "run/run_cells.hpp"

#include <algorithm>

namespace loadlab::controller {

bool RunCells::all_finished() const {
  return std::all_of(results.begin(), results.end(), [](auto& r) { return r.has_value(); });
}

std::vector<CellResult> RunCells::finished() const {
  std::vector<CellResult> out;
  for (auto& r : results)
    if (r) out.push_back(*r);
  return out;
}

std::vector<std::string> RunCells::keys() const {
  std::vector<std::string> out;
  for (auto& c : cells) out.push_back(c.key());
  return out;
}

size_t remeasures(const CellResult& r, uint32_t repetitions) {
  return repetitions ? r.disturbed.size() / repetitions : 0;
}

}  // namespace loadlab::controller
