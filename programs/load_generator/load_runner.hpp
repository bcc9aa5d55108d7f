#pragma once
// Runs one closed-loop load test: one thread per -t with its own io_context, connections,
// histogram and counters; merges the per-thread figures at the end.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "load_result.hpp"
#include "loadlab/load/load_options.hpp"
#include "secure_clients.hpp"

namespace loadlab::load {

struct RunPlan;
struct RunState;
class Worker;

struct Progress {
  double elapsed_s = 0;  // since the start of the run (warm-up included)
  int64_t requests = 0;  // during warm-up: warm-up requests so far; after: measured requests
  int64_t errors = 0;    // same scope as `requests`
  double qps = 0;        // requests per second over the last interval
  bool warmup = false;
  double latency_mean_ms = 0;  // of the requests measured over the last interval (0 in warm-up)
};

struct RunCallbacks {
  // Both are called on the thread that called run().
  std::function<void(const Progress&)> on_progress;  // every `progress_interval`
  std::function<void()> on_measure_start;            // once, when the measured window opens
  // --start-on-signal: once, when warm-up ends; the window then waits for start_at().
  std::function<void()> on_ready;
};

class LoadRunner {
 public:
  // `options` are validated (again) here; if they are not usable, run() returns at
  // once with the validation message in `error`. `make_secure`: the TLS and QUIC family's
  // (secure_clients.hpp), which https:// and h3 runs need; without it they end with an error.
  explicit LoadRunner(LoadOptions options, RunCallbacks callbacks = {},
                      MakeSecureClients make_secure = nullptr);
  ~LoadRunner();
  LoadRunner(const LoadRunner&) = delete;
  LoadRunner& operator=(const LoadRunner&) = delete;

  // Blocks until the stop condition is met, the target proved unreachable, or
  // initiate_shutdown() was called. `error` in the result is set when no connection to
  // the target could ever be made ("cannot connect to HOST:PORT: reason").
  LoadResult run();

  // Any thread, also a signal handler (it only stores an atomic flag); idempotent.
  void initiate_shutdown() { shutdown_.store(true, std::memory_order_relaxed); }
  // --start-on-signal: the measured window opens at `at` (at once if it is past) and lasts -d.
  // Any thread, also a signal handler (it only stores an atomic); the first call counts.
  void start_at(std::chrono::steady_clock::time_point at) {
    std::chrono::steady_clock::rep none = 0;
    start_at_.compare_exchange_strong(
        none, std::max<std::chrono::steady_clock::rep>(1, at.time_since_epoch().count()));
  }

  std::chrono::milliseconds progress_interval{500};

 private:
  std::optional<std::chrono::steady_clock::time_point> run_workers(
      RunPlan& plan, RunState& state, std::vector<std::unique_ptr<Worker>>& workers, LoadResult& result);
  // --start-on-signal: places the window once start_at() has named its instant.
  void place_scheduled_window(RunPlan& plan, std::vector<std::unique_ptr<Worker>>& workers);

  LoadOptions options_;
  std::string invalid_;  // complete_and_validate()'s message, empty when usable
  RunCallbacks callbacks_;
  MakeSecureClients make_secure_;
  std::atomic<bool> shutdown_{false};
  static_assert(std::atomic<bool>::is_always_lock_free, "initiate_shutdown must be signal-safe");
  std::atomic<std::chrono::steady_clock::rep> start_at_{0};  // 0: not yet named
  static_assert(std::atomic<std::chrono::steady_clock::rep>::is_always_lock_free,
                "start_at must be signal-safe");
};

}  // namespace loadlab::load
