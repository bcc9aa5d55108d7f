// A job cannot reach the agent that started it (issue 44, items 1 to 4), tried through a real
// loadlab-agent process: as root and as a non-root user holding the capabilities
// docs/security.md names (dropped to with setpriv), with and without --job-user. A catalog
// target (a Python probe that then execs loadlab-target) writes down what it holds: its
// capability sets, whether it can become the agent's user again, its descriptors; it leaves a
// daemon that took another session and an empty environment (`exec env -i`); the cell runs to
// its end, and nothing of the job is left.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "agent_calls.hpp"
#include "loadlab/agent/proc_control.hpp"
#include "loadlab/shared/folded_stacks.hpp"
#include "loadlab/shared/json_input.hpp"
#include "test_support.hpp"

namespace loadlab::agent {
namespace {

using namespace std::chrono_literals;
using loadlab::testing::AgentProcess;
using loadlab::testing::bin;
using loadlab::testing::Hosted;
using loadlab::testing::load_to;
using loadlab::testing::process_running;
using loadlab::testing::run_load;
using loadlab::testing::stub_for;
using loadlab::testing::TempDir;
using ::testing::HasSubstr;

// The non-root agent's uid: one no user of the machine has (setpriv takes a number).
constexpr uid_t kAgentUid = 64321;
constexpr const char* kNobody = "nobody";

#define SKIP_UNLESS_ROOT() \
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run the agent and its jobs as other users (CI is root)"

// The probe: notes what the job holds, leaves a daemon, then becomes the target.
constexpr const char* kProbe = R"(import json, os, sys, time
out, agent_uid, target = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
fds = {}
for fd in os.listdir('/proc/self/fd'):
    try:
        fds[fd] = os.readlink('/proc/self/fd/' + fd)
    except OSError:
        pass
fds = {k: v for k, v in fds.items() if not v.startswith('/proc/')}  # listdir's own
caps = {l.split(':')[0]: l.split()[1] for l in open('/proc/self/status') if l.startswith('Cap')}
try:
    os.setuid(agent_uid)
    back = 'became uid %d' % agent_uid
except PermissionError:
    back = 'refused'
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        with open(out + '/daemon.tmp', 'w') as f:
            f.write(str(os.getpid()))
        os.rename(out + '/daemon.tmp', out + '/daemon')
        os.execv('/usr/bin/env', ['env', '-i', '/bin/sleep', '1000'])
    os._exit(0)
os.wait()
for _ in range(200):  # the daemon has said who it is before the probe goes on (or exits)
    if os.path.exists(out + '/daemon'):
        break
    time.sleep(0.05)
with open(out + '/probe.json', 'w') as f:
    json.dump({'uid': os.getuid(), 'caps': caps, 'back': back, 'fds': fds}, f)
if os.environ.get('PROBE_EXIT_EARLY'):
    sys.exit(0)
os.execv(target[0], target)
)";

// A folder every user can reach, with copies of the programs (as an installed agent's are),
// the probe, its catalog, and `out`, where the probe writes.
struct Lab {
  TempDir dir;
  std::filesystem::path bin_dir = dir.path() / "bin";
  std::filesystem::path out = dir.path() / "out";
  std::string catalog;

