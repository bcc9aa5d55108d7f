// docs/operations.md's lab guide, followed as written: its certificate recipe (section 2), its
// agent flags (section 3, for srv1; cli1 and cli2 the same with their names and addresses) and
// its lab file (section 4), on the guide's own addresses 10.0.0.5-7. Those exist only in a
// network namespace this test makes (the agents), joined by a veth pair to another (the
// controller, 10.0.0.1): nothing is added to this machine's own network. Root only.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "test_support.hpp"

namespace loadlab {
namespace {

using namespace std::chrono_literals;
using testing::bin;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::TempDir;

const std::string kGuide = std::string(LOADLAB_SOURCE_DIR) + "/docs/operations.md";

bool sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0; }

// The first fenced block of `kind` (sh, json) after the heading `heading` of the guide.
std::string block_after(const std::string& heading, const std::string& kind) {
  std::ifstream f(kGuide);
  std::string text((std::istreambuf_iterator<char>(f)), {});
  const auto at = text.find("\n" + heading + "\n");
  if (at == std::string::npos) return "";
  const auto open = text.find("```" + kind + "\n", at);
  const auto close = open == std::string::npos ? open : text.find("\n```", open);
  if (close == std::string::npos) return "";
  return text.substr(open + kind.size() + 4, close - open - kind.size() - 3);
}

// The lab: the agents' namespace with the guide's three addresses, the controller's with
// 10.0.0.1, one cable between them.
class GuideNetwork {
 public:
  GuideNetwork() {
    const auto id = std::to_string(getpid());
    lab_ = "llglab" + id;
    ctl_ = "llgctl" + id;
    const std::string vlab = "llgvl" + id, vctl = "llgvc" + id;
    ok_ = sh("ip netns add " + lab_) && sh("ip netns add " + ctl_) &&
          sh("ip link add " + vlab + " type veth peer name " + vctl) &&
          sh("ip link set " + vlab + " netns " + lab_) && sh("ip link set " + vctl + " netns " + ctl_);
    for (const char* a : {"10.0.0.5/24", "10.0.0.6/24", "10.0.0.7/24"})
      ok_ = ok_ && sh("ip -n " + lab_ + " addr add " + a + " dev " + vlab);
    ok_ = ok_ && sh("ip -n " + ctl_ + " addr add 10.0.0.1/24 dev " + vctl);
    for (const auto& [ns, dev] : {std::pair{lab_, vlab}, std::pair{ctl_, vctl}})
      ok_ = ok_ && sh("ip -n " + ns + " link set lo up") && sh("ip -n " + ns + " link set " + dev + " up");
  }
  ~GuideNetwork() {
    sh("ip netns del " + lab_);  // takes the veth pair with it
    sh("ip netns del " + ctl_);
  }
  bool ok() const { return ok_; }
  std::vector<std::string> in_lab(std::vector<std::string> argv) const { return in(lab_, std::move(argv)); }
  std::vector<std::string> in_controller(std::vector<std::string> argv) const {
    return in(ctl_, std::move(argv));
  }

