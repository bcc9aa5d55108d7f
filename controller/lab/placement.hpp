#pragma once
// The agents one attempt of a repetition runs on.
#include <cstdint>
#include <string>
#include <vector>

#include "loadlab/v1/agent.grpc.pb.h"

namespace loadlab::controller {

struct AgentRef {
  std::string name;
  v1::Agent::StubInterface* stub = nullptr;  // owned by the AgentPool
  uint32_t cores = 0;
  std::string hostname;          // from Describe: two agents of one machine share it
  std::string allowed_cpus;      // from Describe (AgentInfo.allowed_cpus); "" from an older agent
  bool scheduled_start = false;  // AgentInfo.scheduled_start: false from an older agent
};

struct Placement {
  AgentRef target;
  std::vector<AgentRef> loads;  // at least one
  // The CPUs each side runs on (TargetSpec.cpus, LoadSpec.cpus; "" = not pinned), from the
  // scenario's placement.cpus and where the sides landed: cpu_sets().
  std::string target_cpus;
  std::vector<std::string> load_cpus;  // one per load agent
};

}  // namespace loadlab::controller
