// The binaries as a user runs them: exit statuses, error lines, a remote agent via --lab.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>

#include <fstream>
#include <functional>
#include <regex>
#include <string>
#include <thread>

#include "loadlab/shared/json_input.hpp"
#include "test_support.hpp"

namespace loadlab {
namespace {

using testing::bin;
using testing::result_cells;
using testing::run_command;
using testing::RunOutput;
using testing::TempDir;

const char* kSmall = R"({
  "name": "small",
  "targets": [{"name": "beast", "builtin": "hello", "server_threads": 1}],
  "matrix": {"delay_ms": [1], "threads": [2]},
  "load": {"total_requests": 500}
})";

TEST(Cli, BadScenarioExitsTwoNamingTheField) {
  TempDir dir;
  auto bad = dir.file("bad.json", R"({"name": "x", "targets": [{"name": "a", "builtin": "hello"}],
      "matrix": {"delay_ms": [0], "threads": [1, "2"]}, "load": {"duration_s": 1}})");
  auto r = run_command({bin("loadlab"), "run", bad, "--out", (dir.path() / "o").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output_tail.find("/matrix/threads/1: must be an integer in 1..1024"), std::string::npos)
      << r.output_tail;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "o" / "result.json"));
}

TEST(Cli, MissingFileAndBrokenJsonExitTwo) {
  TempDir dir;
  auto r = run_command({bin("loadlab"), "validate", (dir.path() / "nope.json").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output_tail.find("cannot read file"), std::string::npos) << r.output_tail;
  r = run_command({bin("loadlab"), "validate", dir.file("broken.json", "{\"name\": ")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output_tail.find("is not valid JSON"), std::string::npos) << r.output_tail;
}

TEST(Cli, TargetTheAgentCannotHostExitsTwoBeforeAnyCell) {
  TempDir dir;
  auto s = dir.file(
      "s.json",
      R"({"name": "x", "targets": [{"name": "a", "builtin": "hello"}, {"name": "go", "catalog": "go-nethttp"}],
      "matrix": {"delay_ms": [0], "threads": [1]}, "load": {"total_requests": 10}})");
  auto r = run_command({bin("loadlab"), "run", s, "--out", (dir.path() / "o").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output_tail.find("/targets/1/catalog: no agent can host \"go-nethttp\"; known: embedded:hello"),
            std::string::npos)
      << r.output_tail;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "o"));  // checked before the folder is made
}

TEST(Cli, UnknownFlagExitsTwo) {
  auto r = run_command({bin("loadlab"), "run", "x.json", "--bogus"});
  EXPECT_EQ(r.code, 2);
}

