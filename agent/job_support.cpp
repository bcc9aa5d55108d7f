#include "job_support.hpp"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "loadlab/shared/environment_error.hpp"

namespace loadlab::agent {

AuxFolder::AuxFolder(const std::vector<JobFile>& files, const JobUser* owner) {
  if (files.empty()) return;
  char tmpl[] = "/tmp/loadlab-job-XXXXXX";
  if (!mkdtemp(tmpl)) throw system_failure("cannot make a folder for the job's files");
  path_ = tmpl;
  auto fail = [&](const std::string& what) {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);  // no destructor runs for a constructor that throws
    throw EnvironmentError(what);
  };
  for (auto& f : files) {
    const auto file = std::filesystem::path(path_) / f.name;
    std::ofstream out(file, std::ios::binary);
    out << f.content;
    if (!out.flush()) fail("cannot write " + f.name + " into " + path_);
    std::error_code ec;
    std::filesystem::permissions(
        file, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write, ec);
    if (owner != nullptr && chown(file.c_str(), owner->uid, owner->gid) != 0)
      fail("cannot give " + file.string() + " to user " + owner->name + ": " + std::strerror(errno));
  }
  // The folder stays the agent's, so that the agent removes whatever is in it (a non-root agent
  // could not enter a folder of the job's user); the job's user may pass through it to its files,
  // but neither list it nor add to it.
  if (owner != nullptr && chmod(path_.c_str(), 0711) != 0)
    fail("cannot open " + path_ + " to user " + owner->name + ": " + std::strerror(errno));
}

AuxFolder::~AuxFolder() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

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
