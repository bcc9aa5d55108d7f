// The agent's unit booted by a real systemd, as installed (`cmake --install`), answering
// Describe over gRPC. Root only. Two ways, whichever the machine offers:
//
//   host systemd     systemd is init (/run/systemd/system exists): a runtime copy of the unit
//                    under a throwaway name in /run/systemd/system, started, checked, stopped
//                    and removed with `systemctl`.
//   namespace boot   systemd is installed but not init (a container, a sandbox): a throwaway
//                    `systemd --system` as PID 1 of new PID, mount, cgroup, UTS and IPC
//                    namespaces, in a cgroup v2 folder of its own, with a private /run and
//                    /tmp, overlays on /etc and /var (writes vanish with the namespace), and
//                    the installed tree layered over /usr, so that the unit runs exactly as
//                    the package installs it: /usr/lib/systemd/system/loadlab-agent.service,
//                    ExecStart=/usr/bin/loadlab-agent, /etc/loadlab/agent.env, User=loadlab
//                    (added to the overlay's /etc/passwd when the host has no such user).
//                    Only a minimal unit set (empty sysinit.target, basic.target, ...) is on
//                    its unit path, so nothing of the host's boot starts.
//
// Neither (not root, no systemd, no overlayfs or writable cgroup2): skipped with the reason.
#include <fcntl.h>
#include <grp.h>
#include <grpcpp/grpcpp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "deploy_support.hpp"
#include "loadlab/v1/agent.grpc.pb.h"

namespace loadlab::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string find_tool(const std::vector<std::string>& candidates) {
  for (auto& c : candidates)
    if (access(c.c_str(), X_OK) == 0) return c;
  return "";
}

// A loopback port nothing listens on now.
int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}

// The installed agent.env with the test's listen address and flags. The package's file
// must still have the line it replaces.
std::string test_agent_env(const InstalledTree& tree, int port, const std::string& flags) {
  std::string env = read_text(tree.path("etc/loadlab/agent.env"));
  for (auto [key, value] :
       {std::pair<std::string, std::string>{"LOADLAB_AGENT_LISTEN=", "127.0.0.1:" + std::to_string(port)},
        {"LOADLAB_AGENT_FLAGS=", flags}}) {
    auto at = env.find("\n" + key);
    EXPECT_NE(at, std::string::npos) << "agent.env has no " << key << " line";
    if (at == std::string::npos) continue;
    auto end = env.find('\n', at + 1);
    if (end == std::string::npos) end = env.size();
    env.replace(at + 1, end - at - 1, key + value);
  }
  return env;
}

// Describe of the agent at `address`, waiting up to `timeout` for it to answer.
grpc::Status describe(const std::string& address, std::chrono::seconds timeout, v1::AgentInfo* info) {
  auto stub = v1::Agent::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  ctx.set_wait_for_ready(true);
  return stub->Describe(&ctx, v1::DescribeRequest(), info);
}

// `systemctl show -p ...` as a map.
std::map<std::string, std::string> show(const RunOutput& out) {
  std::map<std::string, std::string> props;
  std::istringstream in(out.stdout_text);
  for (std::string line; std::getline(in, line);) {
    auto eq = line.find('=');
    if (eq != std::string::npos) props[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return props;
}

// The uid of a process ("" if gone), from /proc/PID/status (real uid).
std::string process_uid(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("Uid:", 0) == 0) {
      std::istringstream f(line.substr(4));
      std::string uid;
      f >> uid;
      return uid;
    }
  return "";
}

// Its pid in the innermost PID namespace (the last field of NSpid).
std::string process_nspid(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("NSpid:", 0) == 0) {
      std::istringstream f(line.substr(6));
      std::string last;
      for (std::string p; f >> p;) last = p;
      return last;
    }
  return "";
}

// ---- namespace boot -------------------------------------------------------------------

// The cgroup v2 hierarchy: /sys/fs/cgroup (unified) or /sys/fs/cgroup/unified (hybrid).
std::string cgroup2_root() {
  constexpr long kCgroup2Magic = 0x63677270;
  for (std::string dir : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
    struct statfs st {};
    if (statfs(dir.c_str(), &st) == 0 && static_cast<long>(st.f_type) == kCgroup2Magic) return dir;
  }
  return "";
}

