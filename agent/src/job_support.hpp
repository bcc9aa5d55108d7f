#pragma once
// What the target and load jobs share: stopping a child's whole tree, and the usage
// figures of a window as the protocol's message. Internal to the agent library.
#include <chrono>
#include <string>

#include "loadlab/agent/child_process.hpp"
#include "loadlab/agent/proc_reader.hpp"
#include "loadlab/agent/usage_window.hpp"
#include "loadlab/v1/agent.pb.h"

namespace loadlab::agent {

// Stops the child's whole tree (SIGTERM, then SIGKILL after `grace`; see ChildProcess) and
// drops the /proc reader's handles of the processes that are gone.
ExitStatus stop_tree(ProcFsReader& proc, ChildProcess& child, std::chrono::milliseconds grace);

void fill_usage(const UsageFigures& f, const std::string& label, v1::Usage* u);

}  // namespace loadlab::agent
