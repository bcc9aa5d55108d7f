#pragma once
// Holding a job to the CPUs its spec names (TargetSpec.cpus, LoadSpec.cpus). Chosen once per
// process from what the machine offers, like ProcControl:
//
//   cpuset-v2  the job's own cgroup v2 (the cgroup2 process-control path) with the cpuset
//              controller enabled on the jobs' folder: the job's cpuset.cpus.
//   cpuset-v1  a cgroup of the job's own in the cgroup v1 cpuset hierarchy (hybrid set-ups,
//              where cpuset is a v1 controller beside the v2 mount).
//   affinity   no cpuset to use (not root, no delegation, cpuset not enabled above the agent).
//
// In every mode the child also sets its own affinity between fork and exec, so it and every
// descendant start on the set; in the cpuset modes no process of the job can leave it.
#include <sched.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "loadlab/agent/job_cgroup.hpp"
#include "loadlab/shared/cpu_list.hpp"

namespace loadlab::agent {

enum class CpuBindingMode { kCpusetV2, kCpusetV1, kAffinity };

// "cpuset-v2", "cpuset-v1", "affinity": the names Describe and Usage use.
std::string_view to_string(CpuBindingMode mode);
// Accepts those names; nullopt otherwise.
[[nodiscard]] std::optional<CpuBindingMode> parse_cpu_binding_mode(std::string_view text);

struct CpuBinding {
  CpuBindingMode mode = CpuBindingMode::kAffinity;
  std::string v1_jobs_dir;  // cpuset-v1: the folder job cpusets are made in
  bool v1_prefix = true;    // cpuset-v1: control files are "cpuset.cpus" (false: "cpus", noprefix)
  std::string reason;       // why this path was taken, for the log
};

// The CPUs this process may run on (its affinity), which a job's set must lie within.
CpuList allowed_cpus();

// A spec's `cpus` field checked against allowed_cpus(): the set, empty for ""; InputError on
// "cpus" for text that is not a CPU list or names a CPU this agent may not use.
CpuList job_cpus(const std::string& text);

// The process-wide choice, made (and logged) at the first call, after proc_control(): the best
// usable path, or the one LOADLAB_CPU_BINDING (cpuset-v2 | cpuset-v1 | affinity) names if it
// is usable. Any thread.
CpuBinding cpu_binding();
// Chooses again, as select_proc_control does: `wanted` if usable, else affinity; nullopt =
// the best usable. For tests.
CpuBinding select_cpu_binding(std::optional<CpuBindingMode> wanted);

// cgroup v2: lets the job cgroups made in `jobs_dir` (a folder under `own_dir`, the agent's
// own cgroup) have cpuset.cpus, by enabling the cpuset controller in both folders'
// cgroup.subtree_control. cpuset is a threaded controller, so the agent's own processes may
// stay in `own_dir`. "" when it worked, else why not (cpuset not offered to `own_dir`: the
// cgroup above it has not delegated it).
std::string enable_cpuset_v2(const std::string& own_dir, const std::string& jobs_dir);

// Writes `cpus` into a cpuset cgroup's cpus file (v2 job cgroups, v1 job cpusets); false with
// errno on failure.
bool write_cpuset_cpus(const std::string& cgroup_dir, const CpuList& cpus, bool prefix = true);

// One job's cpuset in the v1 hierarchy (cpuset-v1), with `cpus` and the jobs' memory nodes.
// Throws EnvironmentError with the reason when it cannot be made.
[[nodiscard]] std::unique_ptr<V1JobFolder> create_cpuset_v1_job(const CpuBinding& binding,
                                                                const CpuList& cpus);

// An affinity mask for sched_setaffinity, built before a fork (the child only calls the
// syscall).
class AffinityMask {
 public:
  explicit AffinityMask(const CpuList& cpus);
  ~AffinityMask();
  AffinityMask(const AffinityMask&) = delete;
  AffinityMask& operator=(const AffinityMask&) = delete;
  const cpu_set_t* set() const { return set_; }
  size_t size() const { return size_; }

 private:
  cpu_set_t* set_;
  size_t size_;
};

}  // namespace loadlab::agent
