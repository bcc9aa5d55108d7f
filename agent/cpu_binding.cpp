#include "loadlab/agent/cpu_binding.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <stdexcept>

#include "loadlab/agent/job_cgroup.hpp"
#include "loadlab/agent/job_processes.hpp"
#include "loadlab/agent/proc_control.hpp"
#include "loadlab/shared/input_error.hpp"
#include "loadlab/shared/logging.hpp"

namespace loadlab::agent {

namespace {

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

bool has_word(const std::string& text, std::string_view word) {
  size_t at = 0;
  while ((at = text.find(word, at)) != std::string::npos) {
    bool starts = at == 0 || text[at - 1] == ' ' || text[at - 1] == ',' || text[at - 1] == '\n';
    size_t end = at + word.size();
    bool ends = end == text.size() || text[end] == ' ' || text[end] == ',' || text[end] == '\n';
    if (starts && ends) return true;
    at = end;
  }
  return false;
}

std::string file(const CpuBinding& b, const char* name) {
  return (b.v1_prefix ? "cpuset." : "") + std::string(name);
}

// Makes the v1 jobs' folder and gives it its parent's CPUs and memory nodes (a new v1 cpuset
// starts with none, and no process can join it until it has both).
std::string prepare_v1(CpuBinding& b, const std::string& own_dir) {
  b.v1_jobs_dir = own_dir + "/loadlab";
  if (mkdir(b.v1_jobs_dir.c_str(), 0755) != 0 && errno != EEXIST)
    return "cannot make " + b.v1_jobs_dir + ": " + std::strerror(errno);
  if (auto n = sweep_stale_jobs(b.v1_jobs_dir))
    component_logger("proc")->info("removed {} job cpusets of agents that are gone", n);
  for (const char* name : {"cpus", "mems"}) {
    auto mine = read_text_file(b.v1_jobs_dir + "/" + file(b, name));
    if (mine && !trimmed(*mine).empty()) continue;
    auto parent = read_text_file(own_dir + "/" + file(b, name));
    if (!parent || trimmed(*parent).empty()) return "cannot read " + own_dir + "/" + file(b, name);
    if (!write_text_file(b.v1_jobs_dir + "/" + file(b, name), trimmed(*parent)))
      return "cannot write " + b.v1_jobs_dir + "/" + file(b, name) + ": " + std::strerror(errno);
  }
  // Proves that a process can be moved into a job cpuset of ours (delegation, a read-only mount).
  try {
    auto job = create_cpuset_v1_job(b, allowed_cpus());
    auto why = probe_join(job->procs_fd(), job->path());
    job->remove();
    if (!why.empty()) return why;
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

std::string try_v2(CpuBinding& b) {
  const ProcControl control = proc_control();
  if (control.mode != ProcControlMode::kCgroup2) return "jobs are not in cgroup v2 cgroups";
  const std::string own = std::filesystem::path(control.jobs_dir).parent_path().string();
  if (auto why = enable_cpuset_v2(own, control.jobs_dir); !why.empty()) return why;
  b.mode = CpuBindingMode::kCpusetV2;
  b.reason = "cpuset.cpus of each job cgroup in " + control.jobs_dir;
  return "";
}

std::string try_v1(CpuBinding& b) {
  auto place = cgroup1_place("cpuset");
  if (!place) return "no cgroup v1 cpuset mount with this process's cpuset under it";
  b.v1_prefix = !has_word(place->options, "noprefix");
  if (auto why = prepare_v1(b, place->dir); !why.empty()) return why;
  b.mode = CpuBindingMode::kCpusetV1;
  b.reason = "a cpuset of its own per job in " + b.v1_jobs_dir;
  return "";
}

CpuBinding choose(std::optional<CpuBindingMode> wanted) {
  std::string why_not;
  for (auto mode : {CpuBindingMode::kCpusetV2, CpuBindingMode::kCpusetV1}) {
    if (wanted && *wanted != mode) continue;
    CpuBinding b;
    auto why = mode == CpuBindingMode::kCpusetV2 ? try_v2(b) : try_v1(b);
    if (why.empty()) return b;
    why_not += (why_not.empty() ? "" : "; ") + std::string(to_string(mode)) + ": " + why;
  }
  CpuBinding b;
  b.reason = why_not.empty() ? "requested: sched_setaffinity only" : "no usable cpuset (" + why_not + ")";
  return b;
}

std::mutex g_binding_mutex;
std::optional<CpuBinding> g_binding;

CpuBinding select_locked(std::optional<CpuBindingMode> wanted) {
  auto b = choose(wanted);
  auto log = component_logger("proc");
  if (wanted && *wanted != b.mode)
    log->warn("CPU binding {} is not usable here; using {}: {}", to_string(*wanted), to_string(b.mode),
              b.reason);
  else
    log->info("CPU binding: {}: {}", to_string(b.mode), b.reason);
  g_binding = b;
  return b;
}

}  // namespace

std::string_view to_string(CpuBindingMode mode) {
  switch (mode) {
    case CpuBindingMode::kCpusetV2:
      return "cpuset-v2";
    case CpuBindingMode::kCpusetV1:
      return "cpuset-v1";
    case CpuBindingMode::kAffinity:
      return "affinity";
  }
  return "affinity";
}

std::optional<CpuBindingMode> parse_cpu_binding_mode(std::string_view text) {
  for (auto m : {CpuBindingMode::kCpusetV2, CpuBindingMode::kCpusetV1, CpuBindingMode::kAffinity})
    if (text == to_string(m)) return m;
  return std::nullopt;
}

CpuList allowed_cpus() {
  for (size_t n = 1024; n <= CpuList::kMaxCpus; n *= 2) {
    cpu_set_t* set = CPU_ALLOC(n);
    const size_t size = CPU_ALLOC_SIZE(n);
    CPU_ZERO_S(size, set);
    if (sched_getaffinity(0, size, set) == 0) {
      CpuList out;
      for (size_t c = 0; c < n; ++c)
        if (CPU_ISSET_S(c, size, set)) out.add(static_cast<uint32_t>(c));
      CPU_FREE(set);
      return out;
    }
    CPU_FREE(set);
    if (errno != EINVAL) break;  // EINVAL: the kernel's mask is wider than ours
  }
  return CpuList::first(static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_ONLN)));
}

CpuList job_cpus(const std::string& text) {
  if (text.empty()) return {};
  auto cpus = CpuList::parse(text);
  if (!cpus)
    throw InputError("cpus",
                     "must be a list of CPUs such as \"0\", \"2-3\" or \"0,2\", got \"" + text + "\"");
  const CpuList allowed = allowed_cpus();
  if (!cpus->subset_of(allowed))
    throw InputError("cpus", "\"" + text + "\" is not within this agent's CPUs " + allowed.to_string());
  return *cpus;
}

CpuBinding cpu_binding() {
  std::lock_guard lock(g_binding_mutex);
  if (g_binding) return *g_binding;
  std::optional<CpuBindingMode> wanted;
  if (const char* env = std::getenv("LOADLAB_CPU_BINDING"); env && *env && std::string_view(env) != "auto") {
    wanted = parse_cpu_binding_mode(env);
    if (!wanted)
      component_logger("proc")->warn(
          "LOADLAB_CPU_BINDING={}: must be cpuset-v2, cpuset-v1, affinity or auto; choosing", env);
  }
  return select_locked(wanted);
}

CpuBinding select_cpu_binding(std::optional<CpuBindingMode> wanted) {
  std::lock_guard lock(g_binding_mutex);
  return select_locked(wanted);
}

std::string enable_cpuset_v2(const std::string& own_dir, const std::string& jobs_dir) {
  auto offered = read_text_file(own_dir + "/cgroup.controllers");
  if (!offered) return "cannot read " + own_dir + "/cgroup.controllers";
  if (!has_word(trimmed(*offered), "cpuset"))
    return "the cpuset controller is not offered to " + own_dir +
           " (the cgroup above it does not delegate it)";
  for (const auto& dir : {own_dir, jobs_dir}) {
    auto enabled = read_text_file(dir + "/cgroup.subtree_control");
    if (enabled && has_word(trimmed(*enabled), "cpuset")) continue;
    if (!write_text_file(dir + "/cgroup.subtree_control", "+cpuset"))
      return "cannot enable cpuset in " + dir + "/cgroup.subtree_control: " + std::strerror(errno);
  }
  return "";
}

bool write_cpuset_cpus(const std::string& cgroup_dir, const CpuList& cpus, bool prefix) {
  return write_text_file(cgroup_dir + (prefix ? "/cpuset.cpus" : "/cpus"), cpus.to_string());
}

std::unique_ptr<V1JobFolder> create_cpuset_v1_job(const CpuBinding& binding, const CpuList& cpus) {
  return V1JobFolder::create(
      binding.v1_jobs_dir, "job cpuset", [&](const std::string& path, std::string& what) {
        what = "give job cpuset " + path + " the CPUs " + cpus.to_string();
        auto mems = read_text_file(binding.v1_jobs_dir + "/" + file(binding, "mems"));
        return mems && write_text_file(path + "/" + file(binding, "mems"), trimmed(*mems)) &&
               write_cpuset_cpus(path, cpus, binding.v1_prefix);
      });
}

AffinityMask::AffinityMask(const CpuList& cpus)
    : set_(CPU_ALLOC(CpuList::kMaxCpus)), size_(CPU_ALLOC_SIZE(CpuList::kMaxCpus)) {
  CPU_ZERO_S(size_, set_);
  for (uint32_t c : cpus.cpus()) CPU_SET_S(c, size_, set_);
}

AffinityMask::~AffinityMask() { CPU_FREE(set_); }

}  // namespace loadlab::agent
