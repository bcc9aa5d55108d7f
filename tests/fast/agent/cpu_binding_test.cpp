// The CPU binding's parts that the kernel here cannot show, on fake trees: cgroup v2's cpuset
// delegation and a machine's fingerprint; and the spec check against the agent's own CPUs.
#include "loadlab/agent/cpu_binding.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "loadlab/agent/job_cgroup.hpp"
#include "loadlab/agent/machine_fingerprint.hpp"
#include "loadlab/agent/pids_limit.hpp"
#include "loadlab/shared/input_error.hpp"

namespace loadlab::agent {
namespace {

namespace fs = std::filesystem;

class FakeTree : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("loadlab-fake-" + std::to_string(getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const std::string& relative, const std::string& text) {
    fs::create_directories((root_ / relative).parent_path());
    std::ofstream(root_ / relative) << text;
  }
  std::string read(const std::string& relative) {
    std::ifstream in(root_ / relative);
    return std::string((std::istreambuf_iterator<char>(in)), {});
  }
  std::string path(const std::string& relative) { return (root_ / relative).string(); }
  fs::path root_;
};

// A cgroup v2 tree: the agent's own cgroup and its jobs' folder, as files.
TEST_F(FakeTree, CpusetIsEnabledForTheJobsWhenTheParentDelegatesIt) {
  write("agent/cgroup.controllers", "cpuset cpu io memory pids\n");
  write("agent/cgroup.subtree_control", "");
  write("agent/loadlab/cgroup.subtree_control", "");
  EXPECT_EQ(enable_cpuset_v2(path("agent"), path("agent/loadlab")), "");
  EXPECT_EQ(read("agent/cgroup.subtree_control"), "+cpuset");
  EXPECT_EQ(read("agent/loadlab/cgroup.subtree_control"), "+cpuset");
  // A job of the jobs' folder gets its set in cpuset.cpus, in the kernel's list format.
  write("agent/loadlab/job-1-1/cpuset.cpus", "");
  EXPECT_TRUE(write_cpuset_cpus(path("agent/loadlab/job-1-1"), *CpuList::parse("3,1,2,7")));
  EXPECT_EQ(read("agent/loadlab/job-1-1/cpuset.cpus"), "1-3,7");
}

TEST_F(FakeTree, CpusetAlreadyEnabledIsLeftAsItIs) {
  write("agent/cgroup.controllers", "cpuset memory\n");
  write("agent/cgroup.subtree_control", "cpuset memory\n");
  write("agent/loadlab/cgroup.subtree_control", "cpuset\n");
  EXPECT_EQ(enable_cpuset_v2(path("agent"), path("agent/loadlab")), "");
  EXPECT_EQ(read("agent/cgroup.subtree_control"), "cpuset memory\n");
}

TEST_F(FakeTree, WithoutCpusetOfferedTheAgentSaysWhyAndFallsBackToAffinity) {
  write("agent/cgroup.controllers", "cpu io memory pids\n");  // "cpuset" not delegated
  write("agent/cgroup.subtree_control", "");
  auto why = enable_cpuset_v2(path("agent"), path("agent/loadlab"));
  EXPECT_NE(why.find("the cpuset controller is not offered to " + path("agent")), std::string::npos) << why;
  EXPECT_EQ(read("agent/cgroup.subtree_control"), "");
  EXPECT_NE(enable_cpuset_v2(path("nowhere"), path("nowhere/loadlab")).find("cannot read"),
            std::string::npos);
}

// The pids controller on a pure cgroup v2 host (this machine's pids is a v1 controller, so
// the v2 logic is shown on files): enabled for the jobs' folder when the agent's cgroup is
// offered it, each job's ceiling in its pids.max.
TEST_F(FakeTree, PidsIsEnabledForTheJobsAndEachJobGetsItsCeiling) {
  write("agent/cgroup.controllers", "cpuset cpu io memory pids\n");
  write("agent/cgroup.subtree_control", "");
  write("agent/loadlab/cgroup.controllers", "");
  write("agent/loadlab/cgroup.subtree_control", "");
  EXPECT_EQ(enable_pids_v2(path("agent"), path("agent/loadlab")), "");
  EXPECT_EQ(read("agent/cgroup.subtree_control"), "+pids");
  EXPECT_EQ(read("agent/loadlab/cgroup.subtree_control"), "+pids");
  write("agent/loadlab/job-1-1/pids.max", "max");
  EXPECT_TRUE(write_pids_max(path("agent/loadlab/job-1-1"), 8192));
  EXPECT_EQ(read("agent/loadlab/job-1-1/pids.max"), "8192");
  // Enabled above already (the jobs' folder is offered it): the agent's own is left alone.
  write("agent/cgroup.subtree_control", "memory\n");
  write("agent/loadlab/cgroup.controllers", "memory pids\n");
  write("agent/loadlab/cgroup.subtree_control", "");
  EXPECT_EQ(enable_pids_v2(path("agent"), path("agent/loadlab")), "");
  EXPECT_EQ(read("agent/cgroup.subtree_control"), "memory\n");
  EXPECT_EQ(read("agent/loadlab/cgroup.subtree_control"), "+pids");
  // Not delegated: why, and nothing written.
  write("other/cgroup.controllers", "cpu memory\n");
  write("other/cgroup.subtree_control", "");
  write("other/loadlab/cgroup.controllers", "");
  auto why = enable_pids_v2(path("other"), path("other/loadlab"));
  EXPECT_NE(why.find("the pids controller is not offered to " + path("other")), std::string::npos) << why;
  EXPECT_EQ(read("other/cgroup.subtree_control"), "");
}

TEST_F(FakeTree, TheFingerprintReadsCpuinfoTopologyAndFrequency) {
  write("proc/cpuinfo",
        "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Gold 6248\nflags\t\t: fpu sse2 hypervisor avx2\n\n"
        "processor\t: 1\nmodel name\t: Intel(R) Xeon(R) Gold 6248\n");
  write("proc/sys/kernel/osrelease", "6.1.0-27-amd64\n");
  write("sys/devices/system/cpu/online", "0-7\n");
  write("sys/devices/system/cpu/cpu0/topology/thread_siblings_list", "0,4\n");
  write("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "powersave\n");
  write("sys/devices/system/cpu/intel_pstate/no_turbo", "1\n");
  auto f = read_fingerprint(path("proc"), path("sys"));
  EXPECT_EQ(f.cpu_model(), "Intel(R) Xeon(R) Gold 6248");
  EXPECT_EQ(f.cpus(), 8u);
  EXPECT_EQ(f.threads_per_core(), 2u);
  EXPECT_EQ(f.governor(), "powersave");
  EXPECT_EQ(f.boost(), "off");
  EXPECT_EQ(f.kernel(), "6.1.0-27-amd64");
  EXPECT_TRUE(f.virtual_machine());
  // What a VM does not show stays empty, never made up.
  write("sys/devices/system/cpu/cpufreq/boost", "1\n");
  fs::remove(root_ / "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  f = read_fingerprint(path("proc"), path("sys"));
  EXPECT_EQ(f.governor(), "");
  EXPECT_EQ(f.boost(), "on");
}

TEST(CpuBinding, ASpecsCpusMustBeAListWithinTheAgentsOwn) {
  EXPECT_TRUE(job_cpus("").empty());
  const CpuList mine = allowed_cpus();
  ASSERT_FALSE(mine.empty());
  EXPECT_EQ(job_cpus(std::to_string(mine.cpus().front())).to_string(), std::to_string(mine.cpus().front()));
  try {
    job_cpus("4095");
    if (!mine.contains(4095)) FAIL() << "a CPU the agent may not use was taken";
  } catch (const InputError& e) {
    EXPECT_EQ(e.path(), "cpus");
    EXPECT_NE(std::string(e.what()).find("is not within this agent's CPUs " + mine.to_string()),
              std::string::npos)
        << e.what();
  }
  try {
    job_cpus("0-");
    FAIL() << "not a list";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("must be a list of CPUs such as"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loadlab::agent
