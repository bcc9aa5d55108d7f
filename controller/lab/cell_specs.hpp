#pragma once
// What a cell asks of its agents: the target's spec, and each load agent's share of the
// load and its spec.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loadlab/v1/agent.pb.h"
#include "scenario/plan.hpp"
#include "scenario/scenario.hpp"

namespace loadlab::controller {

// One load agent's share of a cell.
struct LoadShare {
  uint32_t threads = 0, connections = 0;
  std::optional<uint64_t> total_requests;
};
// Splits the cell's threads over at most `agents` load agents (fewer if there are fewer
// threads), connections with them, and total_requests in proportion.
std::vector<LoadShare> split_load(const Scenario& s, const Cell& c, size_t agents);

v1::TargetSpec target_spec(const Scenario& s, const Cell& c);
// The ProfileSpec both sides of a profiled cell carry.
v1::ProfileSpec profile_spec(const ProfileSetting& setting);
v1::LoadSpec load_spec(const Scenario& s, const Cell& c, const LoadShare& share, const std::string& endpoint);

}  // namespace loadlab::controller