TEST(Cli, ValidatePrintsTheCells) {
  TempDir dir;
  auto r =
      run_command({bin("loadlab"), "validate", std::string(LOADLAB_SOURCE_DIR) + "/scenarios/demo.json"});
  EXPECT_EQ(r.code, 0) << r.output_tail;
  EXPECT_NE(r.stdout_text.find("ok, 12 cells"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("beast/d10/t20"), std::string::npos);
}

// The nightly loop of the test below: one scenario every night (a changed scenario starts a new
// series), each night in a folder of its own, appended to one history and judged against the
// nights before it. A slow night runs a new build of the server: a loadlab-target that burns
// 10 ms of CPU per request before answering (one thread: at most 100 requests/s, half what the
// 20 ms delay allows 4 connections). A change that large stays outside the band when a busy core
// stretches the nights.
class NightlyHistory {
 public:
  // A night as run: its folder's name, its output, and whether the machine was busy with other
  // work on every try (`why`: the last try's reason then).
  struct Night {
    std::string name;
    RunOutput run;
    bool busy = false;
    std::string why;
  };
  using Check = std::function<void(const Night&)>;

  NightlyHistory() {
    scenario_ = dir_.file(
        "nightly.json",
        R"({"name": "nightly", "targets": [{"name": "beast", "builtin": "hello", "server_threads": 1}],
        "matrix": {"delay_ms": [20], "threads": [4]}, "load": {"requests_per_thread": 10}, "repetitions": 2,
        "execution": {"remeasure_wait_s": 0.5}})");
    std::filesystem::create_directories(slow_bin());
    std::filesystem::create_symlink(bin("loadlab-load"), slow_bin() / "loadlab-load");
    dir_.file("slow-bin/loadlab-target",
              "#!/bin/sh\nexec " + bin("loadlab-target") + " \"$@\" --work-us 10000\n");
    std::filesystem::permissions(slow_bin() / "loadlab-target", std::filesystem::perms::owner_all);
  }

  std::string history() const { return (dir_.path() / "history.db").string(); }
  // The nights run so far: each is a run of the history, whose ids count from 1.
  int64_t nights() const { return nights_; }
  nlohmann::json result(const Night& n) const {
    return loadlab::read_json_file((dir_.path() / n.name / "result.json").string());
  }

  // A night, run again (twice more at most) while the machine was busy with other work, which
  // makes it inconclusive, as the tool says it must (unit-tested: verdict_test.cpp). Such a
  // night stays in the history (a run of its own, a point of every trend) but is none of the
  // baseline nights of the nights after it (controller/judge/verdict.cpp: SeriesJudge::context
  // skips a disturbed night), so another try changes only how many nights there are. `each`
  // checks every try for what holds whatever the machine did.
  Night night(const std::string& name, bool slow, const Check& each) {
    Night n;
    for (int attempt = 1; attempt <= kTries; ++attempt) {
      n.name = attempt == 1 ? name : name + "-try" + std::to_string(attempt);
      n.run = run_night(n.name, slow);
      n.why = busy_reason(n);
      n.busy = !n.why.empty();
      each(n);
      if (!n.busy) break;
    }
    return n;
  }
  static std::string skip_reason(const Night& n) {
    return "the machine was busy with other work on " + std::to_string(kTries) +
           " tries of the night (the last " + n.name +
           "), so the nights after it cannot be predicted here: " + n.why;
  }

  // What holds of a night whatever the machine did: its exit status is its verdict's (1 for a
  // regression), judged against the history; its trend has every night run so far; its report
  // draws it.
  void expect_judged_and_kept(const Night& n) const {
    auto r = result(n);
    auto& v = r["verdicts"]["cells"][0];
    EXPECT_EQ(n.run.code, v["verdict"] == "regression" ? 1 : 0) << n.run.stdout_text << n.run.output_tail;
    EXPECT_EQ(r["verdicts"]["baseline"], history());
    EXPECT_EQ(r["trends"]["cells"]["beast/d20/t4"].size(), static_cast<size_t>(nights_));  // every night
    std::ifstream html(dir_.path() / n.name / "report.html");
    std::string page((std::istreambuf_iterator<char>(html)), {});
    EXPECT_NE(page.find("<circle class=\"tonight\""), std::string::npos) << n.name;
  }

 private:
  static constexpr int kTries = 3;
  std::filesystem::path slow_bin() const { return dir_.path() / "slow-bin"; }
  RunOutput run_night(const std::string& name, bool slow) {
    std::vector<std::string> argv{bin("loadlab"),
                                  "--log-level",
                                  "warn",
                                  "run",
                                  scenario_,
                                  "--out",
                                  (dir_.path() / name).string(),
                                  "--history",
                                  history(),
                                  "--baseline",
                                  "history"};
    if (slow) argv.insert(argv.end(), {"--bin-dir", slow_bin().string()});
    ++nights_;
    return run_command(argv);
  }
  // The verdict's reason when other work on the machine made the night inconclusive, else "".
  std::string busy_reason(const Night& n) const {
    const auto path = dir_.path() / n.name / "result.json";
    if (!std::filesystem::exists(path)) return "";
    auto r = loadlab::read_json_file(path.string());
    auto& v = r["verdicts"]["cells"][0];
    if (v["verdict"] != "inconclusive") return "";
    const std::string reason = v.value("reason", std::string());
    return reason.find("the machine was busy") == std::string::npos ? "" : reason;
  }

  TempDir dir_;
  std::string scenario_;
  int64_t nights_ = 0;
};