 private:
  static std::vector<std::string> in(const std::string& ns, std::vector<std::string> argv) {
    argv.insert(argv.begin(), {"/usr/sbin/ip", "netns", "exec", ns});
    return argv;
  }
  std::string lab_, ctl_;
  bool ok_ = false;
};

// Section 3's flags for one agent: srv1's, with `name` and `address` in their place and the
// guide's /etc/loadlab/ where the test made the files.
std::vector<std::string> agent_argv(const std::string& env, const std::string& name,
                                    const std::string& address, const std::string& etc) {
  std::smatch listen, flags;
  std::regex_search(env, listen, std::regex("LOADLAB_AGENT_LISTEN=(\\S+)"));
  std::regex_search(env, flags, std::regex("LOADLAB_AGENT_FLAGS=(.*)"));
  auto own = [&](std::string s) {
    s = std::regex_replace(s, std::regex("srv1"), name);
    s = std::regex_replace(s, std::regex("10\\.0\\.0\\.5"), address);
    return std::regex_replace(s, std::regex("/etc/loadlab/"), etc + "/");
  };
  std::vector<std::string> argv = {bin("loadlab-agent"), "--listen", own(listen[1].str())};
  std::istringstream words(own(flags[1].str()));
  for (std::string w; words >> w;) argv.push_back(w);
  return argv;
}

TEST(LabGuide, TheGuidesCertificatesAgentFlagsAndLabFileRunATwoLoadAgentCell) {
  // The guide's blocks are there for everyone; following them needs root.
  const auto certificates = block_after("## 2. Certificates and token", "sh");
  const auto env = block_after("## 3. Agents", "sh");
  const auto lab = block_after("## 4. The lab file", "json");
  ASSERT_FALSE(certificates.empty() || env.empty() || lab.empty()) << "the guide's blocks moved";
  if (geteuid() != 0) GTEST_SKIP() << "needs root to make network namespaces (CI runs as root)";
  GuideNetwork net;
  if (!net.ok()) GTEST_SKIP() << "this machine cannot make network namespaces with veth";
  TempDir dir;
  const std::string etc = dir.path().string();
  auto made = testing::run_command({"/bin/sh", "-c", "cd " + etc + " && " + certificates}, 60s);
  ASSERT_EQ(made.code, 0) << made.output_tail;
  // The guide's 0640 root:loadlab is for an agent run as loadlab; this one runs as root.
  ASSERT_TRUE(sh("chmod 600 " + etc + "/*.key " + etc + "/token"));
  dir.file("catalog.json", R"({"targets": {}})");
  const auto lab_file = dir.file("lab.json", lab);
  std::vector<std::unique_ptr<agent::ChildProcess>> agents;  // stopped by pid when the test ends
  for (const auto& [name, address] :
       {std::pair{"srv1", "10.0.0.5"}, {"cli1", "10.0.0.6"}, {"cli2", "10.0.0.7"}}) {
    agents.push_back(testing::spawn_tool(net.in_lab(agent_argv(env, name, address, etc))));
    std::string line;
    ASSERT_EQ(agents.back()->next_line(line, 10s), agent::ChildProcess::LineStatus::kLine)
        << agents.back()->output_tail();
    EXPECT_EQ(line, "listening on " + std::string(address) + ":7700");
  }
  const auto described =
      testing::run_command(net.in_controller({bin("loadlab"), "agents", "--lab", lab_file}), 60s);
  EXPECT_EQ(described.code, 0) << described.stdout_text << described.output_tail;
  EXPECT_THAT(described.stdout_text, Not(HasSubstr("UNREACHABLE")));
  const auto s = dir.file("s.json", R"({"name": "guide", "targets": [{"name": "b", "builtin": "hello",
      "server_threads": 1}], "matrix": {"delay_ms": [5], "threads": [4]},
      "load": {"duration_s": 1.5, "warmup_s": 0.3}, "placement": {"load": {"agents": 2}}})");
  const auto out = dir.path() / "out";
  const auto run = testing::run_command(
      net.in_controller({bin("loadlab"), "run", s, "--lab", lab_file, "--out", out.string()}), 120s);
  ASSERT_EQ(run.code, 0) << run.output_tail;
  const auto cells = testing::result_cells(out / "result.json");
  ASSERT_EQ(cells.size(), 1u);
  ASSERT_TRUE(cells[0].ok()) << cells[0].error();
  // Four closed loops on a 5 ms server, over two load agents: at most 4 / 5 ms = 800 req/s, and
  // at least half of that unless something blocks (how close to 800 is this machine's load).
  EXPECT_EQ(cells[0].repetitions(0).load_parts_size(), 2);
  EXPECT_LE(cells[0].repetitions(0).qps(), 800 * 1.02);
  EXPECT_GE(cells[0].repetitions(0).qps(), 400);
}

}  // namespace
}  // namespace loadlab
