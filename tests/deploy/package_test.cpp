// `cpack -G DEB` into a temporary folder: the two packages, what each holds, and their
// control fields and maintainer scripts, read back with dpkg-deb.
#include <algorithm>
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
       {"./usr/bin/loadlab-agent", "./usr/bin/loadlab-target", "./usr/bin/loadlab-load",
        "./usr/lib/systemd/system/loadlab-agent.service", "./etc/loadlab/agent.env",
        "./usr/share/loadlab/examples/catalog.json", "./usr/share/loadlab/examples/targets/run-target",
        "./usr/share/doc/loadlab-agent/copyright"})
    EXPECT_TRUE(holds(paths, p)) << p;
  EXPECT_FALSE(holds(paths, "./usr/bin/loadlab"));
  EXPECT_EQ(field(deb, "Package"), "loadlab-agent\n");
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
  SCOPED_TRACE(controller);
  check_controller_package(controller);
}

}  // namespace
}  // namespace loadlab::testing
