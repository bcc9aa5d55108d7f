#include "job_support.hpp"

namespace loadlab::agent {

ExitStatus stop_tree(ProcFsReader& proc, ChildProcess& child, std::chrono::milliseconds grace) {
  // terminate() reaches the whole tree itself (job cgroup, or the group plus descendants
  // held by pidfd): no pid read earlier is signalled, since it may be a stranger's by now.
  auto st = child.terminate(grace);
  proc.forget_exited();
  return st;
}

grpc::Status read_lines_until_end(ChildProcess& child, ProcFsReader& proc, grpc::ServerContext& ctx,
                                  JobLease& lease, std::chrono::milliseconds grace,
                                  const std::function<grpc::Status(const std::string&)>& on_line) {
  std::string line;
  for (;;) {
    auto ls = child.next_line(line, std::chrono::milliseconds(100));
    if (ctx.IsCancelled()) {
      lease.stopping();
      stop_tree(proc, child, grace);
      return grpc::Status(grpc::StatusCode::CANCELLED, "load cancelled");
    }
    if (ls == ChildProcess::LineStatus::kEof) return grpc::Status::OK;
    if (ls != ChildProcess::LineStatus::kLine) continue;
    if (auto st = on_line(line); !st.ok()) return st;
  }
}

}  // namespace loadlab::agent
