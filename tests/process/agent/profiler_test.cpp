// The profiler against a process of known split: loadlab-split-burn spends its CPU time in
// burn_hot and burn_cold in a proportion it is given (the same loop, called in that ratio).
#include "loadlab/agent/profiler.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>

#include "job_profile.hpp"
#include "loadlab/agent/child_process.hpp"
#include "loadlab/shared/environment_error.hpp"

namespace loadlab::agent {
namespace profiler_test {

using namespace std::chrono_literals;

struct Split {
  uint64_t hot = 0, cold = 0, reaching_main = 0, all = 0;
};

// The samples of stacks through each function, and of those the ones whose frame-pointer
// stack reached main under the process's name (the kernel's 15 characters of it).
Split split_of(const FoldedStacks& stacks) {
  Split s;
  for (const auto& [stack, count] : stacks) {
    s.all += count;
    const bool hot = stack.find(";burn_hot") != std::string::npos;
    const bool cold = stack.find(";burn_cold") != std::string::npos;
    if (hot) s.hot += count;
    if (cold) s.cold += count;
    if ((hot || cold) && stack.rfind("loadlab-split-b;", 0) == 0 && stack.find(";main;") != std::string::npos)
      s.reaching_main += count;
  }
  return s;
}

// A process's CPU time (user and system, all its threads), from /proc.
double cpu_seconds(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(f)), {});
  std::istringstream rest(text.substr(text.rfind(')') + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {  // fields 3.. after the name
    if (i == 14) utime = std::stod(field);
    if (i == 15) stime = std::stod(field);
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

class ProfilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto support = profiling_support();
    if (!support.available) GTEST_SKIP() << "no profiling on this machine: " << support.reason;
    dir_ = std::filesystem::temp_directory_path() / ("loadlab-profiler-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // loadlab-split-burn at `hot_pct`, profiled over a window in which it used 1.5 s of CPU
  // (however busy the machine, within 30 s); `cpu_s` gets what it used.
  FoldedStacks profile_split(int hot_pct, double& cpu_s) {
    auto burner = ChildProcess::spawn(
        {std::string(LOADLAB_BIN_DIR) + "/loadlab-split-burn", std::to_string(hot_pct), "60"});
    std::string line;
    EXPECT_EQ(burner->next_line(line, 10s), ChildProcess::LineStatus::kLine);
    EXPECT_EQ(line, "burning");
    ProfileRequest request;
    request.pids = {burner->pid()};
    auto window = WindowProfile::start(request, dir_);
    const double start = cpu_seconds(burner->pid());
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (cpu_seconds(burner->pid()) - start < 1.5 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(20ms);
    cpu_s = cpu_seconds(burner->pid()) - start;
    auto stacks = window->stop();
    burner->terminate(1s);
    window.reset();
    EXPECT_TRUE(std::filesystem::is_empty(dir_)) << "perf's files are removed";
    return stacks;
  }

  std::filesystem::path dir_;
};

// 70/30 and 50/50 within 5 points of the samples that fall in either function, from stacks
// that reach main through the frame pointers the burner keeps; about 999 samples a second of
// its CPU (fewer by perf's start, which the window includes).
TEST_F(ProfilerTest, TheSamplesSplitAsTheTwoFunctionsSplitTheirTime) {
  for (int hot_pct : {70, 50}) {
    double cpu_s = 0;
    const Split s = split_of(profile_split(hot_pct, cpu_s));
    ASSERT_GE(cpu_s, 1.5) << "the burner did not run for 30 s";
    EXPECT_GT(static_cast<double>(s.all), 0.5 * 999 * cpu_s);
    EXPECT_LT(static_cast<double>(s.all), 1.2 * 999 * cpu_s);
    const double share = 100.0 * static_cast<double>(s.hot) / static_cast<double>(s.hot + s.cold);
    std::cout << "[ measured ] asked " << hot_pct << " %: burn_hot " << share << " % of " << s.hot + s.cold
              << " samples over " << cpu_s << " s of its CPU; " << s.reaching_main << " stacks reach main\n";
    EXPECT_NEAR(share, hot_pct, 5) << s.hot << " hot, " << s.cold << " cold samples";
    EXPECT_GT(s.reaching_main, (s.hot + s.cold) * 9 / 10) << "frame pointers unwind to main";
  }
}

// A profile of a fixed time: the burner's samples, and its files removed.
TEST_F(ProfilerTest, AProfileOfAFixedTimeSamplesThatTime) {
  auto burner = ChildProcess::spawn({std::string(LOADLAB_BIN_DIR) + "/loadlab-split-burn", "70", "30"});
  std::string line;
  ASSERT_EQ(burner->next_line(line, 10s), ChildProcess::LineStatus::kLine);
  ProfileRequest request;
  request.pids = {burner->pid()};
  request.duration = 500ms;
  const Split s = split_of(profile_processes(request, dir_));
  burner->terminate(1s);
  EXPECT_GT(s.hot + s.cold, 0u);
  EXPECT_LT(s.all, 1000u) << "half a second at 999 Hz";
  EXPECT_TRUE(std::filesystem::is_empty(dir_));
  // A window never stopped leaves nothing behind either.
  auto again = ChildProcess::spawn({std::string(LOADLAB_BIN_DIR) + "/loadlab-split-burn", "70", "30"});
  ASSERT_EQ(again->next_line(line, 10s), ChildProcess::LineStatus::kLine);
  request.pids = {again->pid()};
  WindowProfile::start(request, dir_).reset();
  again->terminate(1s);
  EXPECT_TRUE(std::filesystem::is_empty(dir_));
}

// call_graph "auto" on a job: the burner keeps frame pointers, and the probe's stacks reach
// main, so fp; its twin built without them (its stacks stop at the busy function) gets dwarf,
// whose stacks then reach the thread's start. Each says so.
TEST_F(ProfilerTest, AutoUnwindsByFramePointersWhereTheyHoldAndOtherwiseByDwarf) {
  const auto found = profiling_support();
  v1::ProfilingSupport support;
  support.set_available(found.available);
  support.set_kernel(found.kernel);
  v1::ProfileSpec spec;
  spec.set_frequency_hz(999);
  spec.set_call_graph("auto");
  auto profile_of = [&](const std::vector<std::string>& argv) {
    auto process = ChildProcess::spawn(argv);
    std::string line;
    EXPECT_EQ(process->next_line(line, 10s), ChildProcess::LineStatus::kLine);
    JobProfile job(spec, support, "perf");
    job.start({process->pid()});
    const double start = cpu_seconds(process->pid());
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (cpu_seconds(process->pid()) - start < 1.5 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(20ms);
    job.end_window();
    auto p = job.finish();
    process->terminate(1s);
    return p.value_or(v1::CpuProfile());
  };
  const auto fp = profile_of({std::string(LOADLAB_BIN_DIR) + "/loadlab-split-burn", "70", "60"});
  EXPECT_EQ(fp.unavailable(), "");
  EXPECT_EQ(fp.call_graph(), "fp");
  EXPECT_EQ(fp.call_graph_probe().rfind("fp: ", 0), 0u) << fp.call_graph_probe();
  EXPECT_GE(fp.rooted_pct(), 90);
  const auto dwarf = profile_of({std::string(LOADLAB_BIN_DIR) + "/loadlab-split-burn-nofp", "70", "60"});
  EXPECT_EQ(dwarf.unavailable(), "");
  EXPECT_EQ(dwarf.call_graph(), "dwarf");
  EXPECT_EQ(dwarf.call_graph_probe().rfind("dwarf: only ", 0), 0u) << dwarf.call_graph_probe();
  EXPECT_GE(dwarf.rooted_pct(), 90) << dwarf.folded().substr(0, 2000);
  std::cout << "[ measured ] " << fp.call_graph_probe() << "; then " << fp.rooted_pct() << " % whole\n"
            << "[ measured ] " << dwarf.call_graph_probe() << "; then " << dwarf.rooted_pct() << " % whole\n";
}

// A cancelled job's call: perf is stopped at once rather than waited for up to its limits, and
// says so; its files go with it.
TEST_F(ProfilerTest, ACancelledCallStopsPerfAtOnce) {
  auto burner = ChildProcess::spawn({std::string(LOADLAB_BIN_DIR) + "/loadlab-split-burn", "70", "30"});
  std::string line;
  ASSERT_EQ(burner->next_line(line, 10s), ChildProcess::LineStatus::kLine);
  ProfileRequest request;
  request.pids = {burner->pid()};
  bool cancelled = false;
  request.cancelled = [&] { return cancelled; };
  auto window = WindowProfile::start(request, dir_);
  std::this_thread::sleep_for(300ms);
  cancelled = true;
  const auto start = std::chrono::steady_clock::now();
  try {
    window->stop();
    ADD_FAILURE() << "a cancelled profile was folded";
  } catch (const EnvironmentError& e) {
    EXPECT_EQ(std::string(e.what()), "perf record stopped: the job's call was cancelled");
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  window.reset();
  burner->terminate(1s);
  EXPECT_TRUE(std::filesystem::is_empty(dir_));
}

// A JIT's code, made at run time, is named from the /tmp/perf-PID.map the process writes
// (whoever owns it); without one its frames have no name.
TEST_F(ProfilerTest, AJitsFramesAreNamedFromItsPerfMap) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "the fake JIT's loop is x86-64 machine code";
#endif
  for (const bool map : {true, false}) {
    SCOPED_TRACE(map ? "with a perf map" : "without");
    auto jit =
        ChildProcess::spawn({std::string(LOADLAB_BIN_DIR) + "/loadlab-fake-jit", map ? "map" : "nomap"});
    std::string line;
    ASSERT_EQ(jit->next_line(line, 10s), ChildProcess::LineStatus::kLine);
    const std::string map_file = "/tmp/perf-" + std::to_string(jit->pid()) + ".map";
    EXPECT_EQ(std::filesystem::exists(map_file), map);
    ProfileRequest request;
    request.pids = {jit->pid()};
    request.duration = 500ms;
    const auto stacks = profile_processes(request, dir_);
    jit->terminate(1s);
    uint64_t all = 0, named = 0;
    for (const auto& [stack, count] : stacks) {
      all += count;
      if (stack.find(";jit_burn") != std::string::npos) named += count;
    }
    EXPECT_GT(all, 100u);
    if (map)
      EXPECT_GT(named, all * 9 / 10) << folded_text(stacks).substr(0, 1000);
    else
      EXPECT_EQ(named, 0u);
    EXPECT_FALSE(std::filesystem::exists(map_file)) << "the JIT removes its map as it ends";
  }
}

TEST_F(ProfilerTest, WhatCannotBeProfiledSaysWhy) {
  const auto missing = profiling_support("/nonexistent/perf");
  EXPECT_FALSE(missing.available);
  EXPECT_EQ(missing.reason, "/nonexistent/perf is not installed (Debian's linux-perf)");
  ProfileRequest gone;
  gone.pids = {999999999};  // above any pid_max
  gone.duration = 200ms;
  try {
    profile_processes(gone, dir_);
    ADD_FAILURE() << "a pid that does not exist was profiled";
  } catch (const EnvironmentError& e) {
    EXPECT_EQ(std::string(e.what()), "perf record: none of the processes to profile is running");
  }
}

}  // namespace profiler_test
}  // namespace loadlab::agent
