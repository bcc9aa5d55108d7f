#pragma once
// One job's cgroup. The child joins it between fork and exec (it writes "0" into procs_fd()),
// so the child and every descendant stay inside, also those that leave the process group
// or are re-parented to init. The ChildProcess that owns it calls kill_all() and remove()
// from one thread at a time; the readers (cpu(), pids()) keep no state and may run beside.
#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loadlab/agent/proc_control.hpp"

namespace loadlab::agent {

// Cumulative CPU of every process that ever ran in a cgroup (v2 cpu.stat).
struct CgroupCpu {
  uint64_t usage_usec = 0, user_usec = 0, system_usec = 0;
  // usage_usec is the exact total; user and system split it, so that they add up to it.
  double user_s() const { return static_cast<double>(std::min(user_usec, usage_usec)) / 1e6; }
  double system_s() const { return static_cast<double>(usage_usec - std::min(user_usec, usage_usec)) / 1e6; }
};
// Parses cpu.stat's text; nullopt without usage_usec.
[[nodiscard]] std::optional<CgroupCpu> parse_cpu_stat(std::string_view text);

// The folder of the job cgroup that `proc_pid_cgroup` (the text of /proc/PID/cgroup) puts
// the process in, if that cgroup is one agent process `agent_pid` made under `place`;
// nullopt otherwise (another agent's job, the agent's own cgroup, a job nested deeper).
std::optional<std::string> job_cgroup_dir(std::string_view proc_pid_cgroup, const Cgroup2Place& place,
                                          pid_t agent_pid);

class JobCgroup {
 public:
  // A fresh, empty job cgroup under control.jobs_dir; nullptr for pgroup. Throws
  // EnvironmentError with the reason if it cannot be made.
  [[nodiscard]] static std::unique_ptr<JobCgroup> create(const ProcControl& control);
  virtual ~JobCgroup();  // closes files; the cgroup stays until remove()

  JobCgroup(const JobCgroup&) = delete;
  JobCgroup& operator=(const JobCgroup&) = delete;

  const std::string& path() const { return path_; }
  // cgroup.procs, open for writing (close-on-exec): the child writes "0" to join.
  int procs_fd() const { return procs_fd_; }

  // SIGKILL to every process in the job and in cgroups nested in it.
  virtual void kill_all() = 0;
  // CPU of the job from cpu.stat; nullopt where the cgroup has none (v1 freezer).
  virtual std::optional<CgroupCpu> cpu() const { return std::nullopt; }
  // The processes in the job and in cgroups nested in it (agents run inside a job make their
  // own job cgroups below it).
  std::vector<pid_t> pids() const;
  // True once no process is left; waits up to `timeout`.
  bool wait_empty(std::chrono::milliseconds timeout) const;
  // Removes the cgroup and those nested in it; false (and logged) if one still has processes.
  bool remove();

 protected:
  explicit JobCgroup(std::string path);
  virtual bool empty() const { return pids().empty(); }
  // SIGKILL to each listed process. Only while the cgroup is frozen: a frozen process cannot
  // exit on its own, so a listed pid cannot be freed and reused before it is signalled.
  void kill_listed() const;

  std::string path_;
  int procs_fd_ = -1;
};

// A job's own cgroup in one cgroup v1 hierarchy beside its job cgroup (cpuset, pids: hybrid
// set-ups keep those controllers in v1): "JOBS_DIR/job-PID-N". The child joins it by writing
// "0" into procs_fd() between fork and exec. remove() once the job's processes are gone (the
// destructor tries too).
class V1JobFolder {
 public:
  // Makes the folder and lets `setup` write its control files (false with errno when one
  // cannot be written; `setup` names it in `what`). Throws EnvironmentError with the reason
  // when anything fails; `kind` names the folder in messages ("job cpuset").
  [[nodiscard]] static std::unique_ptr<V1JobFolder> create(
      const std::string& jobs_dir, const std::string& kind,
      const std::function<bool(const std::string& path, std::string& what)>& setup);
  ~V1JobFolder();
  V1JobFolder(const V1JobFolder&) = delete;
  V1JobFolder& operator=(const V1JobFolder&) = delete;
  int procs_fd() const { return procs_fd_; }
  const std::string& path() const { return path_; }
  bool remove();

 private:
  V1JobFolder() = default;
  std::string path_, kind_;
  int procs_fd_ = -1;
  bool removed_ = false;
};

// Forks a child that joins the cgroup whose cgroup.procs `procs_fd` is (the folder `path`)
// and exits: "" if it could, else why. Proves what mkdir alone does not: delegation, the
// cgroup's type, a read-only mount.
std::string probe_join(int procs_fd, const std::string& path);

// Reads a small cgroup or proc file whole; nullopt if it cannot be read.
[[nodiscard]] std::optional<std::string> read_text_file(const std::string& path);
// Writes `text` to an existing file (cgroup control files); false with errno on failure.
bool write_text_file(const std::string& path, std::string_view text);

}  // namespace loadlab::agent
