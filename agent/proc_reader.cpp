#include "loadlab/agent/proc_reader.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "loadlab/agent/job_cgroup.hpp"
#include "loadlab/agent/proc_control.hpp"

namespace loadlab::agent {

namespace {

// Formats a path into `path`, cut to fit and NUL-terminated as snprintf would: the sampler
// builds its paths ten times a second without allocating.
template <size_t N, class... Args>
void format_path(char (&path)[N], fmt::format_string<Args...> format, Args&&... args) {
  *fmt::format_to_n(path, N - 1, format, std::forward<Args>(args)...).out = '\0';
}

// Reads a small /proc file into buf (NUL-terminated); the length, or -1. Plain syscalls:
// the sampler reads a few files per process ten times a second, and iostreams cost more
// than the reads themselves.
ssize_t read_small(const char* path, char* buf, size_t size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, size - 1);
  close(fd);
  if (n < 0) return -1;
  buf[n] = '\0';
  return n;
}

}  // namespace

ProcFsReader::~ProcFsReader() {
  for (auto& [path, fd] : fds_) close(fd);
}

// Re-reads a /proc file through a descriptor kept open: one pread instead of open, read
// and close. A descriptor pins its process, so a reused pid cannot be misread: reads of a
// dead process fail and its descriptors are dropped.
ssize_t ProcFsReader::read_cached(const std::string& path, char* buf, size_t size) {
  int fd = -1;
  {
    std::lock_guard lock(fds_mutex_);
    auto it = fds_.find(path);
    if (it != fds_.end()) {
      fd = it->second;
      fds_.erase(it);  // taken; put back after a good read
    }
  }
  ssize_t n = fd >= 0 ? pread(fd, buf, size - 1, 0) : -1;
  if (n < 0) {
    // Never opened, or its process died (the pid may since belong to a new one): open anew.
    if (fd >= 0) close(fd);
    fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    n = pread(fd, buf, size - 1, 0);
    if (n < 0) {
      close(fd);
      return -1;
    }
  }
  buf[n] = '\0';
  std::lock_guard lock(fds_mutex_);
  if (fds_.size() >= kMaxCachedFds) {
    for (auto& [p, f] : fds_) close(f);
    fds_.clear();
  }
  if (!fds_.emplace(path, fd).second) close(fd);
  return n;
}

void ProcFsReader::forget_exited() {
  std::lock_guard lock(fds_mutex_);
  const size_t prefix = root_.size() + 1;  // "/proc/"
  for (auto it = fds_.begin(); it != fds_.end();) {
    pid_t pid = static_cast<pid_t>(std::atol(it->first.c_str() + prefix));
    char probe[8];
    // A dead process's files fail to read; a live one (even a reused pid) is kept.
    if (pid <= 0 || pread(it->second, probe, sizeof probe, 0) < 0 || (kill(pid, 0) != 0 && errno == ESRCH)) {
      close(it->second);
      it = fds_.erase(it);
    } else {
      ++it;
    }
  }
}

std::vector<pid_t> ProcFsReader::list_pids() {
  std::vector<pid_t> pids;
  DIR* d = opendir(root_.c_str());
  if (!d) return pids;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    long v = strtol(e->d_name, &end, 10);
    if (end != e->d_name && *end == '\0' && v > 0) pids.push_back(static_cast<pid_t>(v));
  }
  closedir(d);
  return pids;
}

