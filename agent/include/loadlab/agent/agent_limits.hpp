#pragma once
// What one agent's operator allows a job to ask for: at most the project's limits table
// (loadlab/shared/limits.hpp), lower where the operator says so (loadlab-agent --max-*).
// A spec over a limit is refused before anything is spawned, naming the field and the flag.
#include <cstdint>

#include "loadlab/shared/limits.hpp"
#include "loadlab/v1/agent.pb.h"

namespace loadlab::agent {

struct AgentLimits {
  int threads = limits::kMaxThreads;  // load threads of a worker, and threads of a target
  int64_t connections = limits::kMaxConnections;
  double duration_s = limits::kMaxDurationS;           // a load's measured time; also caps its whole run
  double rate = limits::kMaxRate;                      // requests per second of an open-loop load
  int64_t body_bytes = limits::kMaxResponseBodyBytes;  // request body, and a target's body_size
  int processes = limits::kDefaultJobProcesses;       // processes in one job (its cgroup, or its marked ones)
  int tasks = limits::kDefaultJobTasks;               // processes and threads of one job (pids.max)
  int idle_timeout_s = limits::kDefaultIdleTimeoutS;  // a call's peer may keep it waiting this long
};

// Throw InputError naming the field, the agent's limit and its flag when `spec` is over one.
void check_limits(const v1::LoadSpec& spec, const AgentLimits& l);
void check_limits(const v1::TargetSpec& spec, const AgentLimits& l);

}  // namespace loadlab::agent
