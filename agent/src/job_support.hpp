#pragma once
// What the target and load jobs share: stopping a child's whole tree, and reading a load
// job's stdout until it ends or the call is cancelled. Internal to the agent library.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <functional>
#include <string>

#include "loadlab/agent/child_process.hpp"
#include "loadlab/agent/job_slot.hpp"
#include "loadlab/agent/proc_reader.hpp"

namespace loadlab::agent {

// Stops the child's whole tree (SIGTERM, then SIGKILL after `grace`; see ChildProcess) and
// drops the /proc reader's handles of the processes that are gone.
ExitStatus stop_tree(ProcFsReader& proc, ChildProcess& child, std::chrono::milliseconds grace);

// Hands `child`'s stdout to `on_line` line by line until it closes (OK) or `on_line` fails
// (its status); a cancelled call stops the child's tree (CANCELLED).
grpc::Status read_lines_until_end(ChildProcess& child, ProcFsReader& proc, grpc::ServerContext& ctx,
                                  JobLease& lease, std::chrono::milliseconds grace,
                                  const std::function<grpc::Status(const std::string&)>& on_line);

}  // namespace loadlab::agent
