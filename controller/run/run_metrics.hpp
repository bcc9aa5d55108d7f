#pragma once
// What `loadlab run --metrics-listen` serves (docs/operations.md, "Metrics"): the run's
// progress, cells done and failed of those planned, and the cell in progress with its live
// figures from the load workers' progress events (the rate, the mean latency, warm-up or
// measured). Fed by the run's thread, read by the metrics endpoint's.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "core/live_progress.hpp"
#include "loadlab/metrics/exposition.hpp"

namespace loadlab::controller {

class RunMetrics {
 public:
  void run_started(const std::string& scenario, size_t cells);
  void cell_started(const std::string& key, uint32_t rep, uint32_t reps);
  void live(const LiveProgress& p);
  void cell_finished(const std::string& key, bool ok);
  std::vector<metrics::Family> families() const;

 private:
  mutable std::mutex mutex_;
  std::string scenario_;
  size_t planned_ = 0, ok_ = 0, failed_ = 0;
  uint64_t repetitions_ = 0;
  std::string current_;  // "" between cells
  uint32_t rep_ = 0, reps_ = 0;
  bool live_known_ = false;
  LiveProgress live_;
};

}  // namespace loadlab::controller
