#pragma once
// Synthetic cells for the report tests: a matrix target × delay_ms × threads with figures
// that encode where they come from, so a number in the wrong row or column shows.
#include <string>
#include <vector>

#include "results/results.hpp"

namespace loadlab::controller::testing {

// qps = 1000 × threads + delay_ms (+ 100000 for the second target); p99 = delay_ms + 1 ms.
inline CellResult report_cell(const std::string& target, uint32_t delay_ms, uint32_t threads,
                              const std::string& error = "") {
  CellResult c;
  c.cell.target = target;
  c.cell.delay_ms = delay_ms;
  c.cell.threads = threads;
  c.cell.connections = threads;
  c.cell.axes = {{"delay_ms", std::to_string(delay_ms)}, {"threads", std::to_string(threads)}};
  c.error = error;
  if (!error.empty()) return c;
  v1::Repetition r;
  r.set_qps(1000.0 * threads + delay_ms + (target == "beast" ? 0 : 100000));
  r.set_requests(1000);
  r.mutable_latency()->set_p50_us(delay_ms * 1000.0 + 500);
  r.mutable_latency()->set_p99_us(delay_ms * 1000.0 + 1000);
  r.mutable_server()->set_cpu_pct(10.0 * threads);
  r.mutable_server()->set_rss_kb_peak(2048 * threads);
  r.mutable_client()->set_cpu_pct(5.0 * threads);
  r.mutable_client()->set_rss_kb_peak(1024);
  c.reps.push_back(r);
  return c;
}

// Two targets × delays {0, 5} × threads {1, 10}, in expansion order.
inline std::vector<CellResult> report_matrix() {
  std::vector<CellResult> cells;
  for (std::string t : {"beast", "go"})
    for (uint32_t d : {0u, 5u})
      for (uint32_t th : {1u, 10u}) cells.push_back(report_cell(t, d, th));
  return cells;
}

}  // namespace loadlab::controller::testing
