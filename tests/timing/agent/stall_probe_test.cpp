// The stall probe against a known stop: a process whose every thread is stopped (SIGSTOP) for
// 60 ms has its probe threads wake 60 ms late, once each.
#include "loadlab/agent/stall_probe.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace loadlab::agent {
namespace {

using namespace std::chrono_literals;

TEST(StallProbe, AProcessStoppedFor60MsShowsAsAStallOfThatLengthOnEachCpu) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(fds[0]);
    StallProbe probe({0});
    std::this_thread::sleep_for(400ms);
    StallProbe::Figures f = probe.stop();
    const bool whole = write(fds[1], &f, sizeof f) == static_cast<ssize_t>(sizeof f);
    _exit(whole ? 0 : 1);
  }
  close(fds[1]);
  std::this_thread::sleep_for(150ms);
  ASSERT_EQ(kill(child, SIGSTOP), 0);
  const auto stopped = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(60ms);
  ASSERT_EQ(kill(child, SIGCONT), 0);
  const double stopped_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - stopped).count();
  StallProbe::Figures f;
  ASSERT_EQ(read(fds[0], &f, sizeof f), static_cast<ssize_t>(sizeof f));
  close(fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  // One probe (CPU 0): one stall, as long as the stop less at most a sleep (the probe may have
  // gone to sleep up to 5 ms before it), plus this process's own wake-up after it.
  EXPECT_GE(f.stalls, 1u);
  EXPECT_GE(f.longest_ms, stopped_ms - 5 - 1) << "stopped " << stopped_ms << " ms";
  EXPECT_LE(f.longest_ms, stopped_ms + 30) << "stopped " << stopped_ms << " ms";
  EXPECT_GE(f.total_ms, f.longest_ms);
}

TEST(StallProbe, ProbesEveryOnlineCpuWhenGivenNone) {
  StallProbe probe({});
  std::this_thread::sleep_for(20ms);
  auto f = probe.stop();
  EXPECT_GE(f.total_ms, 0);
  auto again = probe.stop();  // stopping twice is stopping once
  EXPECT_EQ(again.stalls, f.stalls);
}

}  // namespace
}  // namespace loadlab::agent