  Lab() {
    namespace fs = std::filesystem;
    fs::permissions(dir.path(), fs::perms(0755));
    fs::create_directories(bin_dir);
    fs::create_directories(out);
    fs::permissions(out, fs::perms(0777));
    for (const char* b : {"loadlab-target", "loadlab-load"}) fs::copy_file(bin(b), bin_dir / b);
    const auto probe = dir.file("probe.py", kProbe);
    fs::permissions(probe, fs::perms(0644));
    auto entry = [&](bool exit_early) {
      std::vector<std::string> argv = {"/usr/bin/python3",
                                       probe,
                                       out.string(),
                                       std::to_string(kAgentUid),
                                       (bin_dir / "loadlab-target").string(),
                                       "--listen",
                                       "{host}:{port}",
                                       "--threads",
                                       "1"};
      if (exit_early) argv.insert(argv.begin(), {"/usr/bin/env", "PROBE_EXIT_EARLY=1"});
      return nlohmann::json{{"argv", argv}, {"readiness", {{"type", "http"}, {"path", "/"}}}};
    };
    // "mover": a process of the job writes itself into the cgroup named in out/agent_cgroup.
    const std::string o = out.string();
    nlohmann::json mover = {{"argv",
                             {"/bin/sh", "-c",
                              "sleep 1000 & echo $! > " + o + "/mover; if echo $! > \"$(cat " + o +
                                  "/agent_cgroup)/cgroup.procs\"; then echo moved; else echo refused; fi > " +
                                  o + "/moved; exec " + (bin_dir / "loadlab-target").string() +
                                  " --listen {host}:{port} --threads 1"}},
                            {"readiness", {{"type", "http"}, {"path", "/"}}}};
    catalog = dir.file(
        "catalog.json",
        nlohmann::json{{"targets", {{"probe", entry(false)}, {"early", entry(true)}, {"mover", mover}}}}
            .dump());
    fs::permissions(catalog, fs::perms(0644));
  }

  // The agent's command line before its flags: as root, or as kAgentUid with `caps` (setpriv's
  // spelling: "setuid,setgid,kill,chown") in its inheritable, ambient and bounding sets.
  // A lab file of one agent at `address`, taking both roles.
  std::string lab_file(const std::string& address) const {
    return dir.file(
        "lab.json",
        nlohmann::json{{"agents", {{{"name", "solo"}, {"address", address}, {"roles", {"target", "load"}}}}}}
            .dump());
  }

  std::vector<std::string> prefix(bool root, const std::string& caps) const {
    if (root) return {};
    std::string plus;
    for (size_t at = 0; at < caps.size();) {
      const size_t comma = std::min(caps.find(',', at), caps.size());
      plus += ",+" + caps.substr(at, comma - at);
      at = comma + 1;
    }
    return {"/usr/bin/setpriv",
            "--reuid=" + std::to_string(kAgentUid),
            "--regid=" + std::to_string(kAgentUid),
            "--clear-groups",
            "--inh-caps=-all" + plus,
            "--ambient-caps=-all" + plus,
            "--bounding-set=-all" + plus,
            "--"};
  }

  // The first line of out/NAME ("" until there is one).
  std::string line(const std::string& name) const {
    std::ifstream f(out / name);
    std::string text;
    std::getline(f, text);
    return text;
  }

  nlohmann::json probe() const {
    std::ifstream f(out / "probe.json");
    return nlohmann::json::parse(f, nullptr, false);
  }

  // The daemon's pid, once the probe's grandchild wrote it (at most 5 s).
  pid_t daemon() const {
    for (int i = 0; i < 50; ++i) {
      std::ifstream f(out / "daemon");
      if (pid_t p = 0; f >> p) return p;
      std::this_thread::sleep_for(100ms);
    }
    return 0;
  }
};

// A loadlab-agent (the build's, which every user can reach) running the lab's copies of the
// target and the load worker, with `flags`.
std::unique_ptr<AgentProcess> lab_agent(const Lab& lab, const std::vector<std::string>& prefix,
                                        std::vector<std::string> flags) {
  flags.insert(flags.end(), {"--catalog", lab.catalog, "--bin-dir", lab.bin_dir.string()});
  return std::make_unique<AgentProcess>("iso", "127.0.0.1:0", flags, prefix);
}

// Waits up to 5 s for `pid` to be gone; kills it (the test's cleanup, by pid) if it is not.
bool gone(pid_t pid) {
  for (int i = 0; i < 50 && process_running(pid); ++i) std::this_thread::sleep_for(100ms);
  if (!process_running(pid)) return true;
  kill(pid, SIGKILL);
  return false;
}

// The processes of `uid` running now.
std::vector<pid_t> processes_of(uid_t uid) {
  std::vector<pid_t> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const auto name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    struct stat st {};
    if (stat(e.path().c_str(), &st) == 0 && st.st_uid == uid && process_running(std::stoi(name)))
      out.push_back(std::stoi(name));
  }
  return out;
}

