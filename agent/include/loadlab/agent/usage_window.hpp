#pragma once
// CPU and memory of a process tree over a window between two marks.
//
// CPU is exact: the difference of the tree's cumulative CPU clocks at start() and
// finish(), not an average of samples; on the cgroup2 path, of the job cgroup's cpu.stat,
// which also keeps the CPU of descendants that left the tree. RSS is sampled: the owner calls sample()
// periodically (any thread; calls are serialised inside), which also records a time series
// for charts. The tree is found afresh at every reading: the root and all its descendants.
#include <pthread.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "loadlab/agent/proc_reader.hpp"
#include "loadlab/agent/stall_probe.hpp"
#include "loadlab/v1/agent.pb.h"

namespace loadlab::agent {

struct TreeReading {
  double user_s = 0;  // cumulative CPU of the tree
  double system_s = 0;
  uint64_t rss_kb = 0;
  uint64_t rss_anon_kb = 0;  // the part of rss_kb that is the processes' own (RssAnon)
  uint32_t processes = 0;
  double cpu_s() const { return user_s + system_s; }
};

// Sums the tree rooted at `root` (nothing if the root is gone); its CPU is the job cgroup's
// when the reader has one for `root` (ProcReader::job_cpu).
[[nodiscard]] TreeReading read_tree(ProcReader& reader, pid_t root);
// The pids of the tree rooted at `root`, root first (empty if the root is gone).
std::vector<pid_t> tree_pids(ProcReader& reader, pid_t root);

struct SeriesPoint {
  double t_s = 0;
  double cpu_pct = 0;
  uint64_t rss_kb = 0;
};

// A mutex with priority inheritance (PTHREAD_PRIO_INHERIT): a thread at real-time priority
// that waits on it (a scheduled window opening at its instant, RealtimeScope) lends its
// priority to the holder (the sampler's thread, at normal priority on a loaded machine,
// which otherwise waits behind every busy thread while it holds the lock).
class PiMutex {
 public:
  PiMutex();
  ~PiMutex();
  PiMutex(const PiMutex&) = delete;
  PiMutex& operator=(const PiMutex&) = delete;
  void lock();
  void unlock();
  bool try_lock();

 private:
  pthread_mutex_t mutex_;
};

class UsageWindow {
 public:
  using Clock = std::function<double()>;  // seconds, monotonic
  UsageWindow(ProcReader& reader, pid_t root, Clock clock);

  // How the job is held to its CPUs (Usage.cpu_binding; "" = not pinned). Before start().
  void set_cpu_binding(std::string binding) { cpu_binding_ = std::move(binding); }
  // What a window needs before it opens and takes time to set up (a few ms on a busy VM: the
  // stall probe's threads), ahead of a start() at a set instant. Optional.
  void prepare();
  void start();   // opens (or re-opens) the window
  void sample();  // RSS (and series) sample if the window is open
  // Closes the window; figures since start(), labelled `label` (machine_cpu_pct -1 when the
  // machine's CPU could not be read). `end` replaces the final reading of the tree, for a
  // root that has exited: its cumulative CPU then comes from wait4()'s rusage.
  v1::Usage finish(const std::string& label, const TreeReading* end = nullptr);
  // Closes the window at the current time but defers the CPU reading to finish_closed().
  void close_at_now();
  v1::Usage finish_closed(const std::string& label, const TreeReading& end);

 private:
  static constexpr size_t kMaxSeries = 100000;
  ProcReader& reader_;
  pid_t root_;
  Clock clock_;
  // Priority inheritance: start() and finish() run at a scheduled instant (RealtimeScope).
  mutable PiMutex mutex_;
  bool open_ = false;
  bool prepared_ = false;  // prepare() ran since the last start()
  void prepare_locked();
  double t0_ = 0;
  double t1_ = -1;  // set by close_at_now()
  TreeReading start_;
  std::optional<MachineCpu> machine_start_;
  std::optional<MachineCpu> machine_end_;  // taken by close_at_now()
  double last_t_ = 0, last_cpu_s_ = 0;
  uint64_t rss_sum_ = 0, rss_peak_ = 0;
  uint64_t anon_sum_ = 0, anon_peak_ = 0;  // of rss_anon_kb
  uint32_t samples_ = 0;
  std::vector<SeriesPoint> series_;
  std::string cpu_binding_;
  std::string cpus_;  // the root's Cpus_allowed_list when the window opened
  // Each thread's run_delay when the window first saw it and when it last did: a thread that
  // exits inside the window keeps what it waited until its last sample.
  void read_delays();
  std::map<pid_t, std::pair<double, double>> delays_;
  bool delays_known_ = false;
  // The job's CPUs stopping (Usage.stalls): probed while the window is open.
  void stop_probe();
  // finish(): the tree's CPU and memory over the window; the waits, stalls and series.
  void add_tree_figures(const TreeReading& end, double window_s, v1::Usage& f);
  void add_wait_stalls_series(double window_s, v1::Usage& f);
  std::unique_ptr<StallProbe> probe_;
  std::optional<StallProbe::Figures> stalls_;
};

// The monotonic clock in seconds.
double monotonic_seconds();
// The same clock (CLOCK_MONOTONIC, which steady_clock reads) in ns; and a sleep until an
// instant of it.
int64_t monotonic_ns();
void sleep_until_monotonic_ns(int64_t at_ns);

// For a scheduled window's instant: the calling thread runs at real-time priority (SCHED_FIFO
// at `priority`, stall_probe.hpp's) while this lives, so that it wakes at the instant instead
// of behind every busy thread of a loaded machine (a target agent's thread woke 80-300 ms late
// beside 50 load workers on 2 cores). Where the agent may not, nothing changes.
class RealtimeScope {
 public:
  explicit RealtimeScope(int priority);
  ~RealtimeScope();
  RealtimeScope(const RealtimeScope&) = delete;
  RealtimeScope& operator=(const RealtimeScope&) = delete;

 private:
  int policy_ = 0;
  int priority_ = 0;
  bool raised_ = false;
};

}  // namespace loadlab::agent
