// systemd-analyze verify on the units of deploy/systemd, as installed. verify needs each
// ExecStart's binary to exist, so copies of the units point at the installed programs.
#include <fstream>
#include <sstream>

#include "deploy_support.hpp"

namespace loadlab::testing {
namespace {

struct Unit {
  std::string name;
  std::string program;                // its ExecStart's, "" for a timer
  std::vector<std::string> settings;  // lines the unit must have
};

const std::vector<Unit>& units() {
  static const std::vector<Unit> all = {
      {"loadlab-agent.service",
       "loadlab-agent",
       {"Restart=on-failure", "User=loadlab", "Delegate=yes", "NoNewPrivileges=yes",
        "EnvironmentFile=-/etc/loadlab/agent.env"}},
      {"loadlab-nightly.service",
       "loadlab-nightly",
       {"Type=oneshot", "User=loadlab", "StateDirectory=loadlab/nightly",
        "EnvironmentFile=/etc/loadlab/nightly.env", "ExecStart=/usr/bin/loadlab-nightly",
        "ProtectSystem=strict"}},
      {"loadlab-nightly.timer",
       "",
       {"OnCalendar=*-*-* 01:00:00", "Persistent=true", "WantedBy=timers.target"}},
  };
  return all;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The installed units' settings are checked everywhere; systemd-analyze verify only where it is.
TEST(SystemdUnit, EveryUnitVerifies) {
  InstalledTree tree;
  TempDir dir;
  std::vector<std::string> copies;
  for (auto& u : units()) {
    std::string text = read_file(tree.path("lib/systemd/system/" + u.name));
    ASSERT_FALSE(text.empty()) << u.name << " is not installed";
    for (auto& line : u.settings)
      EXPECT_NE(text.find("\n" + line + "\n"), std::string::npos) << u.name << ": " << line;
    if (!u.program.empty()) {
      const std::string exec = "ExecStart=/usr/bin/" + u.program;
      auto at = text.find(exec);
      ASSERT_NE(at, std::string::npos) << u.name << " must start /usr/bin/" << u.program;
      text.replace(at, exec.size(), "ExecStart=" + tree.path("bin/" + u.program));
    }
    copies.push_back(dir.file(u.name, text));
  }
  if (std::string(LOADLAB_SYSTEMD_ANALYZE).empty())
    GTEST_SKIP() << "no systemd-analyze: the units' settings were checked, but they are not verified";
  for (auto& copy : copies) {
    auto out = run_command({LOADLAB_SYSTEMD_ANALYZE, "verify", copy});
    EXPECT_EQ(out.code, 0) << copy << ": " << out.output_tail;
    EXPECT_EQ(out.output_tail, "") << copy << ": verify warned";
  }
}

}  // namespace
}  // namespace loadlab::testing
