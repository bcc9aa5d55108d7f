// The usage window's figures from readings a test sets (a fake /proc): the tree's CPU and
// RSS, the job cgroup's CPU, each CPU's busy share and steal, the run queue's wait.
#include <gtest/gtest.h>
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "loadlab/agent/proc_reader.hpp"
#include "loadlab/agent/usage_window.hpp"

namespace loadlab::agent {
namespace {

// /proc as a fixture: the test sets each process's figures.
class FakeProc : public ProcReader {
 public:
  std::map<pid_t, ProcStat> procs;
  std::vector<pid_t> list_pids() override {
    std::vector<pid_t> v;
    for (auto& [p, s] : procs) v.push_back(p);
    return v;
  }
  std::optional<ProcStat> stat(pid_t pid) override {
    auto it = procs.find(pid);
    if (it == procs.end()) return std::nullopt;
    return it->second;
  }
  long ticks_per_second() override { return 100; }
  std::optional<JobCpu> job;  // the job cgroup's CPU, if the test gives one
  std::optional<JobCpu> job_cpu(pid_t) override { return job; }
  std::optional<MachineCpu> machine;  // /proc/stat, if the test gives it
  std::optional<MachineCpu> machine_cpu() override { return machine; }
  std::string allowed;  // the root's Cpus_allowed_list
  std::optional<std::string> cpus_allowed(pid_t) override {
    return allowed.empty() ? std::nullopt : std::optional<std::string>(allowed);
  }
  std::map<pid_t, std::vector<std::pair<pid_t, double>>> delays;  // by process: (thread, run_delay s)
  std::vector<std::pair<pid_t, double>> run_delays_s(pid_t pid) override {
    auto it = delays.find(pid);
    return it == delays.end() ? std::vector<std::pair<pid_t, double>>{} : it->second;
  }
  void set(pid_t pid, pid_t ppid, int64_t cpu_ms, uint64_t rss_kb, uint64_t reaped_ticks = 0) {
    ProcStat s;
    s.pid = pid;
    s.ppid = ppid;
    s.utime = static_cast<uint64_t>(cpu_ms / 10);
    s.cutime = reaped_ticks;
    s.cpu_ns = cpu_ms * 1'000'000;
    s.rss_kb = rss_kb;
    procs[pid] = s;
  }
};

TEST(UsageWindow, SumsTheWholeTreeAndIgnoresOtherProcesses) {
  FakeProc proc;
  double now = 0;
  proc.set(100, 1, 1000, 1000);
  proc.set(101, 100, 500, 2000);  // child
  proc.set(102, 101, 500, 3000);  // grandchild
  proc.set(200, 1, 9999, 99999);  // not ours
  UsageWindow w(proc, 100, [&] { return now; });
  w.start();
  now = 2.0;
  proc.set(100, 1, 1000 + 1000, 1000);
  proc.set(101, 100, 500 + 500, 2000);
  proc.set(102, 101, 500 + 300, 3000);
  proc.set(200, 1, 99999, 99999);
  auto f = w.finish("t");
  EXPECT_DOUBLE_EQ(f.window_s(), 2.0);
  // 1.8 s of CPU in 2 s = 90 % of one core.
  EXPECT_NEAR(f.cpu_pct(), 90.0, 1e-9);
  EXPECT_EQ(f.rss_kb_peak(), 6000u);
  EXPECT_EQ(f.processes(), 3u);
}

// /proc/stat's per-CPU lines over the window: each CPU's busy share, and the steal of the CPUs
// the job was allowed on, in cores.
TEST(UsageWindow, PerCpuBusyAndTheStealOfTheJobsCpus) {
  FakeProc proc;
  double now = 0;
  proc.set(100, 1, 0, 1000);
  proc.allowed = "1";
  auto machine = [](std::vector<CpuTimes> cpus) {
    MachineCpu m;
    for (auto& c : cpus) {
      m.busy += c.busy;
      m.total += c.total;
      m.steal += c.steal;
    }
    m.cores = static_cast<uint32_t>(cpus.size());
    m.per_cpu = cpus;
    return m;
  };
  proc.machine = machine({{0, 1000, 2000, 0}, {1, 500, 2000, 100}});
  UsageWindow w(proc, 100, [&] { return now; });
  w.set_cpu_binding("cpuset-v1");
  w.start();
  now = 1;
  // CPU 0: 25 of 100 ticks busy; CPU 1: 80 of 100 busy, 20 of them stolen.
  proc.machine = machine({{0, 1025, 2100, 0}, {1, 580, 2100, 120}});
  auto f = w.finish("t");
  ASSERT_EQ(f.cpu_busy_size(), 2);
  EXPECT_EQ(f.cpu_busy(0).cpu(), 0u);
  EXPECT_NEAR(f.cpu_busy(0).busy_pct(), 25, 1e-9);
  EXPECT_NEAR(f.cpu_busy(1).busy_pct(), 80, 1e-9);
  EXPECT_NEAR(f.steal_pct(), 20, 1e-9) << "CPU 1's steal only: 20 % of one core";
  EXPECT_EQ(f.cpus(), "1");
  EXPECT_EQ(f.cpu_binding(), "cpuset-v1");
  // Not pinned: the whole machine's steal, still in cores.
  proc.allowed = "0-1";
  proc.machine = machine({{0, 1000, 2000, 50}, {1, 500, 2000, 100}});
  now = 0;
  w.start();
  now = 1;
  proc.machine = machine({{0, 1025, 2100, 60}, {1, 580, 2100, 120}});
  EXPECT_NEAR(w.finish("t").steal_pct(), 30, 1e-9);
}

// The run queue: how long the tree's threads waited for a CPU, also a thread that ended inside
// the window (a load worker's threads end before it prints its result).
TEST(UsageWindow, WaitCountsEveryThreadOfTheTreeAlsoThoseThatEnded) {
  FakeProc proc;
  double now = 0;
  proc.set(100, 1, 0, 1000);
  proc.set(101, 100, 0, 1000);
  proc.delays[100] = {{100, 1.0}, {110, 2.0}};
  proc.delays[101] = {{101, 5.0}};
  UsageWindow w(proc, 100, [&] { return now; });
  EXPECT_FALSE(w.finish("t").has_wait_pct());
  w.start();
  now = 1;
  proc.delays[100] = {{100, 1.1}, {110, 2.5}};  // thread 110 waited 0.5 s so far
  proc.delays[101] = {{101, 5.2}, {120, 0.3}};  // a thread born inside the window: from now on
  w.sample();
  now = 2;
  proc.delays[100] = {{100, 1.2}};  // 110 ended
  proc.delays[101] = {{101, 5.4}, {120, 0.6}};
  auto f = w.finish("t");
  ASSERT_TRUE(f.has_wait_pct());
  // 0.2 (100) + 0.5 (110, until its last sample) + 0.4 (101) + 0.3 (120) = 1.4 s in 2 s.
  EXPECT_NEAR(f.wait_pct(), 70, 1e-9);
  // A reader that cannot say leaves it unset, not 0.
  proc.delays.clear();
  w.start();
  now = 3;
  EXPECT_FALSE(w.finish("t").has_wait_pct());
}

TEST(UsageWindow, ADescendantReapedInsideTheTreeKeepsItsCpu) {
  FakeProc proc;
  double now = 0;
  proc.set(100, 1, 0, 1000);
  proc.set(101, 100, 300, 1000);
  UsageWindow w(proc, 100, [&] { return now; });
  w.start();
  now = 1.0;
  // The child burned 200 ms more, exited and was reaped: its 500 ms move to cutime.
  proc.procs.erase(101);
  proc.set(100, 1, 0, 1000, /*reaped_ticks=*/50);
  auto f = w.finish("t");
  EXPECT_NEAR(f.cpu_pct(), 20.0, 1e-9);
}

TEST(UsageWindow, TheTotalIsExactWhenTheTickRatioMovesBetweenReadings) {
  FakeProc proc;
  double now = 0;
  proc.set(100, 1, 5, 1000);  // 5 ms, no tick yet: all counted as user
  proc.procs[100].utime = 0;
  UsageWindow w(proc, 100, [&] { return now; });
  w.start();
  now = 1.0;
  proc.procs[100].cpu_ns = 15'000'000;  // 10 ms more, and the first tick went to system
  proc.procs[100].stime = 1;
  auto f = w.finish("t");
  EXPECT_NEAR(f.cpu_pct(), 1.0, 1e-9);  // 10 ms in 1 s, not 15 ms
  // The only tick that moved is a system tick: the user delta dips below 0 and clamps to 0,
  // so the whole exact total is system time.
  EXPECT_DOUBLE_EQ(f.cpu_user_pct(), 0.0);
  EXPECT_NEAR(f.cpu_system_pct(), 1.0, 1e-9);
}

TEST(UsageWindow, TheJobCgroupsCpuReplacesTheTreeSum) {
  FakeProc proc;
  double now = 0;
  proc.set(100, 1, 1000, 1000);
  proc.job = JobCpu{1.0, 0.5};
  UsageWindow w(proc, 100, [&] { return now; });
  w.start();
  now = 1.0;
  // The tree lost a descendant (its 300 ms are gone from the sum); the cgroup kept them.
  proc.set(100, 1, 1100, 1000);
  proc.job = JobCpu{1.3, 0.6};
  auto f = w.finish("t");
  EXPECT_NEAR(f.cpu_pct(), 40.0, 1e-9);
  EXPECT_NEAR(f.cpu_user_pct(), 30.0, 1e-9);
  EXPECT_EQ(f.processes(), 1u);
  EXPECT_EQ(f.rss_kb_peak(), 1000u);  // RSS still from the tree
}

TEST(UsageWindow, RssMeanAndPeakComeFromTheSamples) {
  FakeProc proc;
  double now = 0;
  proc.set(100, 1, 0, 1000);
  UsageWindow w(proc, 100, [&] { return now; });
  w.start();  // sample 1000
  proc.set(100, 1, 0, 3000);
  w.sample();
  proc.set(100, 1, 0, 2000);
  now = 1;
  auto f = w.finish("t");  // sample 2000
  EXPECT_EQ(f.rss_kb_mean(), 2000u);
  EXPECT_EQ(f.rss_kb_peak(), 3000u);
  EXPECT_EQ(f.samples(), 3u);
}

TEST(UsageWindow, AnExitedRootIsMeasuredFromItsRusage) {
  FakeProc proc;
  double now = 0;
  proc.set(100, 1, 400, 1000);
  UsageWindow w(proc, 100, [&] { return now; });
  w.start();
  now = 0.5;
  w.close_at_now();
  now = 3.0;  // time after close does not count
  proc.procs.clear();
  TreeReading end;
  end.user_s = 0.65;
  auto f = w.finish_closed("t", end);
  EXPECT_DOUBLE_EQ(f.window_s(), 0.5);
  EXPECT_NEAR(f.cpu_pct(), 50.0, 1e-9);
}

}  // namespace
}  // namespace loadlab::agent
