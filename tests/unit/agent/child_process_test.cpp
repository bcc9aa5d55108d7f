#include "loadlab/agent/child_process.hpp"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

namespace loadlab::agent {
namespace {

using namespace std::chrono_literals;

// Running (a zombie has finished: whoever adopted it may reap it late).
bool alive(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return false;
  auto rparen = line.rfind(')');
  return rparen != std::string::npos && rparen + 2 < line.size() && line[rparen + 2] != 'Z';
}

TEST(ChildProcess, ReadsStdoutLinesAndExitStatus) {
  auto c = ChildProcess::spawn({"/bin/sh", "-c", "echo one; echo two; echo err >&2; exit 3"});
  std::string line;
  ASSERT_EQ(c->next_line(line, 5s), ChildProcess::LineStatus::kLine);
  EXPECT_EQ(line, "one");
  ASSERT_EQ(c->next_line(line, 5s), ChildProcess::LineStatus::kLine);
  EXPECT_EQ(line, "two");
  EXPECT_EQ(c->next_line(line, 5s), ChildProcess::LineStatus::kEof);
  auto st = c->wait_exit(5s);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->code, 3);
  EXPECT_NE(c->output_tail().find("err"), std::string::npos);
}

TEST(ChildProcess, TerminateStopsTheWholeProcessGroup) {
  // The shell starts a grandchild that ignores SIGTERM; the group kill still ends it.
  auto c = ChildProcess::spawn({"/bin/sh", "-c", "trap '' TERM; sleep 30 & echo $!; wait"});
  std::string line;
  ASSERT_EQ(c->next_line(line, 5s), ChildProcess::LineStatus::kLine);
  pid_t grandchild = std::stoi(line);
  ASSERT_TRUE(alive(grandchild));
  auto t0 = std::chrono::steady_clock::now();
  auto st = c->terminate(300ms);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
  EXPECT_EQ(st.signal, SIGKILL);
  // The grandchild was re-parented and is reaped by init; give it a moment.
  for (int i = 0; i < 100 && alive(grandchild); ++i) std::this_thread::sleep_for(10ms);
  EXPECT_FALSE(alive(grandchild));
  EXPECT_FALSE(alive(c->pid()));
}

TEST(ChildProcess, MissingExecutableIsAClearError) {
  try {
    ChildProcess::spawn({"/nonexistent/loadlab-target"});
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot execute /nonexistent/loadlab-target"), std::string::npos);
  }
}

TEST(ChildProcess, DestructorLeavesNoProcess) {
  pid_t pid;
  {
    auto c = ChildProcess::spawn({"/bin/sleep", "30"});
    pid = c->pid();
  }
  EXPECT_FALSE(alive(pid));
}

TEST(ChildProcess, RusageOfAnExitedChildIsReported) {
  auto c = ChildProcess::spawn({"/bin/sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"});
  auto st = c->wait_exit(30s);
  ASSERT_TRUE(st);
  EXPECT_GT(st->user_s + st->system_s, 0.01);
  EXPECT_GT(st->maxrss_kb, 0);
}

}  // namespace
}  // namespace loadlab::agent
