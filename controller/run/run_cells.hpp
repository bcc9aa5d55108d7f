#pragma once
// The cells of a run and what each has measured so far, in the scenario's order: what the
// parts of a run (the run loop, the judges, measuring again) share.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "results/results.hpp"
#include "scenario/plan.hpp"

namespace loadlab::controller {

struct RunCells {
  std::vector<Cell> cells;
  std::vector<std::optional<CellResult>> results;  // in cells' order; nullopt: not finished

  bool all_finished() const;
  std::vector<CellResult> finished() const;  // in cells' order
  std::vector<std::string> keys() const;
};

// How many times a cell was measured again because it was disturbed (each time moves the
// scenario's `repetitions` into its `disturbed`).
size_t remeasures(const CellResult& r, uint32_t repetitions);

}  // namespace loadlab::controller