struct Setup {
  const char* name;
  bool root;
  bool job_user;
};

// The whole cell: the probe hosted, 200 requests through the agent's load worker, the target
// closed; then what the job held, and what is left of it.
void run_cell_and_check(const Setup& s) {
  Lab lab;
  std::vector<std::string> flags = {"--metrics-listen", "127.0.0.1:0"};
  if (s.job_user) flags.insert(flags.end(), {"--job-user", kNobody});
  auto agent = lab_agent(lab, lab.prefix(s.root, "setuid,setgid,kill,chown"), flags);
  ASSERT_NE(agent->address, "") << agent->proc->output_tail();
  auto stub = stub_for(agent->address, grpc::InsecureChannelCredentials());
  v1::TargetSpec spec;
  spec.set_catalog("probe");
  Hosted h(*stub, spec);
  ASSERT_NE(h.endpoint, "") << h.close().error_message() << "\n" << agent->proc->output_tail();
  const pid_t daemon = lab.daemon();
  ASSERT_GT(daemon, 0);
  auto load = load_to(h.endpoint, 200);
  load.set_method("POST");
  load.set_body("a body the agent hands the job as a file");
  const auto r = run_load(*stub, load);
  EXPECT_TRUE(r.status.ok()) << r.status.error_message() << "\n" << agent->proc->output_tail();
  EXPECT_EQ(r.requests, 200u);
  EXPECT_TRUE(h.close().ok()) << agent->proc->output_tail();

  const auto probe = lab.probe();
  ASSERT_TRUE(probe.is_object()) << "the probe wrote nothing";
  EXPECT_EQ(probe["uid"], s.job_user ? 65534 : (s.root ? 0 : kAgentUid));
  for (const char* set : {"CapInh", "CapPrm", "CapEff", "CapAmb"})
    EXPECT_EQ(probe["caps"][set], "0000000000000000") << set;
  if (s.root) EXPECT_EQ(probe["caps"]["CapBnd"], "0000000000000000") << "root can drop the bounding set";
  if (s.job_user) EXPECT_EQ(probe["back"], "refused") << "the job could become the agent's user again";
  EXPECT_EQ(probe["fds"].size(), 3u) << "descriptors beyond stdio reached the job: " << probe["fds"].dump();
  EXPECT_TRUE(gone(daemon)) << "the job's `env -i` daemon outlived it";
  if (s.job_user)
    EXPECT_EQ(processes_of(65534), std::vector<pid_t>{}) << "processes of the job user are left";
}

class JobIsolation : public ::testing::TestWithParam<Setup> {};

