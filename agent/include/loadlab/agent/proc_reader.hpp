#pragma once
// Reads process figures from /proc. An interface so the sampler's arithmetic is tested on
// fixtures; ProcFsReader is the real one.
#include <sys/types.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace loadlab::agent {

struct ProcStat {
  pid_t pid = 0;
  pid_t ppid = 0;
  // Cumulative CPU in clock ticks; all threads of the process included. cutime/cstime hold
  // the time of children it has reaped, so summing all four over a tree stays continuous
  // when a descendant exits and is reaped inside the tree.
  uint64_t utime = 0, stime = 0, cutime = 0, cstime = 0;
  uint64_t rss_kb = 0;  // VmRSS
  // RssAnon: the process's own memory (heap, stacks, anonymous maps), without the pages of
  // its libraries and files in rss_kb; from statm (resident − shared); 0 when unreadable.
  uint64_t rss_anon_kb = 0;
  uint32_t threads = 0;  // 0 = unknown
  // Exact CPU of the whole thread group in ns (clock_getcpuclockid), dead threads
  // included; -1 if unavailable. utime/stime above are whole clock ticks (10 ms), too
  // coarse for short windows, so they only split this figure into user and system.
  int64_t cpu_ns = -1;
};

// One CPU's time since boot, from its cpuN line of /proc/stat, in clock ticks.
struct CpuTimes {
  uint32_t cpu = 0;
  // user + nice + system + steal, and irq + softirq where tasks are charged for them (see
  // irq_time_in_tasks()): what is comparable with the processes' own CPU figures.
  uint64_t busy = 0;
  uint64_t total = 0;  // all of the line's first eight fields
  uint64_t steal = 0;  // time the hypervisor ran something else while this CPU wanted to run
};

// Machine-wide CPU since boot, from /proc/stat, in clock ticks: the first line's sums, and
// each online CPU's own line.
struct MachineCpu {
  uint64_t busy = 0;
  uint64_t total = 0;
  uint64_t steal = 0;
  uint32_t cores = 0;
  std::vector<CpuTimes> per_cpu;  // by ascending CPU number
};

// Cumulative CPU of a job cgroup (cgroup2 path), split as cpu.stat splits it.
struct JobCpu {
  double user_s = 0, system_s = 0;
};

// Called from the sampler thread and gRPC handler threads; implementations keep no
// mutable state between calls.
class ProcReader {
 public:
  virtual ~ProcReader() = default;
  virtual std::vector<pid_t> list_pids() = 0;
  // nullopt if the process is gone.
  virtual std::optional<ProcStat> stat(pid_t pid) = 0;
  virtual long ticks_per_second() = 0;
  // Direct children of `pid` (`threads`: its thread count if known, else 0), or nullopt
  // when the kernel cannot list them (then the tree is found by scanning every process's
  // parent).
  virtual std::optional<std::vector<pid_t>> children(pid_t, uint32_t /*threads*/) { return std::nullopt; }
  virtual std::optional<MachineCpu> machine_cpu() { return std::nullopt; }
  // CPU of the job cgroup `pid` runs in, if that is one of this agent's job cgroups (the
  // cgroup2 path): every process that ever ran in the job, also descendants that exited
  // without being reaped inside the tree. nullopt otherwise. The caller keeps `pid`
  // unreaped (it is the agent's own child), so the number names that child.
  virtual std::optional<JobCpu> job_cpu(pid_t) { return std::nullopt; }
  // The CPUs `pid` may run on (Cpus_allowed_list of /proc/PID/status); nullopt if gone.
  virtual std::optional<std::string> cpus_allowed(pid_t) { return std::nullopt; }
  // How long each thread of `pid` has waited, runnable, for a CPU (the scheduler's run_delay
  // of /proc/PID/task/TID/schedstat), in seconds, by thread id; empty if gone or unknown.
  virtual std::vector<std::pair<pid_t, double>> run_delays_s(pid_t) { return {}; }
  // Drops what is kept about processes that have exited (called when a job ends).
  virtual void forget_exited() {}
};

// Whether the kernel charges interrupt time to the task it interrupted (tick-based CPU
// accounting, the default) rather than apart (CONFIG_IRQ_TIME_ACCOUNTING=y in /proc/config.gz
// or /boot/config-RELEASE). With the first, a process's own CPU includes the softirq work of its
// network traffic, and /proc/stat counts that work as softirq: busy must count it too. Read
// once; true when the kernel's configuration cannot be read.
bool irq_time_in_tasks();

class ProcFsReader : public ProcReader {
 public:
  explicit ProcFsReader(std::string root = "/proc") : root_(std::move(root)) {}
  ~ProcFsReader() override;
  std::vector<pid_t> list_pids() override;
  std::optional<ProcStat> stat(pid_t pid) override;
  long ticks_per_second() override;
  std::optional<std::vector<pid_t>> children(pid_t pid, uint32_t threads) override;
  std::optional<MachineCpu> machine_cpu() override;
  std::optional<JobCpu> job_cpu(pid_t pid) override;
  std::optional<std::string> cpus_allowed(pid_t pid) override;
  std::vector<std::pair<pid_t, double>> run_delays_s(pid_t pid) override;
  void forget_exited() override;

 private:
  static constexpr size_t kMaxCachedFds = 512;  // a few per sampled process
  ssize_t read_cached(const std::string& path, char* buf, size_t size);
  std::string root_;
  std::mutex fds_mutex_;
  std::unordered_map<std::string, int> fds_;  // open /proc files by path
};

}  // namespace loadlab::agent
