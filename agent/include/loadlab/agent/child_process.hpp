#pragma once
// A child process in its own process group and, where the machine offers cgroups, in a job
// cgroup of its own (see proc_control.hpp), with its stdout and stderr captured.
//
// stdout is split into lines that the owner takes with next_line(); stdout and stderr both
// feed a bounded ring of the last lines for error messages. One reader thread per child
// drains both pipes so the child never blocks on a full pipe. terminate() stops the whole
// job: SIGTERM to the group, then SIGKILL to the job after a grace period, and reaps the child.
//
// Never a stranger: the child is held by a pidfd from fork on and stays unreaped (a zombie
// once it has exited) until terminate(), so its pid and process group number cannot be
// reused while they may be signalled; after the reap nothing is sent to them again.
#include <signal.h>
#include <sys/resource.h>
#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "loadlab/agent/job_user.hpp"
#include "loadlab/agent/proc_control.hpp"
#include "loadlab/shared/cpu_list.hpp"

namespace loadlab::agent {

class JobCgroup;
class V1JobFolder;
class ProcReader;
class DescendantPidfds;

struct ExitStatus {
  int code = -1;   // exit code, or -1 if killed by a signal
  int signal = 0;  // terminating signal, 0 if it exited
  // The child's whole-life CPU. Process-group path: the kernel's rusage, the child and the
  // descendants it reaped. cgroup2 path: the job's cpu.stat when the exit was seen, the child
  // and every descendant, reaped or not: the figure read_tree() gives for the job, so that a
  // usage window can end on it.
  double user_s = 0, system_s = 0;
  long maxrss_kb = 0;
  std::string describe() const;
};

struct SpawnOptions {
  std::vector<std::pair<std::string, std::string>> env;  // added to (or replacing in) the agent's environment
  std::string cwd;                                       // "" = the agent's
  // The CPUs the child and its descendants are held to (cpu_binding.hpp); empty = any.
  CpuList cpus;
  // The most tasks (processes and threads) the job may have at once, held by the kernel's
  // pids controller where there is one (pids_limit.hpp): a fork loop fails in the job instead
  // of filling the machine between two samples. 0 = no ceiling.
  int64_t max_tasks = 0;
  // Runs the child as this user (loadlab-agent --job-user), switched to after it joined its
  // cgroups and before exec; nullptr = the agent's user.
  const JobUser* user = nullptr;
  // A child is a job (code the lab does not trust): before exec it gives up every capability
  // and every descriptor of its parent (job_credentials.hpp). Only a program that needs its
  // parent's privileges and is not a job keeps them: an agent, setpriv or `ip netns exec` that
  // a test starts. Ignored with `user`: a job user's child is always a job.
  bool keep_privileges = false;
  // Also writes every line of stdout and stderr, in the order read, to this file (created or
  // truncated, written by the agent): a build's log. "" = none.
  std::string output_log;
};

class ChildProcess {
 public:
  // Starts argv[0] (a path) with argv, on the path proc_control() chose. Throws
  // EnvironmentError with the reason if the process cannot be started (a failure between
  // fork and exec is reported through a CLOEXEC pipe).
  static std::unique_ptr<ChildProcess> spawn(const std::vector<std::string>& argv,
                                             const SpawnOptions& options = {});
  // Terminates the job (kills what is left of it even if the child has exited), reaps the
  // child, removes its cgroup, joins the reader.
  ~ChildProcess();

  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  ProcControlMode control_mode() const { return mode_; }
  // The job cgroup's folder; "" on the process-group path.
  std::string cgroup_path() const;
  // How the child is held to SpawnOptions.cpus ("cpuset-v2", "cpuset-v1", "affinity"); ""
  // when it was given none.
  const std::string& cpu_binding() const { return cpu_binding_; }
  // How SpawnOptions.max_tasks is held ("pids-v2", "pids-v1"); "" when by counting only.
  const std::string& pids_limit() const { return pids_limit_; }
  // The job's environment mark ("LOADLAB_JOB=AGENTPID-N"; job_processes.hpp).
  const std::string& mark() const { return mark_; }
  // The job's processes now: its cgroup's, or without one the living tree and every process
  // carrying the job's mark. What a process limit counts.
  std::vector<pid_t> job_pids(ProcReader& reader) const;

  enum class LineStatus { kLine, kTimeout, kEof };
  // Next stdout line (without '\n'); waits up to `timeout`. Any thread, one at a time.
  LineStatus next_line(std::string& line, std::chrono::milliseconds timeout);

  // Sends the child `sig` with a value (as sigqueue() does); never to a process that took its
  // pid after it was reaped. Any thread. False with errno when it could not be sent.
  bool queue_signal(int sig, sigval value);

  // Non-blocking: the exit status once the child has exited. It is reaped only by
  // terminate() (or the destructor), so that its pid and group stay reserved until then.
  std::optional<ExitStatus> poll_exit();
  // Waits up to `timeout` for the child to exit (sleeping on its pidfd).
  std::optional<ExitStatus> wait_exit(std::chrono::milliseconds timeout);
  // SIGTERM to the group, SIGKILL to the whole job after `grace`; then kills what is left of
  // the job (also when the child had exited) and reaps the child. Returns the exit status.
  // Called again after the reap, it signals no pid or group: only the cgroup, if any.
  ExitStatus terminate(std::chrono::milliseconds grace = std::chrono::milliseconds(2000));

  // Waits (up to `timeout`) until both pipes are drained to their end, so that the tail
  // of an exited child's output is complete.
  void wait_output_end(std::chrono::milliseconds timeout);
  // The last lines of stdout and stderr, joined by '\n'.
  std::string output_tail(size_t max_lines = 20) const;

 private:
  ChildProcess() = default;
  void reader_loop(int out_fd, int err_fd);
  void push_tail(std::string line);
  void queue_line(const std::string& line);  // under mutex_: to lines_, within the bounds
  ExitStatus exit_status(const siginfo_t& info, const rusage& ru) const;
  void signal_group(int sig);
  void kill_job(const DescendantPidfds& escaped);
  void reap();
  void remove_job();
  void bind_cpus(const CpuList& cpus);  // before the fork: the job's cpuset, or affinity only
  void limit_tasks(int64_t max);        // before the fork: the job's pids.max, where there is one

  pid_t pid_ = -1;
  int pidfd_ = -1;  // -1 only on kernels without pidfds: then the pid, still ours until reaped
  ProcControlMode mode_ = ProcControlMode::kProcessGroup;
  std::unique_ptr<JobCgroup> job_;       // nullptr on the process-group path
  std::unique_ptr<V1JobFolder> cpuset_;  // the job's v1 cpuset, on that binding
  std::unique_ptr<V1JobFolder> pids_;    // the job's v1 pids cgroup, on that path
  std::string cpu_binding_, pids_limit_;
  std::string mark_;
  std::mutex exit_mutex_;  // guards exit_ and reaped_, held while signalling by pid
  std::optional<ExitStatus> exit_;
  bool reaped_ = false;
  int wake_fd_ = -1;  // eventfd that stops the reader

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::string> lines_;  // stdout lines not yet taken
  size_t queued_bytes_ = 0;        // their bytes
  std::deque<std::string> tail_;   // last lines of stdout + stderr
  bool eof_ = false;
  int log_fd_ = -1;  // SpawnOptions.output_log
  size_t logged_bytes_ = 0;
  static constexpr size_t kMaxLogBytes = size_t{64} << 20;
  std::thread reader_;
};

}  // namespace loadlab::agent