// A whole cell, and the job holds no capability, no way back and no descriptor of the agent,
// and leaves nothing: as root, as root with a job user, and as a non-root agent with the
// capabilities docs/security.md names and a job user.
TEST_P(JobIsolation, ACellRunsAndItsJobHoldsNothingOfTheAgentAndLeavesNothing) {
  SKIP_UNLESS_ROOT();
  run_cell_and_check(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Agents, JobIsolation,
                         ::testing::Values(Setup{"Root", true, false}, Setup{"RootWithJobUser", true, true},
                                           Setup{"NonRootWithJobUser", false, true}),
                         [](const auto& info) { return std::string(info.param.name); });

// The controller runs a timed, delay-bound cell on a non-root agent with a job user: the load
// worker (another user's process) is told its window by a signal, which needs CAP_KILL. Two
// closed loops on a 5 ms server give at most 2 / 5 ms = 400 req/s; the lower bound only says
// the window ran (with both cores busy it measured 201). Nothing of the job user is left.
TEST(NonRootAgent, RunsATimedCellFromTheControllerWithAJobUser) {
  SKIP_UNLESS_ROOT();
  Lab lab;
  auto agent = lab_agent(lab, lab.prefix(false, "setuid,setgid,kill,chown"), {"--job-user", kNobody});
  ASSERT_NE(agent->address, "") << agent->proc->output_tail();
  const auto lab_file = lab.lab_file(agent->address);
  const auto s = lab.dir.file("s.json", R"({"name": "nonroot", "targets": [{"name": "b", "builtin": "hello",
      "server_threads": 1}], "matrix": {"delay_ms": [5], "threads": [2]},
      "load": {"duration_s": 1.5, "warmup_s": 0.3}, "execution": {"retries": 0}})");
  const auto out = lab.dir.path() / "run";
  const auto r =
      loadlab::testing::run_command({bin("loadlab"), "run", s, "--lab", lab_file, "--out", out.string()});
  ASSERT_EQ(r.code, 0) << r.output_tail << "\n" << agent->proc->output_tail();
  const auto cells = loadlab::testing::result_cells(out / "result.json");
  ASSERT_EQ(cells.size(), 1u);
  ASSERT_TRUE(cells[0].ok()) << cells[0].error();
  const auto& rep = cells[0].repetitions(0);
  EXPECT_GT(rep.qps(), 100);
  EXPECT_LT(rep.qps(), 410);
  EXPECT_EQ(rep.errors(), 0u);
  EXPECT_EQ(processes_of(65534), std::vector<pid_t>{}) << "processes of the job user are left";
}

// A profiled cell (docs/profiles.md) on a non-root agent whose jobs run as another user: with
// CAP_PERFMON, perf (the agent's helper) samples the job's processes and names their functions;
// without it (whatever kernel.perf_event_paranoid says), the cell runs and its profile says why
// there is none.
TEST(NonRootAgent, ProfilesAJobUsersProcessesWithCapPerfmonAndSaysWhyWithout) {
  SKIP_UNLESS_ROOT();
  for (const bool perfmon : {true, false}) {
    SCOPED_TRACE(perfmon ? "with CAP_PERFMON" : "without CAP_PERFMON");
    Lab lab;
    auto agent = lab_agent(
        lab, lab.prefix(false, std::string("setuid,setgid,kill,chown") + (perfmon ? ",perfmon" : "")),
        {"--job-user", kNobody});
    ASSERT_NE(agent->address, "") << agent->proc->output_tail();
    const auto lab_file = lab.lab_file(agent->address);
    const auto s =
        lab.dir.file("s.json", R"({"name": "profiled", "targets": [{"name": "b", "builtin": "hello",
        "server_threads": 1}], "matrix": {"threads": [1]}, "load": {"duration_s": 1.5, "warmup_s": 0.3},
        "execution": {"retries": 0}})");
    const auto out = lab.dir.path() / "run";
    const auto r = loadlab::testing::run_command(
        {bin("loadlab"), "run", s, "--profile", "--lab", lab_file, "--out", out.string()});
    ASSERT_EQ(r.code, 0) << r.output_tail << "\n" << agent->proc->output_tail();
    const auto cells = loadlab::testing::result_cells(out / "result.json");
    ASSERT_EQ(cells.size(), 1u);
    ASSERT_TRUE(cells[0].ok()) << cells[0].error();
    const auto& server = cells[0].repetitions(0).server().profile();
    if (!perfmon) {
      EXPECT_EQ(server.unavailable(),
                "the jobs run as another user (--job-user) and the agent has neither "
                "CAP_PERFMON nor CAP_SYS_ADMIN");
      EXPECT_TRUE(server.file().empty());
      continue;
    }
    ASSERT_FALSE(server.file().empty()) << server.unavailable();
    EXPECT_TRUE(server.kernel());
    const auto stacks = parse_folded(read_text_file((out / server.file()).string()));
    uint64_t named = 0;  // samples with a user-space frame perf named (not "[unknown]", not "_[k]")
    for (const auto& [stack, count] : stacks) {
      std::istringstream frames(stack);
      for (std::string f; std::getline(frames, f, ';');)
        if (f != "loadlab-target" && f.front() != '[' && f.find("_[k]") == std::string::npos) {
          named += count;
          break;
        }
    }
    EXPECT_GT(total_samples(stacks), 100u);
    EXPECT_GT(named, total_samples(stacks) / 2) << folded_text(stacks).substr(0, 2000);
  }
  EXPECT_EQ(processes_of(65534), std::vector<pid_t>{}) << "processes of the job user are left";
}

