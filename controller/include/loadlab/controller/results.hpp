#pragma once
// The result model: raw figures per repetition, and a cell's summary over repetitions.
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "loadlab/controller/plan.hpp"

namespace loadlab::controller {

struct UsagePoint {
  double t_s = 0, cpu_pct = 0;
  uint64_t rss_kb = 0;
};

struct UsageResult {
  double window_s = 0;
  double cpu_pct = 0, cpu_user_pct = 0, cpu_system_pct = 0;  // 100 = one core
  uint64_t rss_kb_mean = 0, rss_kb_peak = 0;
  uint32_t samples = 0;
  double machine_cpu_pct = -1;  // the agent machine's busy CPU, 100 = one core; -1 unknown
  uint32_t machine_cores = 0;
  std::vector<UsagePoint> series;
  // Sums another agent's figures into these (several load agents = one client).
  void add(const UsageResult& other);
};

// One load agent's share of a repetition.
struct LoadPart {
  std::string agent;
  uint32_t threads = 0, connections = 0;
  uint64_t requests = 0, errors = 0;
  double qps = 0;
  UsageResult client;
};

struct LatencyUs {
  double p50 = 0, p90 = 0, p99 = 0, p999 = 0, max = 0, mean = 0, min = 0;
};

struct RepResult {
  uint64_t requests = 0;
  uint64_t errors = 0;
  double duration_s = 0;
  double qps = 0;
  LatencyUs latency_us;  // from intended send times when latency_corrected (open loop)
  LatencyUs latency_uncorrected_us;
  bool latency_corrected = false;
  double rate = 0;             // requested, 0 = closed loop
  double achieved_rate = 0;    // open loop: requests begun per second, summed over load agents
  bool rate_not_held = false;  // open loop: some load agent fell behind its schedule
  uint64_t connects = 0;
  LatencyUs connect_us;
  std::map<uint32_t, uint64_t> status;
  std::map<std::string, uint64_t> error_kinds;
  uint64_t bytes_read = 0;
  nlohmann::json histogram;    // loadlab::Histogram::to_json() form
  UsageResult server, client;  // client: summed over the load agents
  uint32_t target_startup_ms = 0;
  std::string target_agent;
  std::vector<LoadPart> parts;
  // Warnings that make the figures suspect, e.g. "client-saturated" (see flags.cpp).
  std::vector<std::string> flags;
  uint32_t attempts = 1;  // 1 + retries it took
};

struct CellResult {
  Cell cell;
  std::vector<RepResult> reps;
  std::string error;  // why the cell failed; empty when it succeeded
  bool ok() const { return error.empty() && !reps.empty(); }
  // The repetition with the median QPS (lower median for an even count); the cell's
  // figures are that repetition's, so they belong to one real run.
  const RepResult& median() const;
  double qps_min() const;
  double qps_max() const;
  std::vector<std::string> flags() const;  // union over repetitions
};

// A cell read back from journal.jsonl / result.json (for --resume).
CellResult cell_from_json(const nlohmann::json& j, const Cell& cell);

nlohmann::json to_json(const UsageResult& u);
nlohmann::json to_json(const RepResult& r);
nlohmann::json to_json(const CellResult& c);

}  // namespace loadlab::controller