// This process's cgroup v2 folder (the "0::" line of /proc/self/cgroup).
std::string own_cgroup2() {
  std::ifstream in("/proc/self/cgroup");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  return "";
}

// Enters the cgroup, then new namespaces; the new PID 1 (boot.sh) mounts and execs systemd.
// --kill-child: if unshare dies (the test killed), the namespace's init dies, and with it
// every process of the namespace.
const char* kEnterScript = R"(set -eu
cgroup=$1; shift
echo $$ > "$cgroup/cgroup.procs"
exec unshare --cgroup --pid --fork --kill-child --mount --propagation private --uts --ipc --mount-proc \
  /bin/sh "$@"
)";

// PID 1 of the namespace: private mounts, then systemd. $1 = the work folder, $2 = the
// installed prefix.
const char* kBootScript = R"(set -eu
work=$1 prefix=$2 m=$1/mnt
mount -t tmpfs -o mode=0755 loadlab-boot "$m"
mkdir -p "$m/etc-up" "$m/etc-work" "$m/var-up" "$m/var-work"
# A cgroup2 rooted at the cgroup this namespace was made in (systemd's own hierarchy).
umount -R /sys/fs/cgroup 2>/dev/null || umount -l /sys/fs/cgroup
mount -t cgroup2 cgroup2 /sys/fs/cgroup
# The package's files where the package puts them; writes to /etc and /var stay here. The
# overlay's root takes the top layer's mode: a temporary folder's 0700 would shut the
# loadlab user out of /usr (status 203/EXEC).
chmod 0755 "$prefix"
mount -t overlay overlay -o "lowerdir=$prefix:/usr" /usr
mount -t overlay overlay -o "lowerdir=/etc,upperdir=$m/etc-up,workdir=$m/etc-work" /etc
mount -t overlay overlay -o "lowerdir=/var,upperdir=$m/var-up,workdir=$m/var-work" /var
if [ -s "$work/passwd" ]; then cat "$work/passwd" >> /etc/passwd; cat "$work/group" >> /etc/group; fi
mkdir -p /etc/loadlab
cp "$work/agent.env" /etc/loadlab/agent.env
mount -t tmpfs -o mode=0755 loadlab-run /run
mkdir /run/loadlab-units /run/loadlab-generators
cp "$work"/units/* /run/loadlab-units/
ln -s /usr/lib/systemd/system/loadlab-agent.service /run/loadlab-units/loadlab-agent.service
# Enabled as `systemctl enable` does it ([Install] WantedBy=multi-user.target): it starts at boot.
mkdir /run/loadlab-units/multi-user.target.wants
ln -s /run/loadlab-units/loadlab-agent.service /run/loadlab-units/multi-user.target.wants/
# systemd as PID 1 logs to /dev/console: here, a file the test shows when something fails.
# (No journald: the unit's output goes to /dev/null.)
: > "$work/console"
mount --bind "$work/console" /dev/console
mount -t tmpfs -o mode=1777 loadlab-tmp /tmp
exec env -i container=loadlab-test PATH=/usr/sbin:/usr/bin:/sbin:/bin \
  SYSTEMD_UNIT_PATH=/run/loadlab-units SYSTEMD_GENERATOR_PATH=/run/loadlab-generators \
  SYSTEMD_ENVIRONMENT_GENERATOR_PATH=/run/loadlab-generators \
  "$SYSTEMD" --system --unit=multi-user.target --log-target=console --show-status=no \
  --default-standard-output=null --default-standard-error=null
)";

// Removes `dir` and its sub-cgroups, deepest first.
void remove_cgroup_tree(const std::string& dir) {
  std::vector<fs::path> dirs;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_directory(ec) && !it->is_symlink(ec)) dirs.push_back(it->path());
  std::sort(dirs.begin(), dirs.end(), [](auto& a, auto& b) { return a.string().size() > b.string().size(); });
  dirs.push_back(dir);
  for (auto& d : dirs) rmdir(d.c_str());
}

bool cgroup_populated(const std::string& dir) {
  return read_text(dir + "/cgroup.events").find("populated 1") != std::string::npos;
}

// Folders of earlier runs (a test killed before its cleanup) whose pid runs no more.
void sweep_stale_boots(const std::string& parent) {
  std::error_code ec;
  for (auto& e : fs::directory_iterator(parent, ec)) {
    auto name = e.path().filename().string();
    if (name.rfind("loadlab-boot-", 0) != 0) continue;
    pid_t pid = atoi(name.c_str() + 13);
    if (pid > 0 && kill(pid, 0) != 0 && !cgroup_populated(e.path())) remove_cgroup_tree(e.path());
  }
}

// The booted namespace. The destructor powers it off (SIGRTMIN+14: stop every process,
// unmount, exit), kills what is left of its cgroup, removes the cgroup, reaps unshare.
class NamespaceBoot {
 public:
  std::string cgroup;  // host path of the namespace's cgroup folder
  std::unique_ptr<agent::ChildProcess> unshare;
  pid_t init = 0;  // the namespace's PID 1 (systemd), host pid
  int init_fd = -1;

  ~NamespaceBoot() {
    if (init_fd >= 0) {
      syscall(SYS_pidfd_send_signal, init_fd, SIGRTMIN + 14, nullptr, 0);
      if (unshare && !unshare->wait_exit(10s))
        ADD_FAILURE() << "the namespace's systemd did not power off in 10 s";
      close(init_fd);
    }
    if (!cgroup.empty()) {
      std::ofstream(cgroup + "/cgroup.kill") << "1";
      for (int i = 0; i < 100 && cgroup_populated(cgroup); ++i) std::this_thread::sleep_for(50ms);
      EXPECT_FALSE(cgroup_populated(cgroup)) << "processes left in " << cgroup;
    }
    if (unshare) unshare->terminate(100ms);
    if (!cgroup.empty()) {
      remove_cgroup_tree(cgroup);
      EXPECT_FALSE(fs::exists(cgroup)) << cgroup;
    }
  }

  // `systemctl ARGS` against this namespace's systemd.
  RunOutput systemctl(const std::vector<std::string>& args, std::chrono::seconds timeout = 30s) const {
    std::vector<std::string> argv{nsenter_, "--target", std::to_string(init), "--mount",
                                  "--pid",  "--",       "systemctl"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_command(argv, timeout);
  }
  std::string nsenter_;
};

// Why the namespace boot cannot run here ("" if it can).
std::string namespace_boot_missing(const std::string& systemd, const std::string& unshare,
                                   const std::string& nsenter) {
  if (systemd.empty()) return "no systemd binary (/lib/systemd/systemd)";
  if (unshare.empty() || nsenter.empty()) return "no unshare or nsenter (util-linux)";
  if (!filesystem_supported("overlay")) return "no overlay file system";
  if (cgroup2_root().empty()) return "no cgroup v2 hierarchy";
  return "";
}

// The minimal unit set: empty stand-ins for the targets the agent's unit (and its default
// dependencies) name, so that nothing of the host's boot is pulled in.
void write_minimal_units(const fs::path& dir) {
  fs::create_directories(dir);
  for (std::string t :
       {"sysinit", "basic", "shutdown", "network", "network-online", "network-pre", "multi-user", "default"})
    std::ofstream(dir / (t + ".target"))
        << "[Unit]\nDescription=" << t << " (loadlab boot test)\nDefaultDependencies=no\n";
  std::ofstream(dir / "system.slice")
      << "[Unit]\nDescription=system.slice (loadlab boot test)\nDefaultDependencies=no\n";
}

// A free uid/gid (the same number) in the system range, for the overlay's loadlab user.
unsigned free_system_id() {
  for (unsigned id = 999; id > 100; --id)
    if (!getpwuid(id) && !getgrgid(id)) return id;
  return 0;
}

// ---- the test ---------------------------------------------------------------------------

TEST(SystemdBoot, AgentUnitStartsAndAnswersDescribe) {
  if (geteuid() != 0) GTEST_SKIP() << "not root: systemd cannot boot the agent's unit";
  const bool host_systemd = fs::is_directory("/run/systemd/system");
  const std::string systemd = find_tool({"/lib/systemd/systemd", "/usr/lib/systemd/systemd"});
  const std::string systemctl = find_tool({"/usr/bin/systemctl", "/bin/systemctl"});
  const std::string unshare_bin = find_tool({"/usr/bin/unshare", "/bin/unshare"});
  const std::string nsenter = find_tool({"/usr/bin/nsenter", "/bin/nsenter"});
  if (systemctl.empty()) GTEST_SKIP() << "no systemctl: no systemd to boot the unit";

  InstalledTree tree;
  ASSERT_TRUE(fs::is_regular_file(tree.path("lib/systemd/system/loadlab-agent.service")));
  const std::string unit_text = read_text(tree.path("lib/systemd/system/loadlab-agent.service"));
  ASSERT_NE(unit_text.find("\nWantedBy=multi-user.target\n"), std::string::npos)
      << "enabled as the test assumes";
  const int port = free_port();
  ASSERT_GT(port, 0);
  const std::string address = "127.0.0.1:" + std::to_string(port);
  const std::string name = "systemd-boot-test";
  TempDir work;

  if (host_systemd) {
    // ---- systemd is init: a throwaway runtime unit ----
    std::cout << "[boot] systemd is init (/run/systemd/system): a runtime unit\n";
    const std::string unit = "loadlab-agent-test-" + std::to_string(getpid()) + ".service";
    // PrivateTmp hides /tmp from the service: the binary and env file go under /run.
    const fs::path rundir = "/run/loadlab-agent-test-" + std::to_string(getpid());
    struct Cleanup {
      std::string systemctl, unit;
      fs::path rundir;
      ~Cleanup() {
        run_command({systemctl, "stop", unit}, 30s);
        fs::remove("/run/systemd/system/" + unit);
        run_command({systemctl, "daemon-reload"}, 60s);
        run_command({systemctl, "reset-failed", unit}, 30s);
        fs::remove_all(rundir);
      }
    } cleanup{systemctl, unit, rundir};
    fs::create_directories(rundir);
    fs::copy_file(tree.path("bin/loadlab-agent"), rundir / "loadlab-agent");
    std::ofstream(rundir / "agent.env") << test_agent_env(tree, port, "--name " + name);
    std::string text = unit_text;
    auto replace = [&](const std::string& from, const std::string& to) {
      auto at = text.find(from);
      ASSERT_NE(at, std::string::npos) << from;
      text.replace(at, from.size(), to);
    };
    replace("ExecStart=/usr/bin/loadlab-agent ", "ExecStart=" + (rundir / "loadlab-agent").string() + " ");
    replace("EnvironmentFile=-/etc/loadlab/agent.env", "EnvironmentFile=" + (rundir / "agent.env").string());
    std::string user = "loadlab";
    if (!getpwnam("loadlab")) {
      struct passwd* nobody = getpwnam("nobody");
      ASSERT_NE(nobody, nullptr);
      struct group* g = getgrgid(nobody->pw_gid);
      ASSERT_NE(g, nullptr);
      std::cout << "[boot] no loadlab user on this host: the copy runs as nobody:" << g->gr_name << "\n";
      replace("\nUser=loadlab\n", "\nUser=nobody\n");
      replace("\nGroup=loadlab\n", std::string("\nGroup=") + g->gr_name + "\n");
      user = "nobody";
    }
    std::ofstream("/run/systemd/system/" + unit) << text;
    auto reload = run_command({systemctl, "daemon-reload"}, 60s);
    ASSERT_EQ(reload.code, 0) << reload.output_tail;
    auto start = run_command({systemctl, "start", unit}, 30s);
    ASSERT_EQ(start.code, 0) << start.output_tail;
    v1::AgentInfo info;
    auto st = describe(address, 15s, &info);
    ASSERT_TRUE(st.ok()) << st.error_message() << "\n"
                         << run_command({systemctl, "status", "--no-pager", "-n", "30", unit}).stdout_text;
    EXPECT_EQ(info.name(), name);
    auto props = show(run_command({systemctl, "show", "-p", "MainPID,ActiveState,User", unit}));
    EXPECT_EQ(props["ActiveState"], "active");
    EXPECT_EQ(props["User"], user);
    pid_t main_pid = atoi(props["MainPID"].c_str());
    ASSERT_GT(main_pid, 0);
    EXPECT_EQ(process_uid(main_pid), std::to_string(getpwnam(user.c_str())->pw_uid));
    auto t0 = std::chrono::steady_clock::now();
    auto stop = run_command({systemctl, "stop", unit}, 30s);
    EXPECT_EQ(stop.code, 0) << stop.output_tail;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 15s) << "TimeoutStopSec";
    props = show(run_command({systemctl, "show", "-p", "ExecMainCode,ExecMainStatus,Result", unit}));
    EXPECT_EQ(props["ExecMainCode"], "1") << "exited (CLD_EXITED), not killed";
    EXPECT_EQ(props["ExecMainStatus"], "0");
    EXPECT_EQ(props["Result"], "success");
    return;
  }

  // ---- systemd is not init: boot one in namespaces ----
  auto missing = namespace_boot_missing(systemd, unshare_bin, nsenter);
  if (!missing.empty())
    GTEST_SKIP() << "systemd is not init here and cannot boot in a namespace: " << missing;
  std::cout << "[boot] systemd is not init: booting " << systemd << " as PID 1 of new namespaces\n";

  NamespaceBoot ns;
  ns.nsenter_ = nsenter;
  const std::string parent = cgroup2_root() + own_cgroup2();
  sweep_stale_boots(parent);
  const std::string cgroup = parent + "/loadlab-boot-" + std::to_string(getpid());
  ASSERT_TRUE(fs::create_directory(cgroup)) << "cannot make the cgroup " << cgroup;
  ns.cgroup = cgroup;

  fs::create_directories(work.path() / "mnt");
  write_minimal_units(work.path() / "units");
  work.file("agent.env", test_agent_env(tree, port, "--name " + name));
  // The unit's User=loadlab and Group=loadlab as the package's postinst makes them.
  unsigned uid = 0;
  if (struct passwd* pw = getpwnam("loadlab")) {
    uid = pw->pw_uid;
  } else {
    uid = free_system_id();
    ASSERT_GT(uid, 0u);
    std::cout
        << "[boot] no loadlab user on this host: the namespace's /etc/passwd (an overlay) gets loadlab, uid "
        << uid << "\n";
    work.file("passwd", "loadlab:x:" + std::to_string(uid) + ":" + std::to_string(uid) +
                            ":loadlab agent (boot test):/nonexistent:/usr/sbin/nologin\n");
    work.file("group", "loadlab:x:" + std::to_string(uid) + ":\n");
  }
  auto enter = work.file("enter.sh", kEnterScript);
  auto boot = work.file("boot.sh", kBootScript);
  agent::SpawnOptions opts;
  opts.env.push_back({"SYSTEMD", systemd});
  opts.keep_privileges = true;  // unshare and nsenter need root's capabilities
  ns.unshare =
      agent::ChildProcess::spawn({"/bin/sh", enter, cgroup, boot, work.path().string(), tree.prefix()}, opts);

  // The namespace's init: unshare's child, held by a pidfd from here on.
  for (int i = 0; i < 100 && ns.init == 0; ++i) {
    auto pids = tree_pids(ns.unshare->pid());
    if (pids.size() > 1)
      ns.init = pids[1];
    else
      std::this_thread::sleep_for(50ms);
  }
  ASSERT_GT(ns.init, 0) << ns.unshare->output_tail();
  ns.init_fd = static_cast<int>(syscall(SYS_pidfd_open, ns.init, 0));
  ASSERT_GE(ns.init_fd, 0);
  ASSERT_EQ(process_nspid(ns.init), "1");

  // Booted: is-system-running says "running": multi-user.target reached, the agent's start
  // job done (Type=simple: once exec'd). An agent that exits at once still leaves it
  // "running" (Restart=on-failure: activating/auto-restart), so Describe and the unit's state
  // below are what catch a broken ExecStart.
  std::string state;
  for (auto deadline = std::chrono::steady_clock::now() + 20s; std::chrono::steady_clock::now() < deadline;) {
    if (ns.unshare->poll_exit()) break;
    state = trim(ns.systemctl({"is-system-running"}, 10s).stdout_text);
    if (state == "running" || state == "degraded") break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_EQ(state, "running")
      << "the namespace's systemd did not boot, or the agent failed:\n"
      << read_text(work.path() / "console") << "\n"
      << ns.systemctl({"status", "--no-pager", "loadlab-agent.service"}, 10s).stdout_text;

  // The unit as installed, as systemd read it.
  auto cat = ns.systemctl({"cat", "loadlab-agent.service"});
  EXPECT_NE(cat.stdout_text.find(
                "ExecStart=/usr/bin/loadlab-agent --listen ${LOADLAB_AGENT_LISTEN} $LOADLAB_AGENT_FLAGS"),
            std::string::npos)
      << cat.stdout_text;
  v1::AgentInfo info;
  auto st = describe(address, 15s, &info);
  ASSERT_TRUE(st.ok()) << "the unit's agent does not answer Describe at " << address << ": "
                       << st.error_message() << "\n"
                       << ns.systemctl({"status", "--no-pager", "loadlab-agent.service"}).stdout_text << "\n"
                       << read_text(work.path() / "console");
  EXPECT_EQ(info.name(), name) << "LOADLAB_AGENT_FLAGS (split at spaces) did not reach the agent";
  EXPECT_GT(info.cores(), 0u);
  EXPECT_EQ(info.version() + " " + info.commit(), std::string(LOADLAB_VERSION) + " " + expected_commit())
      << "the installed agent is the one built here";
  // Delegate=yes: the agent may make job cgroups under its own.
  EXPECT_EQ(info.process_control(), "cgroup2");

  auto props = show(ns.systemctl(
      {"show", "-p", "MainPID,ActiveState,SubState,User,Group,ControlGroup", "loadlab-agent.service"}));
  EXPECT_EQ(props["ActiveState"], "active");
  EXPECT_EQ(props["SubState"], "running");
  EXPECT_EQ(props["User"], "loadlab");
  EXPECT_EQ(props["Group"], "loadlab");
  EXPECT_EQ(props["ControlGroup"], "/system.slice/loadlab-agent.service");
  // The main process, seen from the host: in the unit's cgroup, /usr/bin/loadlab-agent, as
  // the loadlab user, the MainPID systemd reports.
  std::ifstream procs(cgroup + "/system.slice/loadlab-agent.service/cgroup.procs");
  std::vector<pid_t> pids;
  for (pid_t p; procs >> p;) pids.push_back(p);
  ASSERT_EQ(pids.size(), 1u) << "the unit's cgroup should hold the agent alone";
  EXPECT_EQ(process_nspid(pids[0]), props["MainPID"]);
  EXPECT_EQ(process_uid(pids[0]), std::to_string(uid));
  EXPECT_EQ(fs::read_symlink("/proc/" + std::to_string(pids[0]) + "/exe"), "/usr/bin/loadlab-agent");

  auto t0 = std::chrono::steady_clock::now();
  auto stop = ns.systemctl({"stop", "loadlab-agent.service"});
  EXPECT_EQ(stop.code, 0) << stop.output_tail;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 15s) << "TimeoutStopSec";
  props = show(ns.systemctl(
      {"show", "-p", "ExecMainCode,ExecMainStatus,Result,ActiveState", "loadlab-agent.service"}));
  EXPECT_EQ(props["ExecMainCode"], "1") << "the agent should exit on SIGTERM, not die of it";
  EXPECT_EQ(props["ExecMainStatus"], "0");
  EXPECT_EQ(props["Result"], "success");
  EXPECT_EQ(props["ActiveState"], "inactive");
}

}  // namespace
}  // namespace loadlab::testing