// The job's first process exits at once, leaving its `env -i` daemon (another session, no
// mark): the daemon is killed when the agent ends the job, on every process-control path.
TEST(JobEscape, ADaemonThatOutlivesItsJobsFirstProcessIsKilledWithTheJob) {
  SKIP_UNLESS_ROOT();
  for (bool job_user : {false, true}) {
    Lab lab;
    std::vector<std::string> flags;
    if (job_user) flags = {"--job-user", kNobody};
    auto agent = lab_agent(lab, {}, flags);
    ASSERT_NE(agent->address, "") << agent->proc->output_tail();
    auto stub = stub_for(agent->address, grpc::InsecureChannelCredentials());
    v1::TargetSpec spec;
    spec.set_catalog("early");
    Hosted h(*stub, spec);  // the target exits before it is ready: the stream ends
    (void)h.close();
    const pid_t daemon = lab.daemon();
    ASSERT_GT(daemon, 0);
    EXPECT_TRUE(gone(daemon)) << "the daemon outlived its job (job user: " << job_user << ")\n"
                              << agent->proc->output_tail();
  }
}

// The cgroup v2 folder of `pid` ("" where there is none).
std::string cgroup2_folder(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/cgroup");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("0::", 0) == 0 && cgroup2_place())
      return cgroup2_place()->folder(line.substr(3)).value_or("");
  return "";
}

// With --job-user, a process of the job cannot write itself into the agent's cgroup (out of
// its job's cgroup.kill); it is refused, and killed with its job.
TEST(JobEscape, AJobUsersProcessCannotMoveIntoTheAgentsCgroupAndIsKilledWithItsJob) {
  SKIP_UNLESS_ROOT();
  if (proc_control().mode != ProcControlMode::kCgroup2)
    GTEST_SKIP() << "jobs are not in cgroup v2 cgroups here (" << proc_control().reason << ")";
  Lab lab;
  auto agent = lab_agent(lab, {}, {"--job-user", kNobody});
  ASSERT_NE(agent->address, "") << agent->proc->output_tail();
  const auto agent_cgroup = cgroup2_folder(agent->proc->pid());
  ASSERT_NE(agent_cgroup, "");
  lab.dir.file("out/agent_cgroup", agent_cgroup);
  auto stub = stub_for(agent->address, grpc::InsecureChannelCredentials());
  v1::TargetSpec spec;
  spec.set_catalog("mover");
  Hosted h(*stub, spec);
  ASSERT_NE(h.endpoint, "") << agent->proc->output_tail();
  EXPECT_EQ(lab.line("moved"), "refused") << "a job of the job user moved into " << agent_cgroup;
  const pid_t mover = std::stoi("0" + lab.line("mover"));
  ASSERT_GT(mover, 0);
  EXPECT_NE(cgroup2_folder(mover), agent_cgroup);
  EXPECT_TRUE(h.close().ok());
  EXPECT_TRUE(gone(mover)) << "the job's process outlived it";
}