// The nights of a slower build in the history of EachNightGoesIntoTheHistory... below, then the
// level accepted and a night against it. "" when every night ran; else why the test stops there
// (a night that other work on the machine kept busy).
std::string slow_nights_then_a_new_level(NightlyHistory& h) {
  using Night = NightlyHistory::Night;
  // The slow build, against 5 nights: a regression, confirmed before the alarm (measured again on
  // fresh targets, kept beside the first).
  auto n = h.night("slow", true, [&](const Night& t) { h.expect_judged_and_kept(t); });
  if (n.busy) return NightlyHistory::skip_reason(n);
  auto result = h.result(n);
  auto& v = result["verdicts"]["cells"][0];
  EXPECT_EQ(v["history"].size(), 5u);  // the baseline nights
  EXPECT_EQ(n.run.code, 1) << n.run.stdout_text << n.run.output_tail;
  EXPECT_EQ(v["verdict"], "regression") << v.dump();
  EXPECT_EQ(v["nights"], 5);
  EXPECT_EQ(result["cells"][0]["confirmations"].size(), 3u);
  EXPECT_NE(v["reason"].get<std::string>().find("confirmed on fresh targets"), std::string::npos) << v.dump();
  const std::string slow_run = std::to_string(h.nights());  // its id in the history
  // The regression stays out of the band: the next slow night is one too.
  n = h.night("slow2", true, [&](const Night& t) { h.expect_judged_and_kept(t); });
  if (n.busy) return NightlyHistory::skip_reason(n);
  EXPECT_EQ(n.run.code, 1) << n.run.stdout_text << n.run.output_tail;
  // Accepted as the new level from the first slow night: the next night is judged against it
  // (two nights of it so far: too few for a band, no longer a regression).
  auto r = run_command({bin("loadlab"), "history", h.history(), "accept", "all", "--run", slow_run});
  EXPECT_EQ(r.code, 0) << r.output_tail;
  EXPECT_NE(r.stdout_text.find("every cell starts a new level at run " + slow_run), std::string::npos)
      << r.stdout_text;
  n = h.night("slow3", true, [&](const Night& t) {
    h.expect_judged_and_kept(t);
    EXPECT_EQ(t.run.code, 0) << t.run.stdout_text << t.run.output_tail;
    EXPECT_NE(h.result(t)["verdicts"]["cells"][0]["verdict"], "regression") << "2 nights of the new level";
  });
  if (n.busy) return NightlyHistory::skip_reason(n);
  result = h.result(n);
  EXPECT_NE(
      result["verdicts"]["cells"][0]["reason"].get<std::string>().find("2 nights of history (5 needed)"),
      std::string::npos)
      << result["verdicts"].dump();
  EXPECT_EQ(result["verdicts"]["cells"][0]["nights"], 2);
  return "";
}

// The nightly loop: each night appended to the history and judged against the nights before
// it; the verdicts and the trend in result.json and report.html. What holds whatever the machine
// did is checked before a night that other work kept busy ends the test.
TEST(Cli, EachNightGoesIntoTheHistoryAndIsJudgedAgainstTheNightsBefore) {
  auto r = run_command({bin("loadlab"), "run", "x.json", "--baseline", "history:last-good"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output_tail.find("needs --history FILE"), std::string::npos) << r.output_tail;
  NightlyHistory h;
  // Nothing to compare the first night with. (One that other work disturbed is measured again
  // within the run, so that a clean figure starts the history: its reason then begins with
  // "measured again".)
  auto n = h.night("n1", false, [](const NightlyHistory::Night& t) {
    EXPECT_EQ(t.run.code, 0) << t.run.output_tail;
    EXPECT_NE(t.run.stdout_text.find("inconclusive: "), std::string::npos) << t.run.stdout_text;
  });
  r = run_command({bin("loadlab"), "history", h.history()});
  EXPECT_EQ(r.code, 0) << r.output_tail;
  EXPECT_NE(r.stdout_text.find("nightly"), std::string::npos) << r.stdout_text;
  if (n.busy) GTEST_SKIP() << NightlyHistory::skip_reason(n);
  EXPECT_NE(n.run.stdout_text.find("no earlier night to compare with"), std::string::npos)
      << n.run.stdout_text;
  for (int i = 2; i <= 5; ++i) {
    n = h.night("n" + std::to_string(i), false, [](const NightlyHistory::Night& t) {
      EXPECT_EQ(t.run.code, 0) << t.run.stdout_text << t.run.output_tail;
    });
    if (n.busy) GTEST_SKIP() << NightlyHistory::skip_reason(n);
  }
  EXPECT_NE(n.run.stdout_text.find("4 nights of history (5 needed)"), std::string::npos) << n.run.stdout_text;
  if (auto why = slow_nights_then_a_new_level(h); !why.empty()) GTEST_SKIP() << why;
}

TEST(Cli, AnUnknownAxisExitsTwoNamingThePathAndTheAllowedAxes) {
  TempDir dir;
  auto s = dir.file("s.json", R"({"name": "x", "targets": [{"name": "a", "builtin": "hello"}],
      "matrix": {"threads": [1], "conections": [10]}, "load": {"total_requests": 10}})");
  for (auto* cmd : {"validate", "run"}) {
    auto r = run_command({bin("loadlab"), cmd, s, "--set", "load.total_requests=20"});
    EXPECT_EQ(r.code, 2) << cmd;
    EXPECT_NE(r.output_tail.find("/matrix/conections: unknown axis; allowed: delay_ms, threads, "
                                 "connections_per_thread, connections, rate, body_size, server_threads, "
                                 "keep_alive, client, protocol, tls_version"),
              std::string::npos)
        << r.output_tail;
  }
}

