#include "loadlab/agent/job_cgroup.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "proc_control_paths.hpp"

namespace loadlab::agent {
namespace {

using namespace std::chrono_literals;

// Forks a process that joins the cgroup whose cgroup.procs is open as `procs_fd`, then runs
// a shell with two children.
pid_t start_in(int procs_fd) {
  pid_t p = fork();
  if (p == 0) {
    if (write(procs_fd, "0", 1) != 1) _exit(1);
    execl("/bin/sh", "sh", "-c", "sleep 30 & sleep 30 & wait", static_cast<char*>(nullptr));
    _exit(2);
  }
  return p;
}

class JobCgroupTest : public OnEachPath {
 protected:
  // A job holding a shell and its two children, and a cgroup nested in it (as an agent run
  // inside the job makes) holding the same: kill_all() ends all six, remove() both folders.
  void kill_and_remove(const ProcControl& control) {
    auto job = JobCgroup::create(control);
    ASSERT_TRUE(job);
    const std::string nested = job->path() + "/loadlab";
    ASSERT_EQ(mkdir(nested.c_str(), 0755), 0) << nested;
    int nested_fd = open((nested + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
    pid_t a = start_in(job->procs_fd()), b = start_in(nested_fd);
    close(nested_fd);
    for (int i = 0; i < 500 && job->pids().size() < 6; ++i) std::this_thread::sleep_for(10ms);
    ASSERT_EQ(job->pids().size(), 6u);
    job->kill_all();
    for (pid_t p : {a, b}) {
      int status = 0;
      ASSERT_EQ(waitpid(p, &status, 0), p);
      EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    }
    EXPECT_TRUE(job->wait_empty(5s));
    EXPECT_TRUE(job->remove());
    EXPECT_FALSE(std::filesystem::exists(job->path()));
  }
};
LOADLAB_ON_EACH_PATH(JobCgroupTest);

class JobCgroupTestOnCgroups : public JobCgroupTest {};
LOADLAB_ON_CGROUP_PATHS(JobCgroupTestOnCgroups);
class JobCgroupTestV2 : public JobCgroupTest {};
LOADLAB_ON_CGROUP2(JobCgroupTestV2);

// An agent killed with SIGKILL leaves its (empty) job folders; the next agent removes them,
// and only those of agents that are gone.
TEST_P(JobCgroupTestOnCgroups, JobFoldersOfAgentsThatAreGoneAreSwept) {
  const auto control = proc_control();
  pid_t dead = fork();
  if (dead == 0) _exit(0);
  ASSERT_EQ(waitpid(dead, nullptr, 0), dead);
  const std::string stale = control.jobs_dir + "/job-" + std::to_string(dead) + "-7";
  const std::string alive = control.jobs_dir + "/job-" + std::to_string(getpid()) + "-999999";
  ASSERT_EQ(mkdir(stale.c_str(), 0755), 0) << stale;
  ASSERT_EQ(mkdir(alive.c_str(), 0755), 0) << alive;
  EXPECT_GE(sweep_stale_jobs(control.jobs_dir), 1u);
  EXPECT_FALSE(std::filesystem::exists(stale));
  EXPECT_TRUE(std::filesystem::exists(alive));
  rmdir(alive.c_str());
}

TEST_P(JobCgroupTest, KillAllEndsTheJobAndRemoveLeavesNothing) {
  if (!on_cgroup()) {
    EXPECT_FALSE(JobCgroup::create(proc_control()));
    return;
  }
  kill_and_remove(proc_control());
}

// Kernels before 5.14 have no cgroup.kill: the job is frozen, killed pid by pid, thawed.
TEST_P(JobCgroupTestV2, WithoutCgroupKillTheFrozenJobIsKilledPidByPid) {
  auto control = proc_control();
  control.cgroup_kill = false;
  kill_and_remove(control);
}

}  // namespace
}  // namespace loadlab::agent
