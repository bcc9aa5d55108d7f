#pragma once
// A ceiling the kernel holds on the number of processes (and threads) of one job: the pids
// controller. A fork past it fails in the job itself (EAGAIN), between two of the agent's
// samples and whatever the job's processes do with their parents, groups or sessions. Chosen
// once per process, like ProcControl:
//
//   pids-v2  pids.max of each job cgroup (the cgroup2 process-control path), with the pids
//            controller enabled on the jobs' folder.
//   pids-v1  a cgroup of the job's own in the cgroup v1 pids hierarchy (hybrid set-ups, where
//            pids is a v1 controller beside the v2 mount; this machine's kind).
//   none     no pids controller to use: the agent counts the job's processes at each sample
//            (the cgroup's, or every process carrying the job's mark) and stops it past the
//            limit.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "loadlab/agent/job_cgroup.hpp"

namespace loadlab::agent {

enum class PidsLimitMode { kV2, kV1, kNone };
std::string_view to_string(PidsLimitMode mode);  // "pids-v2", "pids-v1", "none"

struct PidsLimitPlace {
  PidsLimitMode mode = PidsLimitMode::kNone;
  std::string v1_jobs_dir;  // pids-v1: the folder job pids cgroups are made in
  std::string reason;       // why, for the log
};

// The process-wide choice, made (and logged) at the first call, after proc_control().
PidsLimitPlace pids_limit_place();

// cgroup v2: lets job cgroups made in `jobs_dir` (under `own_dir`, the agent's own cgroup)
// have pids.max, by enabling the pids controller in both folders' cgroup.subtree_control.
// pids is a domain controller: `own_dir` may hold no process of its own unless it is the
// root cgroup (the kernel refuses, EBUSY). "" when it worked, else why not.
std::string enable_pids_v2(const std::string& own_dir, const std::string& jobs_dir);

// Writes pids.max of a cgroup (v2 job cgroup, or v1 job pids cgroup); false with errno.
bool write_pids_max(const std::string& cgroup_dir, int64_t max);

// One job's cgroup in the v1 pids hierarchy (pids-v1) with pids.max `max`. Throws
// EnvironmentError with the reason when it cannot be made.
[[nodiscard]] std::unique_ptr<V1JobFolder> create_pids_v1_job(const std::string& v1_jobs_dir, int64_t max);

}  // namespace loadlab::agent