TEST(Cli, SetOverridesAValueAndTheRunFolderKeepsTheScenarioAsRun) {
  TempDir dir;
  auto s = dir.file("s.json", R"({"name": "x", "targets": [{"name": "a", "builtin": "hello"}],
      "matrix": {"threads": [1, 2], "delay_ms": [0]}, "load": {"total_requests": 10}})");
  auto r = run_command({bin("loadlab"), "validate", s, "--set", "matrix.threads=[3]"});
  EXPECT_EQ(r.code, 0) << r.output_tail;
  EXPECT_NE(r.stdout_text.find("ok, 1 cells"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("a/t3/d0"), std::string::npos) << r.stdout_text;
  auto out = dir.path() / "o";
  r = run_command({bin("loadlab"), "--log-level", "warn", "run", s, "--set", "load.total_requests=30",
                   "--out", out.string()});
  ASSERT_EQ(r.code, 0) << r.output_tail;
  auto result = loadlab::read_json_file((out / "result.json").string());
  EXPECT_EQ(result["overrides"], nlohmann::json::array({"load.total_requests=30"}));
  EXPECT_EQ(result["scenario"]["load"]["total_requests"], 30);
  auto copy = loadlab::read_json_file((out / "scenario.json").string());
  EXPECT_EQ(copy["load"]["total_requests"], 30);
  auto cells = result_cells(out / "result.json");
  ASSERT_EQ(cells.size(), 2u);
  EXPECT_EQ(cells[0].cell().key(), "a/t1/d0");  // the file's axis order, kept through the copy
  EXPECT_EQ(cells[1].median().requests(), 30u);
  r = run_command({bin("loadlab"), "run", "--resume", out.string(), "--set", "name=y"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output_tail.find("--set and --resume exclude each other"), std::string::npos) << r.output_tail;
}

TEST(Cli, AgentRefusesAPortInUse) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  auto r = run_command({bin("loadlab-agent"), "--listen", "127.0.0.1:" + std::to_string(ntohs(a.sin_port))},
                       std::chrono::seconds(20));
  close(fd);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output_tail.find("cannot listen on"), std::string::npos) << r.output_tail;
}

TEST(Cli, RunsOnARemoteAgentFromALabFileAndTheAgentStopsCleanly) {
  TempDir dir;
  auto agent =
      loadlab::testing::spawn_tool({bin("loadlab-agent"), "--listen", "127.0.0.1:0", "--name", "a1"});
  std::string line;
  ASSERT_EQ(agent->next_line(line, std::chrono::seconds(10)), agent::ChildProcess::LineStatus::kLine);
  ASSERT_EQ(line.rfind("listening on ", 0), 0u) << line;
  std::string address = line.substr(13);
  auto lab = dir.file("lab.json", R"({"agents": [{"name": "a1", "address": ")" + address +
                                      R"(", "roles": ["target", "load"]}]})");
  auto out = dir.path() / "out";
  auto r =
      run_command({bin("loadlab"), "run", dir.file("s.json", kSmall), "--lab", lab, "--out", out.string()});
  ASSERT_EQ(r.code, 0) << r.output_tail;
  auto result = read_json_file((out / "result.json").string());
  auto cells = result_cells(out / "result.json");
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].median().requests(), 500u);
  EXPECT_EQ(result["agents"][0]["describe"]["name"], "a1");
  EXPECT_GT(result["agents"][0]["describe"]["cores"].get<int>(), 0);

  kill(agent->pid(), SIGTERM);
  auto st = agent->wait_exit(std::chrono::seconds(10));
  ASSERT_TRUE(st);
  EXPECT_EQ(st->code, 0);
}

// A long one-cell run against a separate agent process, for lease tests.
struct LongRun {
  TempDir dir;
  std::unique_ptr<agent::ChildProcess> agent, controller;
  pid_t target_pid = 0, load_pid = 0;

  LongRun() {
    agent = loadlab::testing::spawn_tool({bin("loadlab-agent"), "--listen", "127.0.0.1:0", "--name", "a1"});
    std::string line;
    EXPECT_EQ(agent->next_line(line, std::chrono::seconds(10)), agent::ChildProcess::LineStatus::kLine);
    auto lab = dir.file("lab.json", R"({"agents": [{"name": "a1", "address": ")" + line.substr(13) +
                                        R"(", "roles": ["target", "load"]}]})");
    auto s = dir.file("s.json",
                      R"({"name": "long", "targets": [{"name": "b", "builtin": "hello", "server_threads": 1}],
        "matrix": {"delay_ms": [1], "threads": [2]}, "load": {"duration_s": 60}})");
    controller = loadlab::testing::spawn_tool(
        {bin("loadlab"), "run", s, "--lab", lab, "--out", (dir.path() / "out").string()});
    // The agent logs the pids of what it starts.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while ((target_pid == 0 || load_pid == 0) && std::chrono::steady_clock::now() < deadline) {
      auto tail = agent->output_tail(50);
      auto t = tail.find("target hello pid ");
      if (t != std::string::npos) target_pid = std::atoi(tail.c_str() + t + 17);
      auto l = tail.find("load pid ");
      if (l != std::string::npos) load_pid = std::atoi(tail.c_str() + l + 9);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
};

