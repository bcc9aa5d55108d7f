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
};

struct Placement {
  AgentRef target;
  std::vector<AgentRef> loads;  // at least one
};

}  // namespace loadlab::controller
