#include "loadlab/agent/child_process.hpp"

#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "loadlab/agent/job_user.hpp"
#include "loadlab/shared/input_error.hpp"
#include "proc_control_paths.hpp"

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

// Whoever adopted a killed orphan reaps it; give it a moment.
bool gone_soon(pid_t pid) {
  for (int i = 0; i < 200 && alive(pid); ++i) std::this_thread::sleep_for(10ms);
  return !alive(pid);
}

pid_t first_line_pid(ChildProcess& c) {
  std::string line;
  if (c.next_line(line, 5s) != ChildProcess::LineStatus::kLine) return -1;
  return std::stoi(line);
}

class ChildProcessTest : public OnEachPath {};
LOADLAB_ON_EACH_PATH(ChildProcessTest);

TEST_P(ChildProcessTest, ReadsStdoutLinesAndExitStatus) {
  auto c = ChildProcess::spawn({"/bin/sh", "-c", "echo one; echo two; echo err >&2; exit 3"});
  EXPECT_EQ(c->control_mode(), GetParam());
  std::string line;
  ASSERT_EQ(c->next_line(line, 5s), ChildProcess::LineStatus::kLine);
  EXPECT_EQ(line, "one");
  ASSERT_EQ(c->next_line(line, 5s), ChildProcess::LineStatus::kLine);
  EXPECT_EQ(line, "two");
  EXPECT_EQ(c->next_line(line, 5s), ChildProcess::LineStatus::kEof);
  auto st = c->wait_exit(5s);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->code, 3);
  EXPECT_EQ(c->terminate().code, 3);  // the same status once reaped
  EXPECT_NE(c->output_tail().find("err"), std::string::npos);
}

// SpawnOptions.user (loadlab-agent --job-user): the child runs as that user, in its job's
// cgroup (joined as the agent), with HOME and USER its own, and cannot read a file only the
// agent's user can; the agent still stops it.
TEST_P(ChildProcessTest, AJobUserRunsTheChildAsThatUserWhoCannotReadTheAgentsFiles) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run a child as another user (CI is root)";
  char folder[] = "/tmp/loadlab-user-test-XXXXXX";
  ASSERT_NE(mkdtemp(folder), nullptr);
  chmod(folder, 0755);
  const std::string secret = std::string(folder) + "/secret";
  std::ofstream(secret) << "the agent's\n";
  chmod(secret.c_str(), 0600);
  const JobUser user = resolve_job_user("nobody", "--job-user");
  SpawnOptions options;
  options.user = &user;
  auto c = ChildProcess::spawn(
      {"/bin/sh", "-c",
       "id -u; id -g; echo $HOME $USER; cat " + secret + " 2>/dev/null || echo refused; sleep 30"},
      options);
  std::string line;
  for (const std::string& expected :
       {std::to_string(user.uid), std::to_string(user.gid), user.home + " nobody", std::string("refused")}) {
    ASSERT_EQ(c->next_line(line, 5s), ChildProcess::LineStatus::kLine);
    EXPECT_EQ(line, expected);
  }
  // A job cgroup on the cgroup paths (a child that could not have one would run on the
  // process group's), none on the process group's.
  EXPECT_EQ(c->cgroup_path().empty(), !on_cgroup())
      << to_string(GetParam()) << ": cgroup path \"" << c->cgroup_path() << "\"";
  if (!c->cgroup_path().empty()) {
    std::ifstream procs(c->cgroup_path() + "/cgroup.procs");
    std::string text((std::istreambuf_iterator<char>(procs)), {});
    EXPECT_NE(text.find(std::to_string(c->pid())), std::string::npos) << "the child left its job cgroup";
  }
  c->terminate(1s);
  EXPECT_TRUE(gone_soon(c->pid()));
  std::filesystem::remove_all(folder);
}

TEST(JobUser, UnknownUsersRootAndTheAgentsOwnUserAreRefusedNamingTheFlag) {
  try {
    (void)resolve_job_user("no-such-user-of-loadlab", "--job-user");
    ADD_FAILURE() << "an unknown user was taken";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "--job-user: \"no-such-user-of-loadlab\" is not a user of this machine (getent passwd "
                 "no-such-user-of-loadlab)");
  }
  EXPECT_THROW(resolve_job_user("root", "--job-user"), InputError);
  if (geteuid() != 0) {
    const auto own = getpwuid(geteuid());
    ASSERT_NE(own, nullptr);
    EXPECT_THROW(resolve_job_user(own->pw_name, "--job-user"), InputError);
  }
  if (geteuid() == 0) EXPECT_EQ(missing_job_user_capabilities(), std::vector<std::string>{});
}

TEST_P(ChildProcessTest, TerminateStopsTheWholeProcessGroup) {
  // The shell starts a grandchild that ignores SIGTERM; the kill after the grace ends it.
  auto c = ChildProcess::spawn({"/bin/sh", "-c", "trap '' TERM; sleep 30 & echo $!; wait"});
  pid_t grandchild = first_line_pid(*c);
  ASSERT_TRUE(alive(grandchild));
  auto t0 = std::chrono::steady_clock::now();
  auto st = c->terminate(300ms);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
  EXPECT_EQ(st.signal, SIGKILL);
  EXPECT_TRUE(gone_soon(grandchild));
  EXPECT_FALSE(alive(c->pid()));
}

// A descendant that called setsid() is outside the process group but still in the tree:
// killed through a pidfd on the process-group path, through the cgroup on the others.
TEST_P(ChildProcessTest, ADescendantThatLeftTheGroupIsKilledToo) {
  auto c = ChildProcess::spawn({"/bin/sh", "-c", "setsid /bin/sh -c 'echo $$; exec sleep 30' & wait"});
  pid_t escaped = first_line_pid(*c);
  ASSERT_TRUE(alive(escaped));
  ASSERT_EQ(stat_field(escaped, 6), std::to_string(escaped)) << "not in a session of its own";
  c->terminate(300ms);
  EXPECT_TRUE(gone_soon(escaped));
}

