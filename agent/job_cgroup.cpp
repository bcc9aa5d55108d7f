#include "loadlab/agent/job_cgroup.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <thread>

#include "loadlab/agent/job_processes.hpp"
#include "loadlab/shared/environment_error.hpp"
#include "loadlab/shared/logging.hpp"

namespace loadlab::agent {

namespace {

constexpr auto kFreezeWait = std::chrono::seconds(1);  // a task in D state may hold off the freeze

// Polls `done` every 5 ms until it holds or `timeout` passes; its last answer.
bool poll_until(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

bool file_has_line(const std::string& path, std::string_view line) {
  auto text = read_text_file(path);
  if (!text) return false;
  for (size_t at = 0; (at = text->find(line, at)) != std::string::npos; at += line.size()) {
    bool starts = at == 0 || (*text)[at - 1] == '\n';
    bool ends = at + line.size() == text->size() || (*text)[at + line.size()] == '\n';
    if (starts && ends) return true;
  }
  return false;
}

// The cgroup folders nested in `dir`, deepest last.
void nested_dirs(const std::string& dir, std::vector<std::string>& out) {
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  while (dirent* e = readdir(d))
    if (e->d_type == DT_DIR && std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
      out.push_back(dir + "/" + e->d_name);
  closedir(d);
}

// cgroup v2: one file kills the whole subtree; cpu.stat is in every cgroup, without any
// controller enabled, so nothing has to be delegated to the jobs' parent.
class Cgroup2Job final : public JobCgroup {
 public:
  Cgroup2Job(std::string path, bool kill_file) : JobCgroup(std::move(path)), kill_file_(kill_file) {}

  void kill_all() override {
    if (kill_file_ && write_text_file(path_ + "/cgroup.kill", "1")) return;
    // Before Linux 5.14: freeze (recursive, and no new process can be forked), then kill.
    write_text_file(path_ + "/cgroup.freeze", "1");
    poll_until([&] { return file_has_line(path_ + "/cgroup.events", "frozen 1"); }, kFreezeWait);
    kill_listed();
    write_text_file(path_ + "/cgroup.freeze", "0");
  }

  std::optional<CgroupCpu> cpu() const override {
    auto text = read_text_file(path_ + "/cpu.stat");
    return text ? parse_cpu_stat(*text) : std::nullopt;
  }

 private:
  // Zombies do not count: a job is empty once its processes have exited.
  bool empty() const override { return file_has_line(path_ + "/cgroup.events", "populated 0"); }
  bool kill_file_;
};

// cgroup v1 freezer: freeze so the list cannot change under us, kill each, thaw so the
// killed processes can die.
class FreezerJob final : public JobCgroup {
 public:
  explicit FreezerJob(std::string path) : JobCgroup(std::move(path)) {}

  void kill_all() override {
    write_text_file(path_ + "/freezer.state", "FROZEN");
    poll_until([&] { return file_has_line(path_ + "/freezer.state", "FROZEN"); }, kFreezeWait);
    kill_listed();
    write_text_file(path_ + "/freezer.state", "THAWED");
  }
};

}  // namespace

std::optional<std::string> read_text_file(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  close(fd);
  if (n < 0) return std::nullopt;
  return out;
}

bool write_text_file(const std::string& path, std::string_view text) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  int e = errno;
  close(fd);
  errno = e;
  return ok;
}

std::optional<CgroupCpu> parse_cpu_stat(std::string_view text) {
  CgroupCpu c;
  bool have_usage = false;
  std::string copy(text);
  for (char* line = copy.data(); line && *line;) {
    char* next = std::strchr(line, '\n');
    if (next) *next++ = '\0';
    unsigned long long v = 0;
    if (std::sscanf(line, "usage_usec %llu", &v) == 1) {
      c.usage_usec = v;
      have_usage = true;
    } else if (std::sscanf(line, "user_usec %llu", &v) == 1) {
      c.user_usec = v;
    } else if (std::sscanf(line, "system_usec %llu", &v) == 1) {
      c.system_usec = v;
    }
    line = next;
  }
  if (!have_usage) return std::nullopt;
  return c;
}

std::optional<std::string> job_cgroup_dir(std::string_view proc_pid_cgroup, const Cgroup2Place& place,
                                          pid_t agent_pid) {
  // The v2 line is "0::/path"; v1 lines (hybrid set-ups) name their controllers.
  size_t at = proc_pid_cgroup.rfind("0::", 0) == 0 ? 0 : proc_pid_cgroup.find("\n0::");
  if (at == std::string_view::npos) return std::nullopt;
  at += at == 0 ? 3 : 4;
  auto path = proc_pid_cgroup.substr(at, proc_pid_cgroup.find('\n', at) - at);
  const std::string own = place.own == "/" ? "" : place.own;
  const std::string prefix = own + "/loadlab/job-" + std::to_string(agent_pid) + "-";
  if (path.rfind(prefix, 0) != 0) return std::nullopt;
  auto rest = path.substr(prefix.size());
  if (rest.empty() || rest.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
  return place.folder(path);
}

std::unique_ptr<V1JobFolder> V1JobFolder::create(
    const std::string& jobs_dir, const std::string& kind,
    const std::function<bool(const std::string& path, std::string& what)>& setup) {
  static std::atomic<uint64_t> next{1};
  std::unique_ptr<V1JobFolder> job(new V1JobFolder());
  job->kind_ = kind;
  for (int attempt = 0;; ++attempt) {
    job->path_ = jobs_dir + "/job-" + std::to_string(getpid()) + "-" + std::to_string(next++);
    if (mkdir(job->path_.c_str(), 0755) == 0) break;
    if (errno != EEXIST || attempt == 100) throw system_failure("cannot make " + kind + " " + job->path_);
  }
  std::string what;
  if (!setup(job->path_, what)) {
    std::string why = std::strerror(errno);
    job->remove();
    throw EnvironmentError("cannot " + what + ": " + why);
  }
  job->procs_fd_ = open((job->path_ + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
  if (job->procs_fd_ < 0) {
    std::string why = std::strerror(errno);
    job->remove();
    throw EnvironmentError("cannot open " + job->path_ + "/cgroup.procs: " + why);
  }
  return job;
}

V1JobFolder::~V1JobFolder() {
  if (procs_fd_ >= 0) close(procs_fd_);
  remove();
}

bool V1JobFolder::remove() {
  if (removed_) return true;
  // The job's processes have been killed and reaped by now; a folder with a dying task may
  // refuse for a moment.
  for (int i = 0; i < 100; ++i) {
    if (rmdir(path_.c_str()) == 0 || errno == ENOENT) return removed_ = true;
    if (errno != EBUSY) break;
    usleep(10000);
  }
  component_logger("proc")->warn("cannot remove {} {}: {}", kind_, path_, std::strerror(errno));
  return false;
}

std::string probe_join(int procs_fd, const std::string& path) {
  pid_t pid = fork_own_child();
  if (pid == 0) _exit(write(procs_fd, "0", 1) == 1 ? 0 : (errno & 0xff));
  if (pid < 0) return std::string("fork: ") + std::strerror(errno);
  int status = 0;
  waitpid(pid, &status, 0);  // our own unreaped child: its pid is still ours
  release_own_child(pid);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return "cannot move a process into " + path + ": " + std::strerror(WEXITSTATUS(status));
  return "";
}

JobCgroup::JobCgroup(std::string path) : path_(std::move(path)) {}

JobCgroup::~JobCgroup() {
  if (procs_fd_ >= 0) close(procs_fd_);
}

std::unique_ptr<JobCgroup> JobCgroup::create(const ProcControl& control) {
  if (control.mode == ProcControlMode::kProcessGroup) return nullptr;
  static std::atomic<uint64_t> next{1};
  std::string path;
  // A name may be taken by what an earlier agent with the same pid left behind: skip it.
  for (int attempt = 0;; ++attempt) {
    path = control.jobs_dir + "/job-" + std::to_string(getpid()) + "-" + std::to_string(next++);
    if (mkdir(path.c_str(), 0755) == 0) break;
    if (errno != EEXIST || attempt == 100) throw system_failure("cannot make job cgroup " + path);
  }
  std::unique_ptr<JobCgroup> job;
  if (control.mode == ProcControlMode::kCgroup2)
    job = std::make_unique<Cgroup2Job>(path, control.cgroup_kill);
  else
    job = std::make_unique<FreezerJob>(path);
  job->procs_fd_ = open((path + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
  if (job->procs_fd_ < 0) {
    int e = errno;
    job->remove();
    throw system_failure("cannot open " + path + "/cgroup.procs", e);
  }
  return job;
}

std::vector<pid_t> JobCgroup::pids() const {
  std::vector<std::string> dirs{path_};
  std::vector<pid_t> out;
  for (size_t i = 0; i < dirs.size(); ++i) {
    nested_dirs(dirs[i], dirs);
    auto text = read_text_file(dirs[i] + "/cgroup.procs");
    if (!text) continue;
    for (const char* p = text->c_str(); *p;) {
      char* end;
      long v = std::strtol(p, &end, 10);
      if (end == p) break;
      if (v > 0) out.push_back(static_cast<pid_t>(v));
      p = end;
    }
  }
  return out;
}

void JobCgroup::kill_listed() const {
  for (pid_t p : pids()) kill(p, SIGKILL);
}

bool JobCgroup::wait_empty(std::chrono::milliseconds timeout) const {
  return poll_until([&] { return empty(); }, timeout);
}

bool JobCgroup::remove() {
  std::vector<std::string> dirs{path_};
  for (size_t i = 0; i < dirs.size(); ++i) nested_dirs(dirs[i], dirs);
  bool ok = true;
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {  // children before their parent
    if (rmdir(it->c_str()) == 0 || errno == ENOENT) continue;
    component_logger("proc")->warn("cannot remove cgroup {}: {}", *it, std::strerror(errno));
    ok = false;
  }
  return ok;
}

}  // namespace loadlab::agent