std::optional<ProcStat> ProcFsReader::stat(pid_t pid) {
  char path[128];
  char buf[1024];
  format_path(path, "{}/{}/stat", root_, pid);
  if (read_cached(path, buf, sizeof buf) <= 0) return std::nullopt;
  // The command name (field 2) may hold spaces and parentheses: parse after the last ')'.
  char* rparen = std::strrchr(buf, ')');
  if (!rparen) return std::nullopt;
  ProcStat s;
  s.pid = pid;
  char state;
  long long ppid, threads, rss_pages;
  unsigned long long ut, st;
  long long cut, cst;
  // Fields 3 state, 4 ppid, 14 utime, 15 stime, 16 cutime, 17 cstime, 20 num_threads,
  // 24 rss (pages: the same figure as VmRSS).
  if (std::sscanf(
          rparen + 2,
          "%c %lld %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu %llu %lld %lld %*s %*s %lld %*s %*s %*s %lld",
          &state, &ppid, &ut, &st, &cut, &cst, &threads, &rss_pages) != 8)
    return std::nullopt;
  s.ppid = static_cast<pid_t>(ppid);
  s.utime = ut;
  s.stime = st;
  s.cutime = static_cast<uint64_t>(cut);
  s.cstime = static_cast<uint64_t>(cst);
  s.threads = static_cast<uint32_t>(threads);
  static const uint64_t page_kb = static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) / 1024;
  s.rss_kb = static_cast<uint64_t>(rss_pages) * page_kb;
  // statm's resident less shared (file and shmem pages) is the kernel's RssAnon.
  format_path(path, "{}/{}/statm", root_, pid);
  unsigned long long resident = 0, shared = 0;
  if (read_cached(path, buf, sizeof buf) > 0 && std::sscanf(buf, "%*s %llu %llu", &resident, &shared) == 2 &&
      resident >= shared)
    s.rss_anon_kb = (resident - shared) * page_kb;
  // The process's CPU clock id, as clock_getcpuclockid() makes it (without its extra
  // validating syscall): CPUCLOCK_SCHED of the whole thread group.
  const clockid_t clock = static_cast<clockid_t>((~static_cast<unsigned>(pid) << 3) | 2);
  timespec ts{};
  if (clock_gettime(clock, &ts) == 0) s.cpu_ns = static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  return s;
}

long ProcFsReader::ticks_per_second() { return sysconf(_SC_CLK_TCK); }

std::optional<std::vector<pid_t>> ProcFsReader::children(pid_t pid, uint32_t threads) {
  char path[192];
  char buf[4096];
  auto parse = [&](std::vector<pid_t>& out) {
    for (char* p = buf; *p;) {
      char* end;
      long c = std::strtol(p, &end, 10);
      if (end == p) break;
      out.push_back(static_cast<pid_t>(c));
      p = end;
    }
  };
  if (threads == 1) {
    // One thread: its children file is the whole answer, no directory listing needed.
    format_path(path, "{}/{}/task/{}/children", root_, pid, pid);
    std::vector<pid_t> out;
    if (read_cached(path, buf, sizeof buf) < 0) {
      if (access(path, F_OK) != 0 && access((root_ + "/" + std::to_string(pid)).c_str(), F_OK) == 0)
        return std::nullopt;  // the process exists but the kernel has no children files
      return out;
    }
    parse(out);
    return out;
  }
  // Each thread lists the children it forked: read them all.
  char task_dir[128];
  format_path(task_dir, "{}/{}/task", root_, pid);
  DIR* d = opendir(task_dir);
  if (!d) return std::vector<pid_t>{};  // gone
  std::vector<pid_t> out;
  bool supported = true;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    format_path(path, "{}/{}/children", task_dir, e->d_name);
    if (read_small(path, buf, sizeof buf) < 0) {
      // No such file on kernels without CONFIG_PROC_CHILDREN; a thread that just exited
      // also has none, so only the main thread's absence decides.
      if (std::atoi(e->d_name) == pid) supported = false;
      continue;
    }
    parse(out);
  }
  closedir(d);
  if (!supported) return std::nullopt;
  return out;
}

std::optional<JobCpu> ProcFsReader::job_cpu(pid_t pid) {
  const auto& place = cgroup2_place();
  if (!place) return std::nullopt;
  char path[128];
  char buf[4096];
  format_path(path, "{}/{}/cgroup", root_, pid);
  if (read_cached(path, buf, sizeof buf) <= 0) return std::nullopt;
  auto dir = job_cgroup_dir(buf, *place, getpid());
  if (!dir) return std::nullopt;
  // Not cached: the job's cgroup is removed when the job ends.
  if (read_small((*dir + "/cpu.stat").c_str(), buf, sizeof buf) <= 0) return std::nullopt;
  auto cpu = parse_cpu_stat(buf);
  if (!cpu) return std::nullopt;
  return JobCpu{cpu->user_s(), cpu->system_s()};
}

