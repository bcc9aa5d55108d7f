// The texts the agent's process control reads and writes: the path names of its flag,
// cgroup v2's cpu.stat and /proc/PID/cgroup (which job cgroup, if any, is this agent's own).
#include <gtest/gtest.h>

#include "loadlab/agent/job_cgroup.hpp"
#include "loadlab/agent/proc_control.hpp"

namespace loadlab::agent {
namespace {

TEST(ProcControl, NamesRoundTrip) {
  for (auto m : {ProcControlMode::kCgroup2, ProcControlMode::kCgroup1Freezer, ProcControlMode::kProcessGroup})
    EXPECT_EQ(parse_proc_control_mode(to_string(m)), m);
  EXPECT_EQ(parse_proc_control_mode("cgroup1"), ProcControlMode::kCgroup1Freezer);
  EXPECT_FALSE(parse_proc_control_mode("cgroups"));
}

TEST(CpuStat, ParsesTheThreeFigures) {
  auto c = parse_cpu_stat("usage_usec 1500\nuser_usec 1000\nsystem_usec 500\nnr_periods 0\n");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->usage_usec, 1500u);
  EXPECT_EQ(c->user_usec, 1000u);
  EXPECT_EQ(c->system_usec, 500u);
  EXPECT_FALSE(parse_cpu_stat("nr_periods 0\n"));
}

TEST(JobCgroupDir, OnlyThisAgentsOwnJobCgroupsCount) {
  const Cgroup2Place root{"/sys/fs/cgroup", "/", "/"};
  EXPECT_EQ(job_cgroup_dir("0::/loadlab/job-42-7\n", root, 42), "/sys/fs/cgroup/loadlab/job-42-7");
  EXPECT_FALSE(job_cgroup_dir("0::/loadlab/job-42-7\n", root, 43));  // another agent's job
  EXPECT_FALSE(job_cgroup_dir("0::/\n", root, 42));                  // the agent's own cgroup
  // A job cgroup an agent running inside our job made: not ours to read.
  EXPECT_FALSE(job_cgroup_dir("0::/loadlab/job-42-7/loadlab/job-99-1\n", root, 42));
  // Hybrid set-ups list the v1 hierarchies first.
  const Cgroup2Place hybrid{"/sys/fs/cgroup/unified", "/", "/system.slice/a.service"};
  EXPECT_EQ(job_cgroup_dir("6:freezer:/\n1:cpu:/\n0::/system.slice/a.service/loadlab/job-42-1\n", hybrid, 42),
            "/sys/fs/cgroup/unified/system.slice/a.service/loadlab/job-42-1");
  // A container that mounts only its own subtree.
  const Cgroup2Place subtree{"/sys/fs/cgroup", "/machine/c1", "/machine/c1/app"};
  EXPECT_EQ(job_cgroup_dir("0::/machine/c1/app/loadlab/job-42-3\n", subtree, 42),
            "/sys/fs/cgroup/app/loadlab/job-42-3");
}

}  // namespace
}  // namespace loadlab::agent
