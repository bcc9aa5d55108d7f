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

// SIGTERM/SIGKILL to the child's group and to every descendant found before it (those that
// left the group by setsid are not reached by the group kill).
ExitStatus stop_tree(ProcFsReader& proc, ChildProcess& child, std::chrono::milliseconds grace);

void fill_usage(const UsageFigures& f, const std::string& label, v1::Usage* u);

}  // namespace loadlab::agent
