#include "job_support.hpp"

namespace loadlab::agent {

ExitStatus stop_tree(ProcFsReader& proc, ChildProcess& child, std::chrono::milliseconds grace) {
  // terminate() reaches the whole tree itself (job cgroup, or the group plus descendants
  // held by pidfd): no pid read earlier is signalled, since it may be a stranger's by now.
  auto st = child.terminate(grace);
  proc.forget_exited();
  return st;
}

}  // namespace loadlab::agent