bool running(pid_t pid) { return loadlab::testing::process_running(pid); }

bool gone_within(pid_t pid, std::chrono::seconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (running(pid) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return !running(pid);
}

TEST(Lease, AControllerKilledMidCellLeavesNoTargetOrLoadBehind) {
  LongRun run;
  ASSERT_GT(run.target_pid, 0) << run.agent->output_tail();
  ASSERT_GT(run.load_pid, 0) << run.agent->output_tail();
  ASSERT_TRUE(running(run.target_pid)) << run.target_pid << ": " << run.agent->output_tail();
  ASSERT_TRUE(running(run.load_pid)) << run.load_pid << ": " << run.agent->output_tail();
  kill(run.controller->pid(), SIGKILL);
  EXPECT_TRUE(gone_within(run.target_pid, std::chrono::seconds(10)));
  EXPECT_TRUE(gone_within(run.load_pid, std::chrono::seconds(10)));
  // The agent itself goes on, free for the next job.
  EXPECT_FALSE(run.agent->poll_exit());
  kill(run.agent->pid(), SIGTERM);
  auto st = run.agent->wait_exit(std::chrono::seconds(10));
  ASSERT_TRUE(st);
  EXPECT_EQ(st->code, 0);
}

TEST(Lease, SigtermToTheAgentStopsEveryChildAndTheCellFailsWithAReason) {
  LongRun run;
  // Both pids read from the agent's log, each a process that runs before it is checked gone
  // (running(0) is false whatever the agent did).
  ASSERT_GT(run.target_pid, 0) << run.agent->output_tail();
  ASSERT_GT(run.load_pid, 0) << run.agent->output_tail();
  ASSERT_TRUE(running(run.target_pid)) << run.target_pid << ": " << run.agent->output_tail();
  ASSERT_TRUE(running(run.load_pid)) << run.load_pid << ": " << run.agent->output_tail();
  kill(run.agent->pid(), SIGTERM);
  auto st = run.agent->wait_exit(std::chrono::seconds(10));
  ASSERT_TRUE(st);
  EXPECT_EQ(st->code, 0);
  EXPECT_FALSE(running(run.target_pid));
  EXPECT_FALSE(running(run.load_pid));
  auto cst = run.controller->wait_exit(std::chrono::seconds(30));
  ASSERT_TRUE(cst);
  EXPECT_EQ(cst->code, 3) << run.controller->output_tail();
  auto cells = result_cells(run.dir.path() / "out" / "result.json");
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_FALSE(cells[0].ok());
  EXPECT_FALSE(cells[0].error().empty());
}

TEST(Lease, SigintStopsARunMidCellWithinSecondsAndLeavesNothingBehind) {
  LongRun run;
  ASSERT_GT(run.target_pid, 0) << run.agent->output_tail();
  ASSERT_GT(run.load_pid, 0) << run.agent->output_tail();
  ASSERT_TRUE(running(run.target_pid)) << run.target_pid << ": " << run.agent->output_tail();
  ASSERT_TRUE(running(run.load_pid)) << run.load_pid << ": " << run.agent->output_tail();
  auto t0 = std::chrono::steady_clock::now();
  kill(run.controller->pid(), SIGINT);
  auto st = run.controller->wait_exit(std::chrono::seconds(20));
  ASSERT_TRUE(st);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));  // not the 60 s cell
  EXPECT_EQ(st->code, 128 + SIGINT) << run.controller->output_tail();
  EXPECT_TRUE(gone_within(run.target_pid, std::chrono::seconds(10)));
  EXPECT_TRUE(gone_within(run.load_pid, std::chrono::seconds(10)));
  // The cut cell is not a failure in the results: --resume measures it.
  auto result = read_json_file((run.dir.path() / "out" / "result.json").string());
  EXPECT_TRUE(result["cells"].empty()) << result["cells"].dump();
  EXPECT_FALSE(run.agent->poll_exit());
}

// The pairs of an A/B verdict cell that were left out (other work ran on their CPUs: a
// busy-machine flag on either side), and all its pairs.
std::pair<size_t, size_t> left_out_pairs(const nlohmann::json& cell) {
  size_t left_out = 0;
  for (const auto& p : cell.at("pairs")) left_out += p.value("left_out", false) ? 1 : 0;
  return {left_out, cell.at("pairs").size()};
}

