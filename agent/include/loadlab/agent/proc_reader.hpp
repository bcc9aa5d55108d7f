#pragma once
// Reads process figures from /proc. An interface so the sampler's arithmetic is tested on
// fixtures; ProcFsReader is the real one.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
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
  // Exact CPU of the whole thread group in ns (clock_getcpuclockid), dead threads
  // included; -1 if unavailable. utime/stime above are whole clock ticks (10 ms), too
  // coarse for short windows, so they only split this figure into user and system.
  int64_t cpu_ns = -1;
};

class ProcReader {
 public:
  virtual ~ProcReader() = default;
  virtual std::vector<pid_t> list_pids() = 0;
  // nullopt if the process is gone.
  virtual std::optional<ProcStat> stat(pid_t pid) = 0;
  virtual long ticks_per_second() = 0;
};

class ProcFsReader : public ProcReader {
 public:
  explicit ProcFsReader(std::string root = "/proc") : root_(std::move(root)) {}
  std::vector<pid_t> list_pids() override;
  std::optional<ProcStat> stat(pid_t pid) override;
  long ticks_per_second() override;

 private:
  std::string root_;
};

}  // namespace loadlab::agent
