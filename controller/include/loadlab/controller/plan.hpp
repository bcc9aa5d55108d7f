#pragma once
// Expansion of a scenario into the cells of its matrix.
#include <cstdint>
#include <string>
#include <vector>

#include "loadlab/controller/scenario.hpp"

namespace loadlab::controller {

struct Cell {
  size_t index = 0;         // position in the run, 0-based
  size_t target_index = 0;  // into Scenario::targets
  std::string target;       // target name
  uint32_t delay_ms = 0;
  uint32_t threads = 0;      // client threads
  uint32_t connections = 0;  // total client connections
  std::string key() const;   // "beast/d5/t10": stable identity of a cell across runs
};

// targets × delay_ms × threads, in that nesting order (the scenario's order within each).
std::vector<Cell> expand(const Scenario& s);

}  // namespace loadlab::controller
