// The stall probe against a known stop: a process whose every thread is stopped (SIGSTOP) for
// 60 ms has its probe threads wake 60 ms late, once each. The test follows the child's own
// state (/proc/PID/task/TID: its probes asleep in their loop, stopped, asleep again) and never
// waits a fixed time in place of it: a host pause (this VM stops both vCPUs for 6-90 ms a few
// times a minute) delays a step, it cannot reorder two.
#include "loadlab/agent/stall_probe.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace loadlab::agent {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

std::string task_file(pid_t pid, pid_t tid, const char* name) {
  return "/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/" + name;
}

// The threads of `pid` other than its main one.
std::vector<pid_t> other_threads(pid_t pid) {
  std::vector<pid_t> tids;
  std::error_code ec;
  for (auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    const pid_t tid = static_cast<pid_t>(std::stol(task.path().filename().string()));
    if (tid != pid) tids.push_back(tid);
  }
  return tids;
}

// How often the thread gave up its CPU of its own accord (a sleep, a stop); -1 once it is gone.
long long voluntary_switches(pid_t pid, pid_t tid) {
  std::ifstream in(task_file(pid, tid, "status"));
  const std::string key = "voluntary_ctxt_switches:";
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key, 0) == 0) return std::stoll(line.substr(key.size()));
  return -1;
}

// The thread's state letter (S asleep, T stopped, ...); '?' once it is gone.
char state_of(pid_t pid, pid_t tid) {
  std::ifstream in(task_file(pid, tid, "stat"));
  std::string stat;
  std::getline(in, stat);
  const auto paren = stat.rfind(')');  // the name before it may hold anything
  return paren != std::string::npos && paren + 2 < stat.size() ? stat[paren + 2] : '?';
}

