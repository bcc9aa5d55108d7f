// A lab of three agent processes on loopback ports (one target, two load): placement,
// merging, a load agent killed mid-cell (and restarted on its port), a controller killed
// and resumed, a controller interrupted while it waits to retry.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <thread>

#include "input_error_of.hpp"
#include "lab_fixture.hpp"
#include "loadlab/shared/json_input.hpp"
#include "test_support.hpp"

namespace loadlab {
namespace {

using namespace std::chrono_literals;
using namespace lab_fixture;
using testing::AgentProcess;
using testing::bin;
using testing::result_cells;
using testing::run_command;
using testing::TempDir;

TEST_F(LabTest, LabelsSelectTheLoadAgent) {
  auto s = dir.file("s.json",
                    R"({"name": "lbl", "targets": [{"name": "b", "builtin": "hello", "server_threads": 1}],
      "matrix": {"delay_ms": [0], "threads": [1]}, "load": {"total_requests": 50},
      "placement": {"load": {"labels": {"rack": "b"}}}})");
  auto out = dir.path() / "out";
  auto r = run_command({bin("loadlab"), "run", s, "--lab", lab, "--out", out.string()});
  ASSERT_EQ(r.code, 0) << r.output_tail;
  auto cells = result_cells(out / "result.json");
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].repetitions(0).load_parts(0).agent(), "cli2");
}

TEST_F(LabTest, ALoadAgentKilledMidCellIsRetriedOnAnotherAndTheCellCompletes) {
  auto s = dir.file("s.json",
                    R"({"name": "kill", "targets": [{"name": "b", "builtin": "hello", "server_threads": 1}],
      "matrix": {"delay_ms": [1], "threads": [2]}, "load": {"duration_s": 3}})");
  auto out = dir.path() / "out";
  auto controller =
      loadlab::testing::spawn_tool({bin("loadlab"), "run", s, "--lab", lab, "--out", out.string()});
  // Wait until cli1 runs the load, then kill it.
  auto deadline = std::chrono::steady_clock::now() + 15s;
  while (agents[1]->proc->output_tail(50).find("load pid") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(20ms);
  std::this_thread::sleep_for(500ms);
  kill(agents[1]->proc->pid(), SIGKILL);
  auto st = controller->wait_exit(60s);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->code, 0) << controller->output_tail();
  auto cells = result_cells(out / "result.json");
  ASSERT_EQ(cells.size(), 1u);
  ASSERT_TRUE(cells[0].ok());
  const auto& rep = cells[0].repetitions(0);
  EXPECT_EQ(rep.attempts(), 2u);
  EXPECT_EQ(rep.load_parts(0).agent(), "cli2");
  EXPECT_NE(controller->output_tail(40).find("retrying"), std::string::npos);
}

