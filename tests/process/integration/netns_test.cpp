// A lab of two hosts in network namespaces joined by a veth pair; the link is cut
// mid-cell. Needs root (CI runs as root); skipped with a message otherwise. Traffic stays
// inside the namespaces this test makes (10.213.0.0/24 exists only on its veth pair).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <thread>
#include <vector>

#include "loadlab/shared/json_input.hpp"
#include "test_support.hpp"

namespace loadlab {
namespace {

using namespace std::chrono_literals;
using testing::bin;
using testing::result_cells;
using testing::TempDir;

bool sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0; }

// Two namespaces, "target host" (10.213.0.1) and "load host" (10.213.0.2), one cable.
class TwoHosts {
 public:
  TwoHosts() {
    auto id = std::to_string(getpid());
    t_ = "llt" + id;
    l_ = "lll" + id;
    vt_ = "llvt" + id;
    vl_ = "llvl" + id;
    ok_ = sh("ip netns add " + t_) && sh("ip netns add " + l_) &&
          sh("ip link add " + vt_ + " type veth peer name " + vl_) &&
          sh("ip link set " + vt_ + " netns " + t_) && sh("ip link set " + vl_ + " netns " + l_) &&
          sh("ip -n " + t_ + " addr add 10.213.0.1/24 dev " + vt_) &&
          sh("ip -n " + l_ + " addr add 10.213.0.2/24 dev " + vl_) && sh("ip -n " + t_ + " link set lo up") &&
          sh("ip -n " + l_ + " link set lo up") && sh("ip -n " + t_ + " link set " + vt_ + " up") &&
          sh("ip -n " + l_ + " link set " + vl_ + " up");
  }
  ~TwoHosts() {
    sh("ip netns del " + t_);  // takes the veth pair with it
    sh("ip netns del " + l_);
  }
  bool ok() const { return ok_; }
  std::vector<std::string> in_target(std::vector<std::string> argv) const { return in(t_, argv); }
  std::vector<std::string> in_load(std::vector<std::string> argv) const { return in(l_, argv); }
  bool cut() const { return sh("ip -n " + l_ + " link set " + vl_ + " down"); }

 private:
  static std::vector<std::string> in(const std::string& ns, std::vector<std::string> argv) {
    argv.insert(argv.begin(), {"/usr/sbin/ip", "netns", "exec", ns});  // ip execs: same pid
    return argv;
  }
  std::string t_, l_, vt_, vl_;
  bool ok_ = false;
};

// The text after the first of `words` (in their order) in the last lines `proc` printed, as
// soon as one shows; nullopt if none did by `deadline`.
std::optional<std::string> wait_for_output(const agent::ChildProcess& proc,
                                           const std::vector<std::string>& words,
                                           std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    const auto tail = proc.output_tail(50);
    for (const auto& w : words)
      if (auto at = tail.find(w); at != std::string::npos) return tail.substr(at + w.size());
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(50ms);
  }
}

TEST(NetnsLab, ACutLinkIsDetectedWithinTenSecondsAndTheCellEndsWithAReason) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to make network namespaces (CI runs as root)";
  TwoHosts hosts;
  if (!hosts.ok())
    GTEST_SKIP() << "this machine cannot make network namespaces with veth (ip netns add failed)";
  TempDir dir;
  // A lab network the test made itself: no TLS (--insecure), load to the lab's subnet.
  auto target_agent = loadlab::testing::spawn_tool(
      hosts.in_target({bin("loadlab-agent"), "--listen", "10.213.0.1:7700", "--advertise", "10.213.0.1",
                       "--name", "srv", "--insecure"}));
  auto load_agent = loadlab::testing::spawn_tool(
      hosts.in_load({bin("loadlab-agent"), "--listen", "10.213.0.2:7700", "--name", "cli", "--insecure",
                     "--allow-load-to", "10.213.0.0/24"}));
  std::string line;
  ASSERT_EQ(target_agent->next_line(line, 10s), agent::ChildProcess::LineStatus::kLine)
      << target_agent->output_tail();
  ASSERT_EQ(load_agent->next_line(line, 10s), agent::ChildProcess::LineStatus::kLine)
      << load_agent->output_tail();
  auto lab = dir.file("lab.json", R"({"agents": [
      {"name": "srv", "address": "10.213.0.1:7700", "roles": ["target"]},
      {"name": "cli", "address": "10.213.0.2:7700", "roles": ["load"]}]})");
  auto s = dir.file("s.json",
                    R"({"name": "cut", "targets": [{"name": "b", "builtin": "hello", "server_threads": 1}],
      "matrix": {"delay_ms": [1], "threads": [2]}, "load": {"duration_s": 30, "timeout_ms": 1000},
      "execution": {"retries": 1, "deadlines": {"ready_s": 5}}})");
  auto out = dir.path() / "out";
  // The controller runs on the load host: the cable is its only way to the target host.
  auto controller = loadlab::testing::spawn_tool(
      hosts.in_load({bin("loadlab"), "run", s, "--lab", lab, "--out", out.string()}));

  const auto target =
      wait_for_output(*target_agent, {"target hello pid "}, std::chrono::steady_clock::now() + 20s);
  const pid_t target_pid = target ? std::atoi(target->c_str()) : 0;
  ASSERT_GT(target_pid, 0) << target_agent->output_tail();
  // Mid-cell: the load host's agent runs the load (it logs its worker's pid).
  ASSERT_TRUE(wait_for_output(*load_agent, {"load pid "}, std::chrono::steady_clock::now() + 20s))
      << load_agent->output_tail();
  ASSERT_TRUE(hosts.cut());
  auto cut_at = std::chrono::steady_clock::now();

  // The controller notices (keepalive) and fails or retries the cell within 10 s.
  const bool noticed = wait_for_output(*controller, {"retrying", "failed"}, cut_at + 10s).has_value();
  EXPECT_TRUE(noticed) << controller->output_tail();
  auto secs = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - cut_at).count();
  };
  std::cout << "controller noticed the cut after " << secs() << " s\n";
  // The target host's agent notices the vanished controller and stops the target.
  while (loadlab::testing::process_running(target_pid) && std::chrono::steady_clock::now() - cut_at < 10s)
    std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(loadlab::testing::process_running(target_pid)) << "target outlived the cut link by 10 s";
  std::cout << "target host's agent stopped the target after " << secs() << " s\n";

  // The retry cannot reach the target host either: the cell fails, with a reason.
  auto st = controller->wait_exit(60s);
  ASSERT_TRUE(st) << controller->output_tail();
  EXPECT_EQ(st->code, 3) << controller->output_tail();
  auto cells = result_cells(out / "result.json");
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_FALSE(cells[0].ok());
  EXPECT_NE(cells[0].error().find("after 2 attempts"), std::string::npos) << cells[0].error();
}

}  // namespace
}  // namespace loadlab
