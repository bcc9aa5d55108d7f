// `cpack -G DEB` into a temporary folder: the two packages, what each holds, and their
// control fields and maintainer scripts, read back with dpkg-deb.
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <sstream>

#include "deploy_support.hpp"

namespace loadlab::testing {
namespace {

// The paths a package installs, as dpkg-deb -c lists them ("./usr/bin/loadlab").
std::vector<std::string> contents(const std::string& deb) {
  auto out = run_command({LOADLAB_DPKG_DEB, "-c", deb});
  EXPECT_EQ(out.code, 0) << out.output_tail;
  std::vector<std::string> paths;
  std::istringstream lines(out.stdout_text);
  for (std::string line; std::getline(lines, line);) {
    auto at = line.find(" ./");
    if (at != std::string::npos) paths.push_back(line.substr(at + 1));
  }
  return paths;
}

std::string field(const std::string& deb, const std::string& name) {
  auto out = run_command({LOADLAB_DPKG_DEB, "-f", deb, name});
  EXPECT_EQ(out.code, 0) << out.output_tail;
  return out.stdout_text;
}

std::string control_file(const std::string& deb, const std::string& name) {
  auto out = run_command({LOADLAB_DPKG_DEB, "-I", deb, name});
  EXPECT_EQ(out.code, 0) << name << ": " << out.output_tail;
  return out.stdout_text;
}

bool holds(const std::vector<std::string>& paths, const std::string& path) {
  return std::find(paths.begin(), paths.end(), path) != paths.end();
}

void check_agent_package(const std::string& deb) {
  auto paths = contents(deb);
  for (std::string p :
       {"./usr/bin/loadlab-agent", "./usr/bin/loadlab-target", "./usr/bin/loadlab-target-secure",
        "./usr/bin/loadlab-target-h3", "./usr/bin/loadlab-load", "./usr/bin/loadlab-load-secure",
        "./usr/bin/loadlab-load-h3", "./usr/lib/systemd/system/loadlab-agent.service",
        "./etc/loadlab/agent.env", "./usr/share/loadlab/examples/catalog.json",
        "./usr/share/loadlab/examples/targets/run-target", "./usr/share/doc/loadlab-agent/copyright"})
    EXPECT_TRUE(holds(paths, p)) << p;
  EXPECT_FALSE(holds(paths, "./usr/bin/loadlab"));
  EXPECT_EQ(field(deb, "Package"), "loadlab-agent\n");
  EXPECT_NE(field(deb, "Recommends").find("git"), std::string::npos);  // targets built from a commit
  auto depends = field(deb, "Depends");
  EXPECT_NE(depends.find("adduser"), std::string::npos) << depends;
  EXPECT_NE(depends.find("libc6"), std::string::npos) << "no shared-library dependencies: " << depends;

  auto postinst = control_file(deb, "postinst");
  EXPECT_NE(postinst.find("adduser --system --group --no-create-home"), std::string::npos) << postinst;
  EXPECT_NE(postinst.find("systemctl daemon-reload"), std::string::npos) << postinst;
  EXPECT_NE(control_file(deb, "postrm").find("deluser --system"), std::string::npos);
  EXPECT_EQ(control_file(deb, "conffiles"), "/etc/loadlab/agent.env\n");
}

void check_controller_package(const std::string& deb) {
  auto paths = contents(deb);
  EXPECT_TRUE(holds(paths, "./usr/bin/loadlab"));
  EXPECT_TRUE(holds(paths, "./usr/share/doc/loadlab/README.md"));
  EXPECT_TRUE(holds(paths, "./usr/share/doc/loadlab/copyright"));
  // The nightly job: its script, service, timer and config (a conffile: an edit survives upgrades).
  for (std::string path : {"./usr/bin/loadlab-nightly", "./usr/lib/systemd/system/loadlab-nightly.service",
                           "./usr/lib/systemd/system/loadlab-nightly.timer", "./etc/loadlab/nightly.env",
                           "./usr/share/doc/loadlab/operations.md"})
    EXPECT_TRUE(holds(paths, path)) << path;
  EXPECT_EQ(control_file(deb, "conffiles"), "/etc/loadlab/nightly.env\n");
  EXPECT_NE(field(deb, "Recommends").find("git"), std::string::npos);
  // The embedded agent's loadlab-target and loadlab-load come from loadlab-agent, once.
  EXPECT_FALSE(holds(paths, "./usr/bin/loadlab-target"));
  EXPECT_EQ(field(deb, "Package"), "loadlab\n");
  auto depends = field(deb, "Depends");
  EXPECT_NE(depends.find(std::string("loadlab-agent (= ") + LOADLAB_VERSION + ")"), std::string::npos)
      << depends;
  EXPECT_NE(depends.find("libc6"), std::string::npos) << depends;
}

// Installs both packages with dpkg and purges them again, in a mount namespace whose /usr,
// /etc and /var are overlays (every write vanishes with it): the maintainer scripts make and
// remove the loadlab user, the installed programs run, purge leaves nothing behind.
const char* kInstallScript = R"sh(set -eu
agent=$1 controller=$2 m=$3/mnt
mount -t tmpfs -o mode=0755 loadlab-dpkg "$m"
for d in usr etc var; do
  mkdir -p "$m/$d-up" "$m/$d-work"
  mount -t overlay overlay -o "lowerdir=/$d,upperdir=$m/$d-up,workdir=$m/$d-work" "/$d"
done
mount -t tmpfs -o mode=0755 loadlab-run /run   # no systemd here: the scripts skip systemctl
if getent passwd loadlab >/dev/null; then echo "a loadlab user exists before the install"; exit 10; fi
DEBIAN_FRONTEND=noninteractive dpkg -i "$agent" "$controller" >/dev/null
echo "installed: $(dpkg-query -W -f='${Package}=${Status} ' loadlab-agent loadlab)"
echo "user: $(getent passwd loadlab | cut -d: -f1,6,7)"
/usr/bin/loadlab-agent --version
/usr/bin/loadlab --version
test -x /usr/bin/loadlab-nightly && test -f /etc/loadlab/agent.env && test -f /etc/loadlab/nightly.env
test -f /usr/lib/systemd/system/loadlab-agent.service && test -f /usr/lib/systemd/system/loadlab-nightly.timer
DEBIAN_FRONTEND=noninteractive dpkg --purge loadlab loadlab-agent >/dev/null
if getent passwd loadlab >/dev/null; then echo "purge left the loadlab user"; exit 11; fi
for f in /usr/bin/loadlab /usr/bin/loadlab-agent /etc/loadlab/agent.env /etc/loadlab/nightly.env; do
  if [ -e "$f" ]; then echo "purge left $f"; exit 12; fi
done
echo purged
)sh";

// Why the packages cannot be installed here; empty when they can.
std::string why_not_installable() {
  if (geteuid() != 0) return "not root: the packages were not installed and purged";
  if (!filesystem_supported("overlay"))
    return "no overlay file system: the packages were not installed and purged";
  return "";
}

void check_install_and_purge(const std::string& agent, const std::string& controller) {
  TempDir work;
  std::filesystem::create_directories(work.path() / "mnt");
  auto script = work.file("install.sh", kInstallScript);
  auto out = run_command({"/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", script, agent,
                          controller, work.path().string()},
                         std::chrono::seconds(120));
  ASSERT_EQ(out.code, 0) << out.stdout_text << out.output_tail;
  EXPECT_NE(out.stdout_text.find("loadlab=install ok installed loadlab-agent=install ok installed"),
            std::string::npos)
      << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("user: loadlab:/nonexistent:/usr/sbin/nologin"), std::string::npos)
      << out.stdout_text;
  EXPECT_NE(out.stdout_text.find(std::string("loadlab-agent ") + LOADLAB_VERSION), std::string::npos)
      << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("purged"), std::string::npos) << out.stdout_text;
}

