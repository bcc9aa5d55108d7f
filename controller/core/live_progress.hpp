#pragma once
// Progress of the repetition running now, for the person watching.
#include <cstdint>
#include <functional>

namespace loadlab::controller {

// Progress from the load workers, summed over the load agents.
struct LiveProgress {
  double elapsed_s = 0;
  uint64_t requests = 0, errors = 0;
  double qps = 0;
  bool warmup = false;
  double latency_mean_ms = 0;  // over the last interval, the load agents' weighted by their rates
};
// Called on the repetition's thread.
using ProgressFn = std::function<void(const LiveProgress&)>;

}  // namespace loadlab::controller
