#pragma once
// Expansion of a scenario into the cells of its matrix.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "scenario/scenario.hpp"

namespace loadlab::controller {

// One cell: the effective value of every knob (from its matrix axis, or the scenario's
// fixed setting), and the axes' values in the scenario's order.
struct Cell {
  size_t index = 0;         // position in the run, 0-based
  size_t target_index = 0;  // into Scenario::targets
  std::string target;       // target name
  uint32_t delay_ms = 0;
  uint32_t threads = 1;      // client threads
  uint32_t connections = 1;  // total client connections
  double rate = 0;           // open loop: requests/s over the cell; 0 = closed loop
  uint32_t server_threads = 0;
  std::optional<uint64_t> body_size;
  bool keep_alive = true;
  std::string client = kBuiltinClient;
  std::string protocol = "http1";
  std::string tls_version;                        // over TLS (https, h2, h3): "1.2" or "1.3"; otherwise ""
  uint32_t streams = 1;                           // HTTP/2: requests in flight per connection
  std::string arrivals{proto::kUniformArrivals};  // open loop: kUniformArrivals or kPoissonArrivals
  uint64_t seed = 1;                              // poisson: the draws' seed
  uint32_t pace_granularity_us = 0;               // open loop: the worker's pacing granularity
  // A capacity search's step (capacity_search.hpp): its measured window, instead of the
  // load's stop condition; unset for a cell measured as the scenario says.
  std::optional<double> window_s;
  // How its instructions per request are counted (the scenario's `instructions`); none: not
  // counted.
  std::optional<InstructionsMethod> instructions;
  // Sampled with perf over each window (the scenario's `profile`); none: not profiled.
  std::optional<ProfileSetting> profile;
  std::vector<std::pair<std::string, std::string>> axes;  // (axis name, value as keys show it)
  // "beast/d5/t10": the target, then each axis's key prefix and value in the scenario's
  // order; the stable identity of a cell across runs.
  std::string key() const;
};

// targets × each matrix axis, in that nesting order (the scenario's order within each).
std::vector<Cell> expand(const Scenario& s);

// Calls `fn(cell, digits)` for every cell in expansion order; digits[i] is the index of
// the value of s.matrix[i] the cell takes. Cells' `index` and `key` are set.
template <class Fn>
void for_each_cell(const Scenario& s, Fn&& fn);

// The cell of target `t` at the given axis digits.
[[nodiscard]] Cell make_cell(const Scenario& s, size_t t, const std::vector<size_t>& digits);

template <class Fn>
void for_each_cell(const Scenario& s, Fn&& fn) {
  size_t index = 0;
  std::vector<size_t> digits(s.matrix.size(), 0);
  for (size_t t = 0; t < s.targets.size(); ++t) {
    std::fill(digits.begin(), digits.end(), 0);
    for (;;) {
      Cell c = make_cell(s, t, digits);
      c.index = index++;
      fn(c, digits);
      size_t i = digits.size();  // the last axis turns fastest
      while (i > 0 && ++digits[i - 1] == s.matrix[i - 1].values.size()) digits[--i] = 0;
      if (i == 0) break;
    }
  }
}

}  // namespace loadlab::controller
