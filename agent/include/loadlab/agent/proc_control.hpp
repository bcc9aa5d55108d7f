#pragma once
// How the agent contains, measures and stops the processes of a job, chosen once per
// process from what the machine offers:
//
//   cgroup2          each job (the child and every descendant, also those that leave its
//                    process group or are re-parented) in its own cgroup v2: stopped with
//                    cgroup.kill (or freeze + kill), CPU from cpu.stat, which is exact and
//                    keeps the CPU of descendants that have exited.
//   cgroup1-freezer  each job in a cgroup v1 freezer cgroup: frozen, killed pid by pid,
//                    thawed. CPU from /proc.
//   pgroup           no usable cgroup (not root, no delegation): the child's process group,
//                    plus the descendants that left it, found through /proc while the child
//                    is unreaped. CPU from /proc.
//
// RSS always comes from /proc (the sum of the tree's VmRSS): memory.current counts page
// cache and kernel memory, a different figure.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace loadlab::agent {

enum class ProcControlMode { kCgroup2, kCgroup1Freezer, kProcessGroup };

// "cgroup2", "cgroup1-freezer", "pgroup": the names the log and Describe use.
std::string_view to_string(ProcControlMode mode);
// Accepts those names and "cgroup1"; nullopt otherwise.
[[nodiscard]] std::optional<ProcControlMode> parse_proc_control_mode(std::string_view text);

struct ProcControl {
  ProcControlMode mode = ProcControlMode::kProcessGroup;
  std::string jobs_dir;      // the cgroup folder job cgroups are made in; "" for pgroup
  bool cgroup_kill = false;  // cgroup2 only: cgroup.kill exists (Linux >= 5.14); else freeze + kill
  std::string reason;        // why this path was taken, for the log and Describe
};

// Removes the job cgroups in `jobs_dir` that agents now gone left behind (an agent killed
// with SIGKILL: its jobs died with it, their empty folders stayed): "job-PID-N" folders
// whose PID runs no more and that hold no process. Returns how many it removed. Called
// when a path is chosen.
size_t sweep_stale_jobs(const std::string& jobs_dir);

// The process-wide choice, made (and logged) at the first call: the best usable path, or
// the one the environment variable LOADLAB_PROC_CONTROL (cgroup2 | cgroup1 | pgroup) names,
// if it is usable. Children spawned later use it. Any thread.
ProcControl proc_control();

// Chooses again, logs the choice and makes it the process-wide one: `wanted` if it is
// usable, else pgroup; nullopt = the best usable. For tests (which run both paths in one
// process); children already running keep the path they were started on. Any thread.
ProcControl select_proc_control(std::optional<ProcControlMode> wanted);

// Where this process sits in the cgroup v2 hierarchy (also in hybrid set-ups, where v2 is
// mounted beside the v1 hierarchies), found once; nullopt without a cgroup v2 mount.
struct Cgroup2Place {
  std::string mount;       // e.g. /sys/fs/cgroup or /sys/fs/cgroup/unified
  std::string mount_root;  // the cgroup shown at `mount`: "/" unless a subtree is mounted
  std::string own;         // this process's cgroup as /proc/self/cgroup names it
  // The folder of cgroup `path` (as /proc/PID/cgroup names it); nullopt if not under the mount.
  std::optional<std::string> folder(std::string_view path) const;
};
const std::optional<Cgroup2Place>& cgroup2_place();

// This process's cgroup folder in the cgroup v1 hierarchy that holds `controller` (e.g.
// "cpuset"), with the mount's options; nullopt without such a mount, or when the cgroup is
// not under it.
struct Cgroup1Place {
  std::string dir;      // e.g. /sys/fs/cgroup/cpuset/some/group
  std::string options;  // the mount's super options, e.g. "rw,cpuset" or "rw,cpuset,noprefix"
};
std::optional<Cgroup1Place> cgroup1_place(std::string_view controller);

}  // namespace loadlab::agent
