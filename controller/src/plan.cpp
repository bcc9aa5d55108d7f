#include "loadlab/controller/plan.hpp"

namespace loadlab::controller {

std::string Cell::key() const {
  return target + "/d" + std::to_string(delay_ms) + "/t" + std::to_string(threads);
}

std::vector<Cell> expand(const Scenario& s) {
  std::vector<Cell> cells;
  cells.reserve(s.targets.size() * s.delay_ms.size() * s.threads.size());
  for (size_t t = 0; t < s.targets.size(); ++t)
    for (auto delay : s.delay_ms)
      for (auto threads : s.threads) {
        Cell c;
        c.index = cells.size();
        c.target_index = t;
        c.target = s.targets[t].name;
        c.delay_ms = delay;
        c.threads = threads;
        c.connections = threads * s.load.connections_per_thread;
        cells.push_back(std::move(c));
      }
  return cells;
}

}  // namespace loadlab::controller
