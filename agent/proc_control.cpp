#include "loadlab/agent/proc_control.hpp"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <vector>

#include "loadlab/agent/job_cgroup.hpp"
#include "loadlab/agent/job_processes.hpp"
#include "loadlab/shared/logging.hpp"

namespace loadlab::agent {

namespace {

struct MountEntry {
  std::string root, dir, fstype, super_options;
};

// /proc/self/mountinfo: "ID PARENT MAJ:MIN ROOT DIR OPTIONS [TAGS...] - FSTYPE SOURCE SUPER".
std::vector<MountEntry> cgroup_mounts() {
  std::vector<MountEntry> out;
  std::ifstream f("/proc/self/mountinfo");
  for (std::string line; std::getline(f, line);) {
    std::istringstream in(line);
    std::string skip, word;
    MountEntry m;
    in >> skip >> skip >> skip >> m.root >> m.dir;
    while (in >> word && word != "-") {
    }
    in >> m.fstype >> skip >> m.super_options;
    if (m.fstype == "cgroup" || m.fstype == "cgroup2") out.push_back(std::move(m));
  }
  return out;
}

// True if the comma-separated `list` holds `word`.
bool has_word(std::string_view list, std::string_view word) {
  for (size_t at = 0; at <= list.size();) {
    size_t comma = std::min(list.find(',', at), list.size());
    if (list.substr(at, comma - at) == word) return true;
    at = comma + 1;
  }
  return false;
}

// This process's cgroup in the hierarchy holding `controller` ("" = the v2 one).
std::optional<std::string> own_cgroup(std::string_view controller) {
  std::ifstream f("/proc/self/cgroup");
  for (std::string line; std::getline(f, line);) {
    auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    bool match = controller.empty() ? line.rfind("0::", 0) == 0
                                    : has_word(std::string_view(line).substr(a + 1, b - a - 1), controller);
    if (match) return line.substr(b + 1);
  }
  return std::nullopt;
}

std::optional<std::string> folder_under(const std::string& mount, const std::string& root,
                                        std::string_view path) {
  if (root == "/") return mount + (path == "/" ? "" : std::string(path));
  if (path.rfind(root, 0) != 0 || (path.size() > root.size() && path[root.size()] != '/'))
    return std::nullopt;
  return mount + std::string(path.substr(root.size()));
}

// Moves a short-lived child into a fresh job cgroup: the one thing a job needs that
// mkdir alone does not prove (delegation, the cgroup type, a read-only mount). "" if it works.
std::string probe(const ProcControl& control) {
  std::unique_ptr<JobCgroup> job;
  try {
    job = JobCgroup::create(control);
  } catch (const std::exception& e) {
    return e.what();
  }
  auto why = probe_join(job->procs_fd(), job->path());
  job->remove();
  return why;
}

// Makes `jobs_dir` (clearing what dead agents left in it) and proves that jobs can be made
// in it; the reason if not.
std::string prepare(ProcControl& control) {
  if (mkdir(control.jobs_dir.c_str(), 0755) != 0 && errno != EEXIST)
    return "cannot make " + control.jobs_dir + ": " + std::strerror(errno);
  if (auto n = sweep_stale_jobs(control.jobs_dir))
    component_logger("agent")->info("removed {} job cgroups of agents that are gone", n);
  return probe(control);
}

std::string try_cgroup2(ProcControl& c) {
  const auto& place = cgroup2_place();
  if (!place) return "no cgroup2 mount";
  auto own = place->folder(place->own);
  if (!own) return "this process's cgroup " + place->own + " is not under " + place->mount;
  // Under the agent's own cgroup, so a delegated subtree (a container, a systemd unit with
  // Delegate=yes) is enough. No controller is enabled: cpu.stat and cgroup.kill need none,
  // so the "no internal processes" rule never applies and the agent need not move itself.
  c.mode = ProcControlMode::kCgroup2;
  c.jobs_dir = *own + "/loadlab";
  if (auto why = prepare(c); !why.empty()) return why;
  c.cgroup_kill = access((c.jobs_dir + "/cgroup.kill").c_str(), F_OK) == 0;
  c.reason = "job cgroups in " + c.jobs_dir + (c.cgroup_kill ? "" : " (no cgroup.kill: freeze, then kill)");
  return "";
}

std::string try_freezer(ProcControl& c) {
  auto place = cgroup1_place("freezer");
  if (!place) return "no cgroup v1 freezer mount with this process's freezer cgroup under it";
  c.mode = ProcControlMode::kCgroup1Freezer;
  c.jobs_dir = place->dir + "/loadlab";
  if (auto why = prepare(c); !why.empty()) return why;
  c.reason = "job cgroups in " + c.jobs_dir + " (cgroup v1 freezer; CPU from /proc)";
  return "";
}

ProcControl choose(std::optional<ProcControlMode> wanted) {
  std::string why_not;
  for (auto mode : {ProcControlMode::kCgroup2, ProcControlMode::kCgroup1Freezer}) {
    if (wanted && *wanted != mode) continue;
    ProcControl c;
    auto why = mode == ProcControlMode::kCgroup2 ? try_cgroup2(c) : try_freezer(c);
    if (why.empty()) return c;
    why_not += (why_not.empty() ? "" : "; ") + std::string(to_string(mode)) + ": " + why;
  }
  ProcControl pg;
  pg.reason = why_not.empty() ? "requested: no cgroup is used" : "no usable cgroup (" + why_not + ")";
  return pg;
}

std::mutex g_mutex;
std::optional<ProcControl> g_current;

ProcControl select_locked(std::optional<ProcControlMode> wanted) {
  auto c = choose(wanted);
  auto log = component_logger("proc");
  if (wanted && *wanted != c.mode)
    log->warn("process control {} is not usable here; using {}: {}", to_string(*wanted), to_string(c.mode),
              c.reason);
  else
    log->info("process control: {}: {}", to_string(c.mode), c.reason);
  g_current = c;
  return c;
}

}  // namespace

size_t sweep_stale_jobs(const std::string& jobs_dir) {
  size_t removed = 0;
  std::error_code ec;
  for (auto& entry : std::filesystem::directory_iterator(jobs_dir, ec)) {
    const std::string name = entry.path().filename().string();
    unsigned long pid = 0, n = 0;
    char tail = 0;
    if (std::sscanf(name.c_str(), "job-%lu-%lu%c", &pid, &n, &tail) != 2 || pid == 0) continue;
    if (kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // its agent runs
    // A folder that still holds a process is not empty: rmdir refuses it (EBUSY).
    if (rmdir(entry.path().c_str()) == 0) ++removed;
  }
  return removed;
}

std::string_view to_string(ProcControlMode mode) {
  switch (mode) {
    case ProcControlMode::kCgroup2:
      return "cgroup2";
    case ProcControlMode::kCgroup1Freezer:
      return "cgroup1-freezer";
    case ProcControlMode::kProcessGroup:
      return "pgroup";
  }
  return "pgroup";
}

std::optional<ProcControlMode> parse_proc_control_mode(std::string_view text) {
  if (text == "cgroup2") return ProcControlMode::kCgroup2;
  if (text == "cgroup1" || text == "cgroup1-freezer") return ProcControlMode::kCgroup1Freezer;
  if (text == "pgroup") return ProcControlMode::kProcessGroup;
  return std::nullopt;
}

std::optional<std::string> Cgroup2Place::folder(std::string_view path) const {
  return folder_under(mount, mount_root, path);
}

const std::optional<Cgroup2Place>& cgroup2_place() {
  static const std::optional<Cgroup2Place> place = []() -> std::optional<Cgroup2Place> {
    auto own = own_cgroup("");
    if (!own) return std::nullopt;
    for (auto& m : cgroup_mounts())
      if (m.fstype == "cgroup2") return Cgroup2Place{m.dir, m.root, *own};
    return std::nullopt;
  }();
  return place;
}

std::optional<Cgroup1Place> cgroup1_place(std::string_view controller) {
  for (auto& m : cgroup_mounts()) {
    if (m.fstype != "cgroup" || !has_word(m.super_options, controller)) continue;
    auto own = own_cgroup(controller);
    auto dir = own ? folder_under(m.dir, m.root, *own) : std::nullopt;
    if (!dir) return std::nullopt;
    return Cgroup1Place{*dir, m.super_options};
  }
  return std::nullopt;
}

ProcControl proc_control() {
  std::lock_guard lock(g_mutex);
  if (g_current) return *g_current;
  std::optional<ProcControlMode> wanted;
  if (const char* env = std::getenv("LOADLAB_PROC_CONTROL"); env && *env && std::string_view(env) != "auto") {
    wanted = parse_proc_control_mode(env);
    if (!wanted)
      component_logger("proc")->warn(
          "LOADLAB_PROC_CONTROL={}: must be cgroup2, cgroup1, pgroup or auto; choosing", env);
  }
  return select_locked(wanted);
}

ProcControl select_proc_control(std::optional<ProcControlMode> wanted) {
  std::lock_guard lock(g_mutex);
  return select_locked(wanted);
}

}  // namespace loadlab::agent