// Waits until `agent` runs a load worker (it logs its pid), then half a second more.
void wait_for_load(const AgentProcess& agent) {
  auto deadline = std::chrono::steady_clock::now() + 15s;
  while (agent.proc->output_tail(50).find("load pid") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(20ms);
  std::this_thread::sleep_for(500ms);
}

// cli1 on a fixed port, so that it can be restarted on the same address.
class RestartLabTest : public LabTest {
 protected:
  void SetUp() override { start(free_loopback_address()); }
};

// As systemd's Restart=on-failure would: cli1 SIGKILLed mid-cell, back on its port 1 s
// later. Both load agents are needed by every attempt (load.agents 2), so no rotation helps:
// the retry must wait for cli1, with the default retries and backoff.
TEST_F(RestartLabTest, ALoadAgentRestartedOnItsPortIsWaitedForAndEveryCellCompletes) {
  auto s = dir.file(
      "s.json", R"({"name": "restart", "targets": [{"name": "b", "builtin": "hello", "server_threads": 1}],
      "matrix": {"delay_ms": [1], "threads": [2, 4]}, "load": {"duration_s": 2},
      "placement": {"load": {"agents": 2}}})");
  auto out = dir.path() / "out";
  auto controller =
      loadlab::testing::spawn_tool({bin("loadlab"), "run", s, "--lab", lab, "--out", out.string()});
  wait_for_load(*agents[1]);
  const std::string address = agents[1]->address;
  ASSERT_EQ(kill(agents[1]->proc->pid(), SIGKILL), 0);
  ASSERT_TRUE(agents[1]->proc->wait_exit(5s));  // reaped; its worker dies with it (PDEATHSIG)
  std::this_thread::sleep_for(1s);
  agents[1] = std::make_unique<AgentProcess>("cli1", address);
  ASSERT_EQ(agents[1]->address, address) << agents[1]->proc->output_tail();

  auto st = controller->wait_exit(90s);
  ASSERT_TRUE(st) << controller->output_tail();
  controller->wait_output_end(5s);
  EXPECT_EQ(st->code, 0) << controller->output_tail();
  auto cells = result_cells(out / "result.json");
  ASSERT_EQ(cells.size(), 2u);
  for (auto& c : cells) ASSERT_TRUE(c.ok()) << c.error();
  // The cell cli1 died in took more than one attempt, and its last ran on the restarted cli1.
  const auto& rep = cells[0].repetitions(0);
  EXPECT_GT(rep.attempts(), 1u);
  std::set<std::string> names;
  for (auto& p : rep.load_parts()) names.insert(p.agent());
  EXPECT_EQ(names, (std::set<std::string>{"cli1", "cli2"}));
  EXPECT_EQ(cells[1].repetitions(0).attempts(), 1u);
  EXPECT_NE(controller->output_tail(40).find("retrying once its agents answer"), std::string::npos)
      << controller->output_tail(40);
}

// cli1 killed for good, a retry waiting up to a minute for it: SIGINT ends the run at once,
// with the interrupted cell left for --resume rather than recorded as failed.
TEST_F(LabTest, SigintDuringARetryWaitEndsTheRunAtOnce) {
  auto s = dir.file("s.json",
                    R"({"name": "wait", "targets": [{"name": "b", "builtin": "hello", "server_threads": 1}],
      "matrix": {"delay_ms": [1], "threads": [2]}, "load": {"duration_s": 5},
      "placement": {"load": {"agents": 2}}, "execution": {"retry_backoff_s": 120}})");
  auto out = dir.path() / "out";
  auto controller =
      loadlab::testing::spawn_tool({bin("loadlab"), "run", s, "--lab", lab, "--out", out.string()});
  wait_for_load(*agents[1]);
  ASSERT_EQ(kill(agents[1]->proc->pid(), SIGKILL), 0);
  auto deadline = std::chrono::steady_clock::now() + 15s;
  while (controller->output_tail(40).find("retrying") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(20ms);
  ASSERT_NE(controller->output_tail(40).find("retrying"), std::string::npos) << controller->output_tail(40);
  std::this_thread::sleep_for(300ms);  // into the wait
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(kill(controller->pid(), SIGINT), 0);
  auto st = controller->wait_exit(20s);
  ASSERT_TRUE(st) << controller->output_tail();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
  controller->wait_output_end(5s);  // its last lines may still be in the pipe
  EXPECT_EQ(st->code, 128 + SIGINT) << controller->output_tail();
  auto result = read_json_file((out / "result.json").string());
  EXPECT_TRUE(result["cells"].empty()) << result["cells"].dump();
  EXPECT_FALSE(result.contains("finished_at"));
  EXPECT_NE(controller->output_tail(40).find("--resume"), std::string::npos) << controller->output_tail(40);
}