// Whether `needle` is in the readable memory of `pid` (root reads /proc/PID/mem).
bool in_memory(pid_t pid, const std::string& needle) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  const int mem = open(("/proc/" + std::to_string(pid) + "/mem").c_str(), O_RDONLY | O_CLOEXEC);
  if (mem < 0) return false;
  std::string chunk;
  bool found = false;
  for (std::string line; !found && std::getline(maps, line);) {
    unsigned long long start = 0, end = 0;
    char perms[5] = {};
    if (sscanf(line.c_str(), "%llx-%llx %4s", &start, &end, perms) != 3 || perms[0] != 'r') continue;
    if (line.find("[vvar]") != std::string::npos || line.find("[vsyscall]") != std::string::npos) continue;
    std::string carry;
    for (unsigned long long at = start; !found && at < end;) {
      chunk.resize(std::min<unsigned long long>(1 << 20, end - at));
      const ssize_t n = pread(mem, chunk.data(), chunk.size(), static_cast<off_t>(at));
      if (n <= 0) break;
      chunk.resize(static_cast<size_t>(n));
      found = (carry + chunk).find(needle) != std::string::npos;
      carry = chunk.substr(chunk.size() - std::min(chunk.size(), needle.size()));
      at += static_cast<unsigned long long>(n);
    }
  }
  close(mem);
  return found;
}

