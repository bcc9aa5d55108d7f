#pragma once
// What the target and load jobs share: stopping a child's whole tree, and reading a load
// job's stdout until it ends or the call is cancelled. Internal to the agent library.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "loadlab/agent/child_process.hpp"
#include "loadlab/agent/job_slot.hpp"
#include "loadlab/agent/proc_reader.hpp"

namespace loadlab::agent {

struct JobFile {
  std::string name;  // within the job's folder
  std::string content;
};

// A private folder (mode 0700, under /tmp) for the files a job's command line refers to (wrk's
// Lua script, h2load's body, a catalog target's certificate and key), removed with the job.
// No folder when there are no files. With `owner` (--job-user), the folder and files are that
// user's, so that the job can read them and no other user can. Throws EnvironmentError when
// it cannot be written.
class AuxFolder {
 public:
  explicit AuxFolder(const std::vector<JobFile>& files, const JobUser* owner = nullptr);
  ~AuxFolder();
  AuxFolder(const AuxFolder&) = delete;
  AuxFolder& operator=(const AuxFolder&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Stops the child's whole tree (SIGTERM, then SIGKILL after `grace`; see ChildProcess) and
// drops the /proc reader's handles of the processes that are gone.
ExitStatus stop_tree(ProcFsReader& proc, ChildProcess& child, std::chrono::milliseconds grace);

// Hands `child`'s stdout to `on_line` line by line until it closes (OK) or `on_line` fails
// (its status); a cancelled call stops the child's tree (CANCELLED).
grpc::Status read_lines_until_end(ChildProcess& child, ProcFsReader& proc, grpc::ServerContext& ctx,
                                  JobLease& lease, std::chrono::milliseconds grace,
                                  const std::function<grpc::Status(const std::string&)>& on_line);

}  // namespace loadlab::agent