// Double-forked away and re-parented to init: out of reach of the tree and the group, but
// not of the job's cgroup.
// A double-forked descendant in a session of its own is re-parented to the job's first process
// (a child subreaper), not out of the job's tree: it is killed with the job on every path.
TEST_P(ChildProcessTest, ADoubleForkedDescendantIsAdoptedByTheJobsFirstProcessAndKilledWithIt) {
  auto c = ChildProcess::spawn(
      {"/bin/sh", "-c", "(setsid /bin/sh -c 'echo $$; exec env -i /bin/sleep 30' &); exec sleep 30"});
  pid_t escaped = first_line_pid(*c);
  ASSERT_TRUE(alive(escaped));
  EXPECT_EQ(stat_field(escaped, 4), std::to_string(c->pid())) << "not adopted by the job's first process";
  c->terminate(300ms);
  EXPECT_TRUE(gone_soon(escaped));
}

// A tool that keeps its privileges (SpawnOptions::keep_privileges, for a test's agent) is no
// subreaper: its orphans go where they went before.
TEST_P(ChildProcessTest, AToolThatKeepsItsPrivilegesAdoptsNoOrphan) {
  SpawnOptions tool;
  tool.keep_privileges = true;
  auto c = ChildProcess::spawn(
      {"/bin/sh", "-c", "(setsid /bin/sh -c 'echo $$; exec sleep 30' &); exec sleep 30"}, tool);
  pid_t escaped = first_line_pid(*c);
  ASSERT_TRUE(alive(escaped));
  EXPECT_NE(stat_field(escaped, 4), std::to_string(c->pid()));
  c->terminate(300ms);
  if (on_cgroup()) EXPECT_TRUE(gone_soon(escaped));
  if (alive(escaped)) kill(escaped, SIGKILL);  // the test's own cleanup, by pid
}

TEST_P(ChildProcessTest, TheJobCgroupIsRemovedAfterTheJob) {
  if (!on_cgroup()) {
    EXPECT_EQ(ChildProcess::spawn({"/bin/true"})->cgroup_path(), "");
    return;
  }
  // The leader exits at once and leaves a descendant behind: the job is not over until the
  // descendant is killed and the cgroup is gone.
  auto c = ChildProcess::spawn({"/bin/sh", "-c", "sleep 30 & echo $!"});
  const std::string dir = c->cgroup_path();
  ASSERT_TRUE(std::filesystem::exists(dir + "/cgroup.procs")) << dir;
  pid_t left = first_line_pid(*c);
  ASSERT_TRUE(c->wait_exit(5s));
  ASSERT_TRUE(alive(left));
  c.reset();
  EXPECT_TRUE(gone_soon(left));
  EXPECT_FALSE(std::filesystem::exists(dir)) << dir;
}

// Forks a process that holds `pid` (and a process group of that number), by setting the
// kernel's last pid just below it; -1 if the pid cannot be had (not root, or another
// process took it first every time).
pid_t occupy_pid(pid_t pid) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    std::ofstream last("/proc/sys/kernel/ns_last_pid");
    if (!(last << pid - 1 << std::flush)) return -1;
    last.close();
    pid_t p = fork();
    if (p == 0) {
      setpgid(0, 0);
      for (;;) pause();
    }
    setpgid(p, p);  // from here too, so the group exists before we go on
    if (p == pid) return p;
    kill(p, SIGKILL);  // our own unreaped child: the pid is still its own
    waitpid(p, nullptr, 0);
  }
  return -1;
}

// The defect the pidfds fix: a child reaped, its pid taken by a stranger in a group of the
// same number, and the old handle asked to stop again. Nothing may reach the stranger.
TEST_P(ChildProcessTest, AReapedChildIsNeverSignalledAgain) {
  auto c = ChildProcess::spawn({"/bin/true"});
  ASSERT_TRUE(c->wait_exit(5s));
  EXPECT_EQ(c->terminate().code, 0);  // reaps it
  pid_t stranger = occupy_pid(c->pid());
  if (stranger < 0) GTEST_SKIP() << "cannot make a process take pid " << c->pid() << " (needs root)";
  c->terminate(100ms);
  EXPECT_FALSE(c->poll_exit()->signal);
  c.reset();
  std::this_thread::sleep_for(50ms);
  int status = 0;
  EXPECT_EQ(waitpid(stranger, &status, WNOHANG), 0)
      << "the stranger was killed by signal " << WTERMSIG(status);
  kill(stranger, SIGKILL);
  waitpid(stranger, nullptr, 0);
}

TEST_P(ChildProcessTest, DestructorLeavesNoProcess) {
  pid_t pid;
  {
    auto c = ChildProcess::spawn({"/bin/sleep", "30"});
    pid = c->pid();
  }
  EXPECT_FALSE(alive(pid));
}

TEST_P(ChildProcessTest, RusageOfAnExitedChildIsReported) {
  auto c = ChildProcess::spawn({"/bin/sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"});
  auto st = c->wait_exit(30s);
  ASSERT_TRUE(st);
  EXPECT_GT(st->user_s + st->system_s, 0.01);
  EXPECT_GT(st->maxrss_kb, 0);
}

TEST(ChildProcess, MissingExecutableIsAClearError) {
  try {
    ChildProcess::spawn({"/nonexistent/loadlab-target"});
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot execute /nonexistent/loadlab-target"), std::string::npos);
  }
}

}  // namespace
}  // namespace loadlab::agent