// An A/B run's JUnit file: its verdicts are testcases of their own class, B's cells judged
// against A's (two built-in servers; B answers after 40 ms, A after 20: half the rate).
TEST(Cli, AnABRunsVerdictsAreJUnitTestcasesOfTheirOwn) {
  TempDir dir;
  const auto scenario = dir.file("ab.json", R"({"name": "pr", "targets": [
      {"name": "main", "builtin": "hello", "server_threads": 1, "delay_ms": 20},
      {"name": "slow", "builtin": "hello", "server_threads": 1, "delay_ms": 40}],
      "matrix": {"threads": [2]}, "load": {"requests_per_thread": 20},
      "repetitions": 4, "ab": {"a": "main", "b": "slow"},
      "execution": {"remeasure_wait_s": 0.5}})");
  const auto junit = (dir.path() / "ab.xml").string();
  auto r = run_command({bin("loadlab"), "--log-level", "warn", "run", scenario, "--out",
                        (dir.path() / "run").string(), "--quiet", "--junit", junit});
  const auto result = loadlab::read_json_file((dir.path() / "run" / "result.json").string());
  ASSERT_TRUE(result.contains("ab") && result["ab"].contains("cells")) << r.output_tail;
  ASSERT_EQ(result["ab"]["cells"].size(), 1u) << result["ab"].dump();
  const auto& cell = result["ab"]["cells"][0];
  const std::string verdict = cell.at("verdict");
  EXPECT_EQ(r.code, verdict == "regression" ? 1 : 0) << r.stdout_text << r.output_tail;
  // Regression, unless other work on the CPUs left pairs out (a tenth of them or more):
  // inconclusive then, and skipped.
  const auto [left_out, pairs] = left_out_pairs(cell);
  if (left_out > 0 && left_out * 10 >= pairs)
    EXPECT_TRUE(verdict == "regression" || verdict == "inconclusive") << verdict << ": " << cell.dump();
  else
    EXPECT_EQ(verdict, "regression") << left_out << " of " << pairs << " pairs left out: " << cell.dump();
  // Debian's python3-junitparser is for /usr/bin/python3 (a pyenv python3 may come first on PATH).
  if (std::system("/usr/bin/python3 -c 'import junitparser' 2>/dev/null") != 0)
    GTEST_SKIP()
        << "python3-junitparser is not installed (make deps installs it); the JUnit file is not read";
  r = run_command({"/usr/bin/python3", "-c", R"(
import sys, junitparser
for suite in junitparser.JUnitXml.fromfile(sys.argv[1]):
    for case in suite:
        print(case.classname, case.name, "PASS" if case.is_passed else type(case.result[0]).__name__, sep="|")
)",
                   junit});
  ASSERT_EQ(r.code, 0) << r.output_tail;
  EXPECT_NE(r.stdout_text.find("pr|main/t2|PASS"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("pr|slow/t2|PASS"), std::string::npos) << r.stdout_text;
  EXPECT_NE(
      r.stdout_text.find("pr.ab|slow/t2|" + std::string(verdict == "regression" ? "Failure" : "Skipped")),
      std::string::npos)
      << r.stdout_text;
}

// What a terminal showed: the pty's bytes cut at every \r and \n, erase sequences and
// colours removed, empty pieces dropped.
std::vector<std::string> terminal_segments(const std::string& bytes) {
  static const std::regex ansi("\033\\[[0-9;]*[A-Za-z]");
  std::vector<std::string> segments;
  std::string piece;
  for (char c : bytes + "\n") {
    if (c != '\r' && c != '\n') {
      piece += c;
      continue;
    }
    piece = std::regex_replace(piece, ansi, "");
    if (!piece.empty()) segments.push_back(piece);
    piece.clear();
  }
  return segments;
}

// On a terminal the bar (redrawn in place on stderr) and the embedded agent's log records
// (stderr too) must never share a line: each record printed whole above the bar, the bar
// redrawn below it. `script` runs loadlab on a pseudo-terminal.
TEST(Cli, OnATerminalLogRecordsArePrintedAboveTheProgressBarNeverOnIt) {
  TempDir dir;
  auto s = dir.file(
      "s.json", R"({"name": "tty", "targets": [{"name": "beast", "builtin": "hello", "server_threads": 1}],
      "matrix": {"delay_ms": [0, 1], "threads": [1]}, "load": {"duration_s": 1}})");
  std::string command =
      bin("loadlab") + " --log-level info run " + s + " --out " + (dir.path() / "out").string();
  auto r = run_command({"/usr/bin/script", "-qfc", command, "/dev/null"});
  ASSERT_EQ(r.code, 0) << r.stdout_text;
  static const std::regex bar("\\[[#-]{24}\\]|ETA ");
  static const std::regex record("20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3} ");
  std::vector<size_t> bars, records;
  auto segments = terminal_segments(r.stdout_text);
  for (size_t i = 0; i < segments.size(); ++i) {
    bool is_bar = std::regex_search(segments[i], bar), is_record = std::regex_search(segments[i], record);
    EXPECT_FALSE(is_bar && is_record) << "bar and log record on one line: " << segments[i];
    if (is_bar) bars.push_back(i);
    if (is_record) records.push_back(i);
  }
  // Else the test would pass with no bar or no log at all: records came while a bar was up.
  ASSERT_GE(bars.size(), 4u) << r.stdout_text;
  auto under_bar = std::count_if(records.begin(), records.end(),
                                 [&](size_t i) { return i > bars.front() && i < bars.back(); });
  EXPECT_GE(under_bar, 4) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("target hello pid"), std::string::npos) << r.stdout_text;
}

