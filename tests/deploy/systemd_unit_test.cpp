// systemd-analyze verify on deploy/systemd/loadlab-agent.service, as installed. verify needs
// ExecStart's binary to exist, so a copy of the unit points at the installed loadlab-agent.
#include <fstream>
#include <sstream>

#include "deploy_support.hpp"

namespace loadlab::testing {
namespace {

TEST(SystemdUnit, AgentUnitVerifies) {
  if (std::string(LOADLAB_SYSTEMD_ANALYZE).empty())
    GTEST_SKIP() << "no systemd-analyze: the unit is not verified";
  InstalledTree tree;
  std::ifstream in(tree.path("lib/systemd/system/loadlab-agent.service"));
  std::stringstream unit;
  unit << in.rdbuf();
  std::string text = unit.str();
  const std::string exec = "ExecStart=/usr/bin/loadlab-agent ";
  auto at = text.find(exec);
  ASSERT_NE(at, std::string::npos) << "the unit must start /usr/bin/loadlab-agent";
  text.replace(at, exec.size(), "ExecStart=" + tree.path("bin/loadlab-agent") + " ");
  for (std::string key : {"Restart=on-failure", "User=loadlab", "Delegate=yes", "NoNewPrivileges=yes",
                          "EnvironmentFile=-/etc/loadlab/agent.env"})
    EXPECT_NE(text.find("\n" + key + "\n"), std::string::npos) << key;
  TempDir dir;
  auto copy = dir.file("loadlab-agent.service", text);
  auto out = run_command({LOADLAB_SYSTEMD_ANALYZE, "verify", copy});
  EXPECT_EQ(out.code, 0) << out.output_tail;
  EXPECT_EQ(out.output_tail, "") << "verify warned";
}

}  // namespace
}  // namespace loadlab::testing
