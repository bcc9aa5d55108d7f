#include "run/run_metrics.hpp"

namespace loadlab::controller {

void RunMetrics::run_started(const std::string& scenario, size_t cells) {
  std::lock_guard lock(mutex_);
  scenario_ = scenario;
  planned_ = cells;
}

void RunMetrics::cell_started(const std::string& key, uint32_t rep, uint32_t reps) {
  std::lock_guard lock(mutex_);
  current_ = key;
  rep_ = rep;
  reps_ = reps;
  live_known_ = false;
  live_ = {};
  ++repetitions_;
}

void RunMetrics::live(const LiveProgress& p) {
  std::lock_guard lock(mutex_);
  live_ = p;
  live_known_ = true;
}

void RunMetrics::cell_finished(const std::string& key, bool ok) {
  std::lock_guard lock(mutex_);
  ++(ok ? ok_ : failed_);
  if (key == current_) {
    current_.clear();
    live_known_ = false;
  }
}

std::vector<metrics::Family> RunMetrics::families() const {
  using metrics::Family;
  using metrics::Type;
  std::lock_guard lock(mutex_);
  std::vector<Family> out;
  out.push_back({"loadlab_run",
                 Type::kInfo,
                 "The scenario this controller runs.",
                 "",
                 {{{{"scenario", scenario_}}, 1}}});
  out.push_back({"loadlab_run_cells_planned",
                 Type::kGauge,
                 "Cells of the run's matrix.",
                 "",
                 {{{}, static_cast<double>(planned_)}}});
  out.push_back({"loadlab_run_cells_finished",
                 Type::kCounter,
                 "Cells finished: measured (ok) or failed after their retries (failed).",
                 "",
                 {{{{"result", "ok"}}, static_cast<double>(ok_)},
                  {{{"result", "failed"}}, static_cast<double>(failed_)}}});
  out.push_back({"loadlab_run_repetitions_started",
                 Type::kCounter,
                 "Repetitions started, retries and measurements again included.",
                 "",
                 {{{}, static_cast<double>(repetitions_)}}});
  if (!current_.empty()) {
    const metrics::Labels cell{{"cell", current_}};
    out.push_back(
        {"loadlab_run_current_cell",
         Type::kInfo,
         "The cell in progress and its repetition (1-based) of how many.",
         "",
         {{{{"cell", current_}, {"repetition", std::to_string(rep_ + 1)}, {"of", std::to_string(reps_)}},
           1}}});
    if (live_known_) {
      out.push_back({"loadlab_run_live_requests_per_second",
                     Type::kGauge,
                     "The cell's load agents' request rate over their last progress interval, summed.",
                     "",
                     {{cell, live_.qps}}});
      out.push_back(
          {"loadlab_run_live_latency_mean_seconds",
           Type::kGauge,
           "The mean latency of the cell's requests over the last progress interval (0 in warm-up).",
           "seconds",
           {{cell, live_.latency_mean_ms / 1000}}});
      out.push_back({"loadlab_run_live_warmup",
                     Type::kGauge,
                     "1 while the cell's load warms up (unmeasured), 0 once it is measured.",
                     "",
                     {{cell, live_.warmup ? 1.0 : 0.0}}});
    }
  }
  return out;
}

}  // namespace loadlab::controller