// A lab that cannot be used has its own exit status: 1 would be read as a regression.
TEST(Cli, UnreachableAgentIsOneClearLineAndStatusFour) {
  TempDir dir;
  auto lab = dir.file(
      "lab.json", R"({"agents": [{"name": "gone", "address": "127.0.0.1:1", "roles": ["target", "load"]}]})");
  auto r = run_command({bin("loadlab"), "run", dir.file("s.json", kSmall), "--lab", lab, "--out",
                        (dir.path() / "o").string()});
  EXPECT_EQ(r.code, 4);
  EXPECT_NE(r.output_tail.find("cannot reach agent gone at 127.0.0.1:1"), std::string::npos) << r.output_tail;
}

// Hostile scenario files: exit status 2 with one line naming the file and the value's path,
// before any folder is made.
TEST(Cli, HostileScenarioFilesExitTwoNamingTheFileAndThePath) {
  TempDir dir;
  auto scenario = [&](const std::string& name, const std::string& target) {
    return dir.file(name, R"({"name": "x", "targets": [)" + target + R"(],
        "matrix": {"threads": [1]}, "load": {"total_requests": 10}})");
  };
  const std::string huge = scenario("huge.json", R"({"name": "a", "builtin": "hello", "delay_ms": 1e309})");
  const std::string twice =
      scenario("twice.json", R"({"name": "a", "builtin": "hello", "delay_ms": 1, "delay_ms": 5})");
  std::filesystem::create_directories(dir.path() / "folder.json");
  const std::string folder = (dir.path() / "folder.json").string();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {huge, huge + ": /targets/0/delay_ms: number out of range"},
      {twice, twice + ": /targets/0/delay_ms: duplicate key"},
      // A folder is a folder of scenarios (loadlab run DIR): this one holds none.
      {folder, folder + ": /: the folder holds no scenario file (*.json; subfolders are not searched)"},
  };
  for (auto& [file, line] : cases)
    for (std::string cmd : {"validate", "run"}) {
      auto r = cmd == "run" ? run_command({bin("loadlab"), "run", file, "--out", (dir.path() / "o").string()})
                            : run_command({bin("loadlab"), "validate", file});
      EXPECT_EQ(r.code, 2) << cmd << " " << file << ": " << r.output_tail;
      EXPECT_NE(r.output_tail.find("loadlab: " + line), std::string::npos) << r.output_tail;
      EXPECT_FALSE(std::filesystem::exists(dir.path() / "o"));
    }
  auto r = run_command({bin("loadlab"), "validate", dir.file("up.json", R"({"name": "../../x",
      "targets": [{"name": "a", "builtin": "hello"}], "matrix": {"threads": [1]}, "load": {"total_requests": 10}})")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output_tail.find("/name: must be 1..100 letters"), std::string::npos) << r.output_tail;
}

// Whatever can be refused is checked before the run's folder is made, and a new run never
// writes into a folder that holds anything.
TEST(Cli, ARunChecksEveryInputBeforeItMakesItsFolderAndNeverOverwritesOne) {
  TempDir dir;
  const auto s = dir.file("s.json", kSmall);
  const auto out = dir.path() / "o";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--lab", (dir.path() / "no-lab.json").string()}, "cannot read file"},
      {{"--baseline", (dir.path() / "no-run").string()}, "cannot read file"},
      {{"--baseline", s}, "/cells: is required: --baseline names a run folder or its result.json"},
      {{"--history", (dir.path() / "no" / "history.db").string()}, "--history: cannot create"},
      {{"--history", s}, "not a loadlab history database"},
  };
  for (auto& [flags, error] : cases) {
    std::vector<std::string> argv = {bin("loadlab"), "run", s, "--out", out.string()};
    argv.insert(argv.end(), flags.begin(), flags.end());
    auto r = run_command(argv);
    EXPECT_EQ(r.code, 2) << flags[0] << ": " << r.output_tail;
    EXPECT_NE(r.output_tail.find(error), std::string::npos) << r.output_tail;
    EXPECT_FALSE(std::filesystem::exists(out)) << flags[0];
  }
  std::filesystem::create_directories(out);
  std::ofstream(out / "scenario.json") << "an earlier run's";
  auto r = run_command({bin("loadlab"), "run", s, "--out", out.string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output_tail.find("--out: " + out.string() + " already exists and is not empty"),
            std::string::npos)
      << r.output_tail;
  EXPECT_NE(r.output_tail.find("--resume " + out.string()), std::string::npos) << r.output_tail;
  std::ifstream kept(out / "scenario.json");
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(kept)), {}), "an earlier run's");
}

