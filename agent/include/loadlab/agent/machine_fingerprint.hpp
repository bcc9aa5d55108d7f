#pragma once
// The machine under the agent as far as it moves a benchmark's figures (AgentInfo.fingerprint):
// read from /proc and /sys at each Describe, so a change of governor or kernel between two
// nights shows. Roots are parameters so tests read fixtures.
#include <string>

#include "loadlab/v1/agent.pb.h"

namespace loadlab::agent {

v1::MachineFingerprint read_fingerprint(const std::string& proc_root = "/proc",
                                        const std::string& sys_root = "/sys");

}  // namespace loadlab::agent
