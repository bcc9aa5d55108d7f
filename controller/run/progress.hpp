#pragma once
// Run progress for a person: on a terminal a bar redrawn in place (cells done/total,
// current cell, live QPS, ETA); elsewhere (CI, files) or with --quiet, one plain log line
// per cell. Called from the run's thread only; while the bar is up, log records from any
// thread are printed above it (StatusLine).
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "core/live_progress.hpp"
#include "core/status_line.hpp"
#include "run/run_metrics.hpp"

namespace loadlab::controller {

class ProgressReporter {
 public:
  // `tty`: draw the bar on stderr; `quiet`: plain lines even on a terminal.
  ProgressReporter(size_t total_cells, bool tty, bool quiet);
  ~ProgressReporter();

  void cell_started(size_t done, const std::string& key, uint32_t rep, uint32_t reps);
  void live(const LiveProgress& p);
  void cell_finished(size_t done, const std::string& key, const std::string& summary);
  // Text to print as a normal line (warnings) without breaking the bar.
  void note(const std::string& line);
  // The same for what the run does on purpose (measuring a cell again): info, not a warning.
  void info(const std::string& line);
  // Clears the bar, before the final table.
  void finish();
  // Also tells `metrics` (none: nullptr) of the cells started and the live figures.
  void set_metrics(RunMetrics* metrics) { metrics_ = metrics; }

  static bool stderr_is_tty();

 private:
  void draw();
  size_t total_;
  bool tty_;
  bool finished_ = false;  // finish() was called: nothing more is printed
  size_t done_ = 0;
  std::string current_;
  LiveProgress live_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_draw_{};
  std::shared_ptr<StatusLine> line_;  // set while the bar is drawn
  RunMetrics* metrics_ = nullptr;
};

}  // namespace loadlab::controller