std::optional<MachineCpu> ProcFsReader::machine_cpu() {
  char path[128];
  format_path(path, "{}/stat", root_);
  thread_local std::vector<char> local(256 * 1024);  // one line per core and more: read whole
  if (read_small(path, local.data(), local.size()) <= 0) return std::nullopt;
  MachineCpu m;
  bool have_sum = false;
  static const bool irq_in_tasks = irq_time_in_tasks();
  for (const char* line = local.data(); line && *line;) {
    const char* next = std::strchr(line, '\n');
    next = next ? next + 1 : nullptr;
    if (std::strncmp(line, "cpu", 3) != 0) break;  // the cpu lines come first
    unsigned long long v[8] = {};
    unsigned cpu = 0;
    const bool sum = line[3] == ' ';
    int fields = sum ? std::sscanf(line, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                                   &v[3], &v[4], &v[5], &v[6], &v[7])
                     : std::sscanf(line, "cpu%u %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &v[0], &v[1],
                                   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) -
                           1;
    line = next;
    if (fields != 8) continue;
    CpuTimes t;
    t.cpu = cpu;
    // Busy = user nice system steal, and irq softirq where the interrupted task is charged for
    // them (then the benchmark's own network work is in its processes' CPU too, and busy minus
    // their CPU is what else ran).
    t.busy = v[0] + v[1] + v[2] + v[7] + (irq_in_tasks ? v[5] + v[6] : 0);
    t.total = t.busy + v[3] + v[4] + v[5] + v[6];  // + idle iowait irq softirq
    t.steal = v[7];
    if (sum) {
      m.busy = t.busy;
      m.total = t.total;
      m.steal = t.steal;
      have_sum = true;
    } else {
      m.per_cpu.push_back(t);
    }
  }
  if (!have_sum) return std::nullopt;
  m.cores = static_cast<uint32_t>(m.per_cpu.size());
  std::sort(m.per_cpu.begin(), m.per_cpu.end(), [](auto& a, auto& b) { return a.cpu < b.cpu; });
  return m;
}

bool irq_time_in_tasks() {
  static const bool in_tasks = [] {
    std::string config;
    if (gzFile z = gzopen("/proc/config.gz", "rb")) {
      char buf[65536];
      int n;
      while ((n = gzread(z, buf, sizeof buf)) > 0) config.append(buf, static_cast<size_t>(n));
      gzclose(z);
    }
    if (config.empty()) {
      utsname u{};
      uname(&u);
      std::ifstream in(std::string("/boot/config-") + u.release);
      config.assign(std::istreambuf_iterator<char>(in), {});
    }
    return config.find("\nCONFIG_IRQ_TIME_ACCOUNTING=y") == std::string::npos;
  }();
  return in_tasks;
}

std::vector<std::pair<pid_t, double>> ProcFsReader::run_delays_s(pid_t pid) {
  std::vector<std::pair<pid_t, double>> out;
  char dir_path[128];
  format_path(dir_path, "{}/{}/task", root_, pid);
  DIR* dir = opendir(dir_path);
  if (!dir) return out;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    char path[256];
    format_path(path, "{}/{}/schedstat", dir_path, e->d_name);
    char buf[128];
    unsigned long long run_ns = 0, delay_ns = 0;
    if (read_small(path, buf, sizeof buf) > 0 && std::sscanf(buf, "%llu %llu", &run_ns, &delay_ns) == 2)
      out.emplace_back(static_cast<pid_t>(std::atol(e->d_name)), static_cast<double>(delay_ns) / 1e9);
  }
  closedir(dir);
  return out;
}

std::optional<std::string> ProcFsReader::cpus_allowed(pid_t pid) {
  char path[128];
  format_path(path, "{}/{}/status", root_, pid);
  char buf[8192];
  ssize_t n = read_small(path, buf, sizeof buf);
  if (n <= 0) return std::nullopt;
  const char* at = std::strstr(buf, "\nCpus_allowed_list:");
  if (!at) return std::nullopt;
  at += std::strlen("\nCpus_allowed_list:");
  while (*at == ' ' || *at == '\t') ++at;
  const char* end = std::strchr(at, '\n');
  return std::string(at, end ? end : at + std::strlen(at));
}

}  // namespace loadlab::agent
