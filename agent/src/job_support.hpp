#pragma once
// What the target and load jobs share: stopping a child's whole tree. Internal to the agent
// library.
#include <chrono>

#include "loadlab/agent/child_process.hpp"
#include "loadlab/agent/proc_reader.hpp"

namespace loadlab::agent {

// Stops the child's whole tree (SIGTERM, then SIGKILL after `grace`; see ChildProcess) and
// drops the /proc reader's handles of the processes that are gone.
ExitStatus stop_tree(ProcFsReader& proc, ChildProcess& child, std::chrono::milliseconds grace);

}  // namespace loadlab::agent