TEST_F(LabTest, AKilledControllerResumesWithItsEarlierCellsIntact) {
  auto s = dir.file("s.json",
                    R"({"name": "resume", "targets": [{"name": "b", "builtin": "hello", "server_threads": 1}],
      "matrix": {"delay_ms": [0, 1, 2], "threads": [1]}, "load": {"duration_s": 1.5}})");
  auto out = dir.path() / "out";
  auto controller =
      loadlab::testing::spawn_tool({bin("loadlab"), "run", s, "--lab", lab, "--out", out.string()});
  // Kill it once the first cell is in the journal.
  auto journal = out / "journal.jsonl";
  auto lines = [&] {
    std::ifstream in(journal);
    return std::count(std::istreambuf_iterator<char>(in), {}, '\n');
  };
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (lines() < 1 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(20ms);
  ASSERT_EQ(lines(), 1);
  kill(controller->pid(), SIGKILL);
  controller->wait_exit(10s);
  std::string first_line;
  std::getline(std::ifstream(journal), first_line);
  v1::CellResult first;
  ASSERT_NO_THROW(proto::from_json(first_line, &first));

  auto r = run_command({bin("loadlab"), "run", "--resume", out.string()});
  ASSERT_EQ(r.code, 0) << r.output_tail;
  auto result = read_json_file((out / "result.json").string());
  auto cells = result_cells(out / "result.json");
  ASSERT_EQ(cells.size(), 3u);
  // The cell measured before the kill is kept exactly, not measured again.
  EXPECT_EQ(proto::to_json(cells[0]), proto::to_json(first));
  EXPECT_EQ(lines(), 3);
  EXPECT_EQ(result["resumed_at"].size(), 1u);
  for (auto& c : cells) EXPECT_TRUE(c.ok());
}

TEST(LabCatalog, ATargetThatDiesMidCellFailsItWithItsExitStatus) {
  TempDir dir;
  // A catalog server that serves for 1.5 s, then its main process exits with status 3.
  auto catalog = dir.file("catalog.json",
                          R"({"targets": {"flaky": {"argv": ["/bin/sh", "-c",
      ")" + bin("loadlab-target") +
                              R"( --listen {host}:{port} --threads 1 & sleep 1.5; echo dying; exit 3"]}}})");
  auto agent = loadlab::testing::spawn_tool(
      {bin("loadlab-agent"), "--listen", "127.0.0.1:0", "--name", "solo", "--catalog", catalog});
  std::string line;
  ASSERT_EQ(agent->next_line(line, 10s), agent::ChildProcess::LineStatus::kLine) << agent->output_tail();
  auto lab = dir.file("lab.json", R"({"agents": [{"name": "solo", "address": ")" + line.substr(13) +
                                      R"(", "roles": ["target", "load"]}]})");
  auto s = dir.file("s.json", R"({"name": "flaky", "targets": [{"name": "f", "catalog": "flaky"}],
      "matrix": {"delay_ms": [0], "threads": [1]}, "load": {"duration_s": 10}, "execution": {"retries": 0}})");
  auto out = dir.path() / "out";
  auto t0 = std::chrono::steady_clock::now();
  auto r = run_command({bin("loadlab"), "run", s, "--lab", lab, "--out", out.string()});
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 8s);  // not the whole 10 s load
  EXPECT_EQ(r.code, 3) << r.output_tail;
  auto cells = result_cells(out / "result.json");
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_FALSE(cells[0].ok());
  EXPECT_NE(cells[0].error().find("target exited (exit status 3)"), std::string::npos) << cells[0].error();
  EXPECT_NE(cells[0].error().find("dying"), std::string::npos) << cells[0].error();
}

TEST_F(LabTest, AgentsCommandDescribesEachAgentOrWhyItIsUnreachable) {
  auto r = run_command({bin("loadlab"), "agents", "--lab", lab});
  EXPECT_EQ(r.code, 0) << r.output_tail;
  EXPECT_NE(r.stdout_text.find("cli2"), std::string::npos);
  EXPECT_NE(r.stdout_text.find("hello"), std::string::npos);
  EXPECT_NE(r.stdout_text.find("  profiling  "), std::string::npos) << r.stdout_text;  // the column
  auto bad =
      dir.file("bad.json", R"({"agents": [{"name": "gone", "address": "127.0.0.1:1", "roles": ["load"]}]})");
  r = run_command({bin("loadlab"), "agents", "--lab", bad});
  EXPECT_EQ(r.code, 4);  // an unusable lab, not a regression
  EXPECT_NE(r.stdout_text.find("UNREACHABLE"), std::string::npos) << r.stdout_text;
}

}  // namespace
}  // namespace loadlab