// Whether a process of `uid` (forked here, then switched) may open /proc/PID/mem.
bool user_opens_memory(uid_t uid, pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/mem";
  const pid_t child = fork();
  if (child == 0) {  // only async-signal-safe calls: this process has other threads
    if (setresgid(uid, uid, uid) != 0 || setresuid(uid, uid, uid) != 0) _exit(3);
    _exit(open(path.c_str(), O_RDONLY) >= 0 ? 0 : 1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 3) << "could not become uid " << uid;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// The token is not kept in clear: before its first call the agent's memory holds no copy of
// it (the agent's name, given the same way, is found there: the search works). And the agent
// is not dumpable: a process of its own user cannot read its memory.
TEST(AgentMemory, HoldsNoCopyOfTheTokenAndItsOwnUserCannotReadIt) {
  SKIP_UNLESS_ROOT();
  TempDir dir;
  std::filesystem::permissions(dir.path(), std::filesystem::perms(0755));
  const std::string token = "tok-" + std::to_string(getpid()) + "-e5b1c0d2a9f84c7e9b3a6d1f0c2e4a8b";
  const std::string name = "agent-name-" + std::to_string(getpid()) + "-7c1d9e2f";
  const auto token_file = dir.secret("token", token + "\n");
  for (bool root : {true, false}) {
    std::vector<std::string> prefix;
    if (!root)
      prefix = {"/usr/bin/setpriv", "--reuid=" + std::to_string(kAgentUid),
                "--regid=" + std::to_string(kAgentUid), "--clear-groups", "--"};
    const uid_t owner = root ? 0 : kAgentUid;  // the agent wants its own token file
    ASSERT_EQ(chown(token_file.c_str(), owner, owner), 0);
    AgentProcess agent(name, "127.0.0.1:0", {"--token-file", token_file}, prefix);
    ASSERT_NE(agent.address, "") << agent.proc->output_tail();
    const pid_t pid = agent.proc->pid();
    EXPECT_TRUE(in_memory(pid, name)) << "the search does not work";
    EXPECT_FALSE(in_memory(pid, token)) << "the token is in the agent's memory (root: " << root << ")";
    if (!root) EXPECT_FALSE(user_opens_memory(kAgentUid, pid)) << "the agent's own user read its memory";
  }
}

// kernel.perf_event_paranoid at `level` while it lives, then as it was: a setting of the whole
// machine, which root's processes (every other profile of the suite) do not heed, and the test
// holds the machine_state lock as a root test. set() false when it could not be written (a
// read-only /proc/sys).
class ParanoidLevel {
 public:
  explicit ParanoidLevel(int level) {
    std::ifstream("/proc/sys/kernel/perf_event_paranoid") >> was_;
    std::ofstream("/proc/sys/kernel/perf_event_paranoid") << level;
    int now = -100;
    std::ifstream("/proc/sys/kernel/perf_event_paranoid") >> now;
    set_ = now == level;
  }
  bool set() const { return set_; }
  ~ParanoidLevel() { std::ofstream("/proc/sys/kernel/perf_event_paranoid") << was_; }
  ParanoidLevel(const ParanoidLevel&) = delete;
  ParanoidLevel& operator=(const ParanoidLevel&) = delete;

 private:
  int was_ = 2;
  bool set_ = false;
};

// A non-root agent without capabilities whose jobs are its own processes: at paranoid 2 perf
// samples their user space only (no kernel frame, `kernel` false); at 3 (Debian's "no perf
// for the unprivileged") the agent says so at its start and the cell runs without a profile.
TEST(NonRootAgent, ProfilesItsOwnJobsUserSpaceAtParanoid2AndSaysWhyAt3) {
  SKIP_UNLESS_ROOT();
  for (const int level : {2, 3}) {
    SCOPED_TRACE("kernel.perf_event_paranoid " + std::to_string(level));
    const ParanoidLevel paranoid(level);
    if (!paranoid.set()) GTEST_SKIP() << "kernel.perf_event_paranoid cannot be written here";
    Lab lab;
    auto agent = lab_agent(lab, lab.prefix(false, ""), {});
    ASSERT_NE(agent->address, "") << agent->proc->output_tail();
    const auto s =
        lab.dir.file("s.json", R"({"name": "paranoid", "targets": [{"name": "b", "builtin": "hello",
        "server_threads": 1}], "matrix": {"threads": [1]}, "load": {"duration_s": 1.5, "warmup_s": 0.3},
        "execution": {"retries": 0}})");
    const auto out = lab.dir.path() / "run";
    const auto r = loadlab::testing::run_command({bin("loadlab"), "run", s, "--profile", "--lab",
                                                  lab.lab_file(agent->address), "--out", out.string()});
    ASSERT_EQ(r.code, 0) << r.output_tail << "\n" << agent->proc->output_tail();
    const auto cells = loadlab::testing::result_cells(out / "result.json");
    ASSERT_EQ(cells.size(), 1u);
    ASSERT_TRUE(cells[0].ok()) << cells[0].error();
    const auto& server = cells[0].repetitions(0).server().profile();
    if (level == 3) {
      EXPECT_EQ(server.unavailable(),
                "kernel.perf_event_paranoid is 3 and the agent has neither CAP_PERFMON nor CAP_SYS_ADMIN");
      EXPECT_TRUE(server.file().empty());
      continue;
    }
    ASSERT_FALSE(server.file().empty()) << server.unavailable() << "\n" << agent->proc->output_tail();
    EXPECT_FALSE(server.kernel());
    const auto stacks = parse_folded(read_text_file((out / server.file()).string()));
    EXPECT_GT(total_samples(stacks), 10u);  // its user time only: most of a hello server's is the kernel's
    for (const auto& [stack, count] : stacks)
      EXPECT_EQ(stack.find("_[k]"), std::string::npos) << "a kernel frame at paranoid 2: " << stack;
  }
}

// Without the capabilities a job user needs (here CAP_KILL and CAP_CHOWN), a non-root agent
// refuses --job-user at start, naming what it lacks, instead of starting jobs it cannot stop.
TEST(JobUserCapabilities, ANonRootAgentWithoutThemRefusesJobUserNamingWhatItLacks) {
  SKIP_UNLESS_ROOT();
  Lab lab;
  auto argv = lab.prefix(false, "setuid,setgid");
  argv.insert(argv.end(), {bin("loadlab-agent"), "--job-user", kNobody, "--bin-dir", lab.bin_dir.string()});
  const auto r = loadlab::testing::run_command(argv, 20s);
  EXPECT_EQ(r.code, 2) << r.output_tail;
  EXPECT_THAT(r.output_tail,
              HasSubstr("--job-user: the agent runs as uid 64321 without CAP_KILL, CAP_CHOWN"));
}

}  // namespace
}  // namespace loadlab::agent
