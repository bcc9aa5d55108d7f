#include "loadlab/agent/usage_window.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <sstream>
#include <string>
#include <thread>

#include "loadlab/agent/child_process.hpp"
#include "proc_control_paths.hpp"
#include "schedstat.hpp"

namespace loadlab::agent {
namespace {

using loadlab::testing::schedstat_s;

// A busy loop's CPU as the window measures it is what the scheduler gave it: a whole core
// on an idle machine, less on a busy one, and the same figure either way.
TEST(UsageWindow, ABusyLoopMeasuresWhatTheSchedulerGaveIt) {
  auto child = ChildProcess::spawn({"/bin/sh", "-c", "while :; do :; done"});
  ProcFsReader proc;
  UsageWindow w(proc, child->pid(), monotonic_seconds);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const double t0 = monotonic_seconds(), run0 = schedstat_s(child->pid());
  w.start();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  auto f = w.finish("t");
  const double run1 = schedstat_s(child->pid()), t1 = monotonic_seconds();
  child->terminate();
  const double truth_pct = (run1 - run0) / (t1 - t0) * 100;
  EXPECT_GT(truth_pct, 10.0);  // it ran (19 % of a core when both cores were busy)
  EXPECT_NEAR(f.cpu_pct(), truth_pct, 6.0);
  EXPECT_LE(f.cpu_pct(), 100.0 + 6.0);  // one thread: at most one core
  EXPECT_GT(f.rss_kb_peak(), 100u);
}

class UsageWindowOnEachPath : public OnEachPath {};
LOADLAB_ON_EACH_PATH(UsageWindowOnEachPath);
class UsageWindowOnCgroup2 : public OnEachPath {};
LOADLAB_ON_CGROUP2(UsageWindowOnCgroup2);

// A descendant that double-forks away, burns, prints its own CPU (ticks, from its
// /proc/PID/stat) and exits (re-parented to the job's first process, which does not reap it).
// The job's cgroup keeps its CPU; the tree's sum of living processes does not, so only the
// cgroup2 path is held to the truth.
TEST_P(UsageWindowOnCgroup2, ADescendantThatExitedInsideTheWindowIsCounted) {
  const char* script =
      "sleep 0.2; (setsid /bin/sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done;"
      " read -r _ _ _ _ _ _ _ _ _ _ _ _ _ ut st _ < /proc/$$/stat; echo $$ $ut $st' &); exec sleep 30";
  auto child = ChildProcess::spawn({"/bin/sh", "-c", script});
  ProcFsReader proc;
  UsageWindow w(proc, child->pid(), monotonic_seconds);
  w.start();
  std::string line;
  ASSERT_EQ(child->next_line(line, std::chrono::seconds(30)), ChildProcess::LineStatus::kLine);
  pid_t burner = 0;
  long ut = 0, st = 0;
  std::istringstream(line) >> burner >> ut >> st;
  ASSERT_GT(burner, 0) << line;
  // Until it has exited: a zombie (field 3, its state, is Z) or gone.
  for (std::string state; (state = stat_field(burner, 3)) != "" && state != "Z";)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  auto f = w.finish("t");
  const double truth_s = static_cast<double>(ut + st) / static_cast<double>(sysconf(_SC_CLK_TCK));
  ASSERT_GT(truth_s, 0.1);
  const double measured_s = f.cpu_pct() / 100.0 * f.window_s();
  EXPECT_GE(measured_s, truth_s - 0.02);  // ticks are whole: the truth is up to one short
  EXPECT_LE(measured_s, truth_s + 0.15);  // plus the shells' own start-up
}

// An idle process is ~0 % on every path, however short the window: exact clocks, not 10 ms ticks.
TEST_P(UsageWindowOnEachPath, AnIdleProcessMeasuresNearZero) {
  auto child = ChildProcess::spawn({"/bin/sleep", "5"});
  ProcFsReader proc;
  UsageWindow w(proc, child->pid(), monotonic_seconds);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  w.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto f = w.finish("t");
  child->terminate();
  EXPECT_LT(f.cpu_pct(), 1.0);
  EXPECT_GT(f.rss_kb_peak(), 0u);
}

}  // namespace
}  // namespace loadlab::agent
