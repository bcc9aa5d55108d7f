// `cmake --install` into a temporary prefix: every binary in bin/ answers --version with the
// version and the commit, and the example catalog works where it lands.
#include <sys/stat.h>

#include "deploy_support.hpp"

namespace loadlab::testing {
namespace {

TEST(Install, EveryBinaryNamesItsVersionAndCommit) {
  InstalledTree tree;
  const std::string commit = expected_commit();
  ASSERT_TRUE(commit == "unknown" || commit.size() >= 12) << commit;
  for (std::string name : {"loadlab", "loadlab-agent", "loadlab-target", "loadlab-target-secure",
                           "loadlab-target-h3", "loadlab-load", "loadlab-load-secure", "loadlab-load-h3"}) {
    auto out = run_command({tree.path("bin/" + name), "--version"});
    EXPECT_EQ(out.code, 0) << name << ": " << out.output_tail;
    EXPECT_EQ(out.stdout_text, name + " " + LOADLAB_VERSION + " (git " + commit + ")\n") << name;
  }
}

TEST(Install, PutsConfigCatalogUnitAndDocsUnderThePrefix) {
  InstalledTree tree;
  for (std::string file :
       {"etc/loadlab/agent.env", "lib/systemd/system/loadlab-agent.service", "etc/loadlab/nightly.env",
        "lib/systemd/system/loadlab-nightly.service", "lib/systemd/system/loadlab-nightly.timer",
        "bin/loadlab-nightly", "share/loadlab/examples/catalog.json", "share/doc/loadlab/README.md",
        "share/doc/loadlab/scenario.md", "share/doc/loadlab-agent/agent.md"})
    EXPECT_TRUE(std::filesystem::is_regular_file(tree.path(file))) << file;
  struct stat st {};
  ASSERT_EQ(stat(tree.path("share/loadlab/examples/targets/run-target").c_str(), &st), 0);
  EXPECT_TRUE(st.st_mode & S_IXUSR) << "run-target lost its execute bit";
}

// The catalog names targets/run-target relative to itself: an agent loads the installed copy
// (a catalog whose argv[0] is missing does not load, and the agent exits 2).
TEST(Install, AgentLoadsTheInstalledExampleCatalog) {
  InstalledTree tree;
  agent::SpawnOptions tool;
  tool.keep_privileges = true;  // an agent, not a job
  auto agent = agent::ChildProcess::spawn({tree.path("bin/loadlab-agent"), "--listen", "127.0.0.1:0",
                                           "--catalog", tree.path("share/loadlab/examples/catalog.json")},
                                          tool);
  std::string line;
  ASSERT_EQ(agent->next_line(line, std::chrono::seconds(10)), agent::ChildProcess::LineStatus::kLine)
      << agent->output_tail();
  EXPECT_EQ(line.rfind("listening on 127.0.0.1:", 0), 0u) << line;
}

}  // namespace
}  // namespace loadlab::testing
