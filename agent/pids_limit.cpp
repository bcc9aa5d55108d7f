#include "loadlab/agent/pids_limit.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <stdexcept>

#include "loadlab/agent/job_cgroup.hpp"
#include "loadlab/agent/job_processes.hpp"
#include "loadlab/agent/proc_control.hpp"
#include "loadlab/shared/logging.hpp"

namespace loadlab::agent {

namespace {

bool lists_word(const std::string& text, std::string_view word) {
  size_t at = 0;
  while ((at = text.find(word, at)) != std::string::npos) {
    const bool starts = at == 0 || text[at - 1] == ' ' || text[at - 1] == '\n';
    const size_t end = at + word.size();
    const bool ends = end == text.size() || text[end] == ' ' || text[end] == '\n';
    if (starts && ends) return true;
    at = end;
  }
  return false;
}

std::string try_v2(PidsLimitPlace& p) {
  const ProcControl control = proc_control();
  if (control.mode != ProcControlMode::kCgroup2) return "jobs are not in cgroup v2 cgroups";
  const std::string own = std::filesystem::path(control.jobs_dir).parent_path().string();
  if (auto why = enable_pids_v2(own, control.jobs_dir); !why.empty()) return why;
  p.mode = PidsLimitMode::kV2;
  p.reason = "pids.max of each job cgroup in " + control.jobs_dir;
  return "";
}

std::string try_v1(PidsLimitPlace& p) {
  auto place = cgroup1_place("pids");
  if (!place) return "no cgroup v1 pids mount with this process's pids cgroup under it";
  p.v1_jobs_dir = place->dir + "/loadlab";
  if (mkdir(p.v1_jobs_dir.c_str(), 0755) != 0 && errno != EEXIST)
    return "cannot make " + p.v1_jobs_dir + ": " + std::strerror(errno);
  if (auto n = sweep_stale_jobs(p.v1_jobs_dir))
    component_logger("proc")->info("removed {} job pids cgroups of agents that are gone", n);
  // Proves that a process can be moved into a job pids cgroup of ours.
  try {
    auto job = create_pids_v1_job(p.v1_jobs_dir, 1);
    auto why = probe_join(job->procs_fd(), job->path());
    job->remove();
    if (!why.empty()) return why;
  } catch (const std::exception& e) {
    return e.what();
  }
  p.mode = PidsLimitMode::kV1;
  p.reason = "a pids cgroup of its own per job in " + p.v1_jobs_dir;
  return "";
}

}  // namespace

std::string_view to_string(PidsLimitMode mode) {
  switch (mode) {
    case PidsLimitMode::kV2:
      return "pids-v2";
    case PidsLimitMode::kV1:
      return "pids-v1";
    case PidsLimitMode::kNone:
      break;
  }
  return "none";
}

PidsLimitPlace pids_limit_place() {
  static const PidsLimitPlace place = [] {
    PidsLimitPlace p;
    std::string why_v2 = try_v2(p);
    if (why_v2.empty()) return p;
    p = PidsLimitPlace{};
    std::string why_v1 = try_v1(p);
    if (why_v1.empty()) return p;
    p = PidsLimitPlace{};
    p.reason = "no pids controller (pids-v2: " + why_v2 + "; pids-v1: " + why_v1 +
               "): the job's processes are counted at each sample";
    return p;
  }();
  static std::once_flag logged;
  std::call_once(logged, [] {
    component_logger("proc")->info("process limit: {}: {}", to_string(place.mode), place.reason);
  });
  return place;
}

std::string enable_pids_v2(const std::string& own_dir, const std::string& jobs_dir) {
  auto offered = read_text_file(jobs_dir + "/cgroup.controllers");
  if (offered && lists_word(*offered, "pids")) {
    // Enabled above already: only the jobs' folder is left.
  } else {
    auto own_offered = read_text_file(own_dir + "/cgroup.controllers");
    if (!own_offered) return "cannot read " + own_dir + "/cgroup.controllers";
    if (!lists_word(*own_offered, "pids"))
      return "the pids controller is not offered to " + own_dir +
             " (the cgroup above it does not delegate it)";
    if (!write_text_file(own_dir + "/cgroup.subtree_control", "+pids"))
      return "cannot enable pids in " + own_dir + "/cgroup.subtree_control: " + std::strerror(errno) +
             (errno == EBUSY ? " (a domain controller: the agent's own cgroup holds processes)" : "");
  }
  auto enabled = read_text_file(jobs_dir + "/cgroup.subtree_control");
  if (!(enabled && lists_word(*enabled, "pids")) &&
      !write_text_file(jobs_dir + "/cgroup.subtree_control", "+pids"))
    return "cannot enable pids in " + jobs_dir + "/cgroup.subtree_control: " + std::strerror(errno);
  return "";
}

bool write_pids_max(const std::string& cgroup_dir, int64_t max) {
  return write_text_file(cgroup_dir + "/pids.max", std::to_string(max));
}

std::unique_ptr<V1JobFolder> create_pids_v1_job(const std::string& v1_jobs_dir, int64_t max) {
  return V1JobFolder::create(v1_jobs_dir, "job pids cgroup", [&](const std::string& path, std::string& what) {
    what = "write " + path + "/pids.max";
    return write_pids_max(path, max);
  });
}

}  // namespace loadlab::agent
