#pragma once
// The embedded agent `loadlab` wires into a run without a lab: the agent library's server on
// a loopback port, in this process. Kept out of the controller library (which links no agent
// code) in its own small library, shared by the binary and the tests.
#include "lab/embedded_agent.hpp"

namespace loadlab::controller {

// An EmbeddedAgentFactory for RunOptions::embedded_agent.
std::unique_ptr<EmbeddedAgent> start_local_agent(const std::string& bin_dir);

}  // namespace loadlab::controller
