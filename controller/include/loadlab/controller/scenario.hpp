#pragma once
// A scenario: what to run (targets × matrix) and how to load each cell. Parsed strictly
// from JSON; see docs/scenario.md for the reference.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace loadlab::controller {

struct TargetDef {
  std::string name;
  std::string builtin;          // set for a built-in target ("hello")
  std::string catalog;          // set for an agent catalog entry
  std::string body;             // response body; "" = the target's default
  uint32_t server_threads = 0;  // 0 = the agent's core count
};

struct LoadDef {
  // Exactly one stop condition.
  std::optional<uint64_t> requests_per_thread;
  std::optional<uint64_t> total_requests;
  std::optional<double> duration_s;
  uint32_t connections_per_thread = 1;
  double warmup_s = 0;
  bool keep_alive = true;
  std::string method = "GET";
  std::string path = "/";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  uint32_t timeout_ms = 0;  // 0 = the worker's default
  double rate = 0;          // open loop: requests/s over the whole cell; 0 = closed loop
};

// Which agents of the lab take which part of a cell.
struct PlacementDef {
  std::string target_role = "target";
  std::vector<std::pair<std::string, std::string>> target_labels;  // all must match
  std::string load_role = "load";
  std::vector<std::pair<std::string, std::string>> load_labels;
  uint32_t load_agents = 1;   // load agents driving each cell together
  bool share_agents = false;  // may the target's agent also run load? (always, in a one-agent lab)
};

struct ExecutionDef {
  uint32_t retries = 2;                  // per repetition, on the same or another eligible agent
  double retry_backoff_s = 1;            // first retry's wait for its agents; doubles up to 30 s; 0 = none
  double cooldown_s = 0;                 // pause between cells
  std::optional<uint64_t> shuffle_seed;  // run cells in a seeded random order
  double ready_s = 30, warmup_extra_s = 30, measure_s = 0, stop_s = 15;  // phase deadlines
};

struct Scenario {
  std::string name;
  std::string description;
  std::vector<TargetDef> targets;
  std::vector<uint32_t> delay_ms;
  std::vector<uint32_t> threads;
  LoadDef load;
  uint32_t repetitions = 1;
  PlacementDef placement;
  ExecutionDef execution;
  nlohmann::json source;  // the scenario as written, kept in result.json
};

// Throws loadlab::InputError naming the JSON path of the first problem.
Scenario parse_scenario(const nlohmann::json& j);
Scenario load_scenario_file(const std::string& path);

}  // namespace loadlab::controller