// Whether `done` holds within `limit` (generous: a host pause costs at most 90 ms of it).
bool eventually(const std::function<bool()>& done, std::chrono::seconds limit = 10s) {
  const auto deadline = Clock::now() + limit;
  while (!done()) {
    if (Clock::now() > deadline) return done();
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// What the child sends back: its probe stopped, and stopped again.
struct Stops {
  StallProbe::Figures first, again;
};

// A forked child probing `cpus` until the test writes to it, then sending its Stops. Killed
// (stopped or not) when the test ends before.
class ProbingChild {
 public:
  explicit ProbingChild(std::vector<uint32_t> cpus) {
    int go[2], back[2];
    if (pipe(go) != 0) return;
    if (pipe(back) != 0) {
      close(go[0]);
      close(go[1]);
      return;
    }
    pid_ = fork();
    if (pid_ == 0) {
      close(go[1]);
      close(back[0]);
      run(std::move(cpus), go[0], back[1]);
    }
    go_keep_ = go[0];  // kept open: the write that ends the probing never raises SIGPIPE
    close(back[1]);
    go_ = go[1];
    back_ = back[0];
  }
  ~ProbingChild() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    for (int fd : {go_, go_keep_, back_})
      if (fd >= 0) close(fd);
  }
  ProbingChild(const ProbingChild&) = delete;
  ProbingChild& operator=(const ProbingChild&) = delete;

  pid_t pid() const { return pid_; }

  // Ends the probing: true when the child sent its Stops whole and exited 0.
  bool finish(Stops& s) {
    if (pid_ <= 0 || write(go_, "x", 1) != 1) return false;
    const bool whole = read(back_, &s, sizeof s) == static_cast<ssize_t>(sizeof s);
    int status = 0;
    if (waitpid(pid_, &status, 0) != pid_) return false;
    pid_ = -1;
    return whole && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }

 private:
  [[noreturn]] static void run(std::vector<uint32_t> cpus, int go, int back) {
    try {
      StallProbe probe(std::move(cpus));
      char c;
      while (read(go, &c, 1) < 0 && errno == EINTR) {
      }
      const Stops s{probe.stop(), probe.stop()};
      _exit(write(back, &s, sizeof s) == static_cast<ssize_t>(sizeof s) ? 0 : 1);
    } catch (...) {
      _exit(2);
    }
  }

  pid_t pid_ = -1;
  int go_ = -1, go_keep_ = -1, back_ = -1;
};

// The stop as the test saw it. `inner_ms`: from every probe seen stopped to the SIGCONT (they
// were stopped all of it); `outer_ms`: from the SIGSTOP to every probe seen asleep twice after
// the SIGCONT (each had measured its late wake-up by then).
struct Stop {
  size_t probes = 0;
  double inner_ms = 0, outer_ms = 0;
  Stops figures;
};

bool every(const std::vector<pid_t>& tids, const std::function<bool(pid_t)>& holds) {
  return std::all_of(tids.begin(), tids.end(), holds);
}

// Stops `child` for `length` once its `expected` probes sleep in their loop, then ends it.
void stop_once(ProbingChild& child, size_t expected, std::chrono::milliseconds length, Stop& s) {
  const pid_t pid = child.pid();
  ASSERT_GT(pid, 0) << "fork failed";
  std::vector<pid_t> probes;
  // In their loop: past what their start may take (a move to their CPU), asleep again and again.
  const bool looping = eventually([&] {
    probes = other_threads(pid);
    return probes.size() == expected &&
           every(probes, [&](pid_t t) { return voluntary_switches(pid, t) >= 5; });
  });
  ASSERT_TRUE(looping) << probes.size() << " probe threads, " << expected << " expected";
  const auto t0 = Clock::now();
  ASSERT_EQ(kill(pid, SIGSTOP), 0);
  const bool stopped = eventually([&] {
    return every(probes, [&](pid_t t) {
      const char state = state_of(pid, t);
      return state == 'T' || state == 't';
    });
  });
  ASSERT_TRUE(stopped) << "the probes did not stop";
  const auto t1 = Clock::now();
  std::map<pid_t, long long> switches;
  for (pid_t t : probes) switches[t] = voluntary_switches(pid, t);
  std::this_thread::sleep_for(length);  // the stimulus, measured below: no step waits on it
  const auto t2 = Clock::now();
  ASSERT_EQ(kill(pid, SIGCONT), 0);
  const bool asleep = eventually(
      [&] { return every(probes, [&](pid_t t) { return voluntary_switches(pid, t) >= switches[t] + 2; }); });
  ASSERT_TRUE(asleep) << "the probes did not sleep again";
  const auto t3 = Clock::now();
  s.probes = probes.size();
  s.inner_ms = ms_between(t1, t2);
  s.outer_ms = ms_between(t0, t3);
  ASSERT_TRUE(child.finish(s.figures)) << "the child sent no figures";
}

// What a stop of every probe shows, whatever the number of probes.
void expect_the_stop(const Stop& s) {
  const StallProbe::Figures& f = s.figures.first;
  const double kPeriodMs = std::chrono::duration<double, std::milli>(StallProbe::kPeriod).count();
  // Each probe was asleep when stopped and woke after the SIGCONT: late by the stop at least,
  // less at most the sleep it had begun before it.
  EXPECT_GE(f.stalls, s.probes);
  EXPECT_GE(f.longest_ms, s.inner_ms - kPeriodMs - 1) << "stopped " << s.inner_ms << " ms";
  EXPECT_GE(f.total_ms, s.probes * (s.inner_ms - kPeriodMs - 1)) << "stopped " << s.inner_ms << " ms";
  // The late wake-up was measured inside the outer span; 30 ms over it covers a host pause
  // (up to 90 ms) apart from the stop.
  EXPECT_LE(f.longest_ms, s.outer_ms + 30) << "between " << s.outer_ms << " ms";
  // The total is the sum of the stalls: each at least kStallMs, none beyond the longest.
  EXPECT_GE(f.total_ms, f.longest_ms);
  EXPECT_GE(f.total_ms, f.stalls * StallProbe::kStallMs);
  EXPECT_LE(f.total_ms, f.stalls * f.longest_ms + 1e-6);
}

TEST(StallProbe, AProcessStoppedFor60MsShowsAsAStallOfThatLengthOnEachCpu) {
  ProbingChild child({0});
  Stop s;
  ASSERT_NO_FATAL_FAILURE(stop_once(child, 1, 60ms, s));
  expect_the_stop(s);  // one probe (CPU 0)
}

TEST(StallProbe, ProbesEveryOnlineCpuWhenGivenNone) {
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  ASSERT_GT(online, 0);
  const size_t cpus = std::min(static_cast<size_t>(online), StallProbe::kMaxCpus);
  ProbingChild child({});
  Stop s;
  ASSERT_NO_FATAL_FAILURE(stop_once(child, cpus, 60ms, s));  // one probe thread a CPU
  expect_the_stop(s);                                        // and each saw the stop
  // Stopping twice is stopping once.
  EXPECT_EQ(s.figures.again.stalls, s.figures.first.stalls);
  EXPECT_EQ(s.figures.again.longest_ms, s.figures.first.longest_ms);
  EXPECT_EQ(s.figures.again.total_ms, s.figures.first.total_ms);
}

}  // namespace
}  // namespace loadlab::agent