std::string file_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

TEST(Cli, ResumeRefusesAScenarioEditedSinceTheRunStarted) {
  TempDir dir;
  const auto out = dir.path() / "o";
  auto r = run_command(
      {bin("loadlab"), "--log-level", "warn", "run", dir.file("s.json", kSmall), "--out", out.string()});
  ASSERT_EQ(r.code, 0) << r.output_tail;
  const std::string journal = file_bytes(out / "journal.jsonl"), result = file_bytes(out / "result.json");
  ASSERT_FALSE(journal.empty());
  std::string edited = file_bytes(out / "scenario.json");
  edited.replace(edited.find("500"), 3, "900");
  std::ofstream(out / "scenario.json") << edited;
  r = run_command({bin("loadlab"), "run", "--resume", out.string()});
  EXPECT_EQ(r.code, 2) << r.output_tail;
  EXPECT_NE(r.output_tail.find("scenario.json changed since the run started: its sha256 is "),
            std::string::npos)
      << r.output_tail;
  EXPECT_EQ(file_bytes(out / "journal.jsonl"), journal);  // nothing measured, nothing written
  EXPECT_EQ(file_bytes(out / "result.json"), result);
}

// Every numeric flag of every program has a range: a value outside it (negative, beyond a
// double, huge, not a number) is exit status 2 with a line naming the flag.
TEST(Cli, EveryProgramRefusesAnOutOfRangeNumberNamingTheFlag) {
  TempDir dir;
  const std::string url = "http://127.0.0.1:1/";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"loadlab", "compare", "a", "b", "--threshold-pct", "-5"},
       "--threshold-pct: must be a number in 0..1000"},
      {{"loadlab", "compare", "a", "b", "--threshold-pct", "1e309"}, "--threshold-pct"},
      {{"loadlab", "compare", "a", "b", "--threshold-pct", "nan"}, "--threshold-pct"},
      {{"loadlab", "history", "h.db", "--last", "-1"}, "--last: must be a number in 0..1000000"},
      {{"loadlab", "history", "h.db", "--last", "1e309"}, "--last"},
      {{"loadlab-load", url, "-t", "-1"}, "--threads"},
      {{"loadlab-load", url, "-t", "1e309"}, "--threads"},
      {{"loadlab-load", url, "-c", "99999999999"}, "--connections"},
      {{"loadlab-load", url, "-n", "-5"}, "--requests"},
      {{"loadlab-load", url, "--total", "1e309"}, "--total"},
      {{"loadlab-load", url, "-d", "1e309"}, "--duration"},
      {{"loadlab-load", url, "--warmup", "-1"}, "--warmup"},
      {{"loadlab-load", url, "--rate", "1e309"}, "--rate"},
      {{"loadlab-load", url, "--timeout", "0"}, "--timeout"},
      {{"loadlab-target", "--threads", "0"}, "--threads"},
      {{"loadlab-target", "--threads", "99999999999999999999999"}, "--threads"},
      {{"loadlab-target", "--delay-ms", "1e309"}, "--delay-ms"},
      {{"loadlab-target", "--work-us", "-1"}, "--work-us"},
      {{"loadlab-target", "--body-size", "67108865"}, "--body-size"},
      {{"loadlab-target", "--status", "600"}, "--status"},
      {{"loadlab-target", "--stall", "1:0"}, "--stall"},
      {{"loadlab-target", "--read-timeout-ms", "0"}, "--read-timeout-ms"},
      {{"loadlab-target", "--idle-timeout-ms", "1e309"}, "--idle-timeout-ms"},
      {{"loadlab-target", "--listen", "127.0.0.1:65536"}, "--listen"},
      {{"loadlab-agent", "--listen", "127.0.0.1:0", "--sample-interval-ms", "1e309"}, "--sample-interval-ms"},
      {{"loadlab-agent", "--listen", "127.0.0.1:0", "--sample-interval-ms", "-1"}, "--sample-interval-ms"},
  };
  for (auto [argv, error] : cases) {
    argv[0] = bin(argv[0]);
    auto r = run_command(argv, std::chrono::seconds(20));
    std::string line;
    for (auto& a : argv) line += " " + a;
    EXPECT_EQ(r.code, 2) << line << ": " << r.output_tail;
    EXPECT_NE(r.output_tail.find(error), std::string::npos) << line << ": " << r.output_tail;
  }
}

}  // namespace
}  // namespace loadlab