// One test, so one cpack run (about a minute with dpkg-shlibdeps).
TEST(DebPackages, ControllerAndAgentHoldWhatEachNeeds) {
  if (std::string(LOADLAB_DPKG_DEB).empty()) GTEST_SKIP() << "no dpkg-deb: the packages are not checked";
  TempDir out;
  auto cpack = run_command({LOADLAB_CPACK, "-G", "DEB", "--config",
                            std::string(LOADLAB_BUILD_DIR) + "/CPackConfig.cmake", "-B", out.path().string()},
                           std::chrono::seconds(240));
  ASSERT_EQ(cpack.code, 0) << cpack.output_tail;
  std::string controller, agent;
  for (auto& entry : std::filesystem::directory_iterator(out.path())) {
    std::string name = entry.path().filename().string();
    if (!name.ends_with(".deb")) continue;
    if (name.rfind("loadlab_", 0) == 0) controller = entry.path();
    if (name.rfind("loadlab-agent_", 0) == 0) agent = entry.path();
  }
  ASSERT_FALSE(agent.empty()) << "no loadlab-agent_*.deb";
  ASSERT_FALSE(controller.empty()) << "no loadlab_*.deb";
  {
    SCOPED_TRACE(agent);
    check_agent_package(agent);
  }
  {
    SCOPED_TRACE(controller);
    check_controller_package(controller);
  }
  // The contents were checked; a skip says the install was not (a failure above stays one).
  if (const std::string why = why_not_installable(); !why.empty()) GTEST_SKIP() << why;
  check_install_and_purge(agent, controller);
}

}  // namespace
}  // namespace loadlab::testing
