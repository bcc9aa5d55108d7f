// CPU placement through a whole cell: the target's and the load worker's own
// Cpus_allowed_list (written by wrappers of the two programs as they start, before they exec
// the real ones) are the sets the cell records, on the cpuset path and on the affinity path.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "loadlab/agent/cpu_binding.hpp"
#include "loadlab/shared/json_input.hpp"
#include "test_support.hpp"

namespace loadlab {
namespace {

using testing::bin;
using testing::run_command;
using testing::TempDir;
namespace fs = std::filesystem;

std::string cpus_line(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);  // "Cpus_allowed_list:\t0"
  auto tab = line.find_first_of(" \t");
  return tab == std::string::npos ? "" : line.substr(line.find_first_not_of(" \t", tab));
}

class Placement : public ::testing::TestWithParam<const char*> {};

TEST_P(Placement, TheProcessesRunOnTheSetsTheCellRecords) {
  const CpuList mine = agent::allowed_cpus();
  if (mine.size() < 2) GTEST_SKIP() << "one CPU: nothing to place apart";
  const std::string binding = GetParam();
  TempDir dir;
  const fs::path wrappers = dir.path() / "bin";
  fs::create_directories(wrappers);
  for (const char* program : {"loadlab-target", "loadlab-load"}) {
    dir.file(std::string("bin/") + program, "#!/bin/sh\ngrep Cpus_allowed_list /proc/self/status > " +
                                                (dir.path() / program).string() + ".cpus\nexec " +
                                                bin(program) + " \"$@\"\n");
    fs::permissions(wrappers / program, fs::perms::owner_all);
  }
  agent::SpawnOptions env;
  env.env = {{"LOADLAB_CPU_BINDING", binding}};
  auto agent = loadlab::testing::spawn_tool(
      {bin("loadlab-agent"), "--listen", "127.0.0.1:0", "--name", "one", "--bin-dir", wrappers.string()},
      env);
  std::string line;
  ASSERT_EQ(agent->next_line(line, std::chrono::seconds(10)), agent::ChildProcess::LineStatus::kLine);
  const std::string address = line.substr(13);
  auto lab = dir.file("lab.json", R"({"agents": [{"name": "one", "address": ")" + address +
                                      R"(", "roles": ["target", "load"]}]})");
  // The target on the second CPU, the load on the first: not what an unpinned run would show.
  const std::string target = std::to_string(mine.cpus()[1]), load = std::to_string(mine.cpus()[0]);
  auto s = dir.file("s.json", R"({"name": "placed", "targets": [{"name": "b", "builtin": "hello"}],
      "matrix": {"delay_ms": [1]}, "load": {"duration_s": 0.3, "warmup_s": 0.1},
      "placement": {"cpus": {"target": ")" +
                                  target + R"(", "load": ")" + load + R"("}}})");
  auto r = run_command({bin("loadlab"), "--log-level", "warn", "run", s, "--lab", lab, "--out",
                        (dir.path() / "run").string()});
  ASSERT_EQ(r.code, 0) << r.stdout_text << r.output_tail;
  auto result = read_json_file((dir.path() / "run" / "result.json").string());
  const std::string used = result["agents"][0]["describe"]["cpu_binding"];
  if (binding != "affinity" && used == "affinity") GTEST_SKIP() << "no cpuset here: " << binding;
  const auto& rep = result["cells"][0]["repetitions"][0];
  EXPECT_EQ(cpus_line(dir.path() / "loadlab-target.cpus"), target);
  EXPECT_EQ(cpus_line(dir.path() / "loadlab-load.cpus"), load);
  EXPECT_EQ(rep["server"]["cpus"], target);
  EXPECT_EQ(rep["load_parts"][0]["client"]["cpus"], load);
  EXPECT_EQ(rep["server"]["cpu_binding"], used);
  EXPECT_EQ(rep["load_parts"][0]["client"]["cpu_binding"], used);
  if (binding == "affinity") {
    EXPECT_EQ(used, "affinity");
  }
  EXPECT_EQ(rep["server"]["cpu_busy"].size(), mine.size()) << "every CPU's busy share";
  // The table says where each side ran.
  EXPECT_NE(r.stdout_text.find(target + "/" + load), std::string::npos) << r.stdout_text;
  // A set outside the agent's CPUs is refused before anything runs, naming the path.
  r = run_command({bin("loadlab"), "run", s, "--lab", lab, "--out", (dir.path() / "no").string(), "--set",
                   "placement.cpus={\"target\":\"4095\"}"});
  EXPECT_EQ(r.code, 2) << r.output_tail;
  EXPECT_NE(r.output_tail.find("/placement/cpus/target: \"4095\" is not within the CPUs agent one may use"),
            std::string::npos)
      << r.output_tail;
  EXPECT_FALSE(fs::exists(dir.path() / "no"));
}

// Ground truth for the busy-machine flag: a process that never sleeps (`yes`) held to the CPU
// of a delay-0 cell's target and load takes a third of it or more (43 % seen here, the cell's
// req/s cut from 35 k to 13.5 k), and every repetition says so.
TEST(BusyMachine, ANeighbourOnTheCellsOwnCpuFlagsEveryRepetition) {
  const CpuList mine = agent::allowed_cpus();
  const std::string cpu = std::to_string(mine.cpus().back());
  agent::SpawnOptions on_cpu;
  on_cpu.cpus = *CpuList::parse(cpu);
  auto neighbour = agent::ChildProcess::spawn({"/bin/sh", "-c", "exec yes > /dev/null"}, on_cpu);
  TempDir dir;
  auto s = dir.file("s.json", R"({"name": "crowded", "targets": [{"name": "b", "builtin": "hello"}],
      "matrix": {"delay_ms": [0]}, "load": {"duration_s": 0.5, "warmup_s": 0.1}, "repetitions": 3,
      "placement": {"cpus": {"target": ")" +
                                  cpu + R"(", "load": ")" + cpu + R"("}}})");
  auto r =
      run_command({bin("loadlab"), "--log-level", "warn", "run", s, "--out", (dir.path() / "run").string()});
  neighbour.reset();
  ASSERT_EQ(r.code, 0) << r.stdout_text << r.output_tail;
  auto result = read_json_file((dir.path() / "run" / "result.json").string());
  ASSERT_EQ(result["cells"].size(), 1u) << result["cells"].dump();
  ASSERT_EQ(result["cells"][0]["repetitions"].size(), 3u) << "the scenario's repetitions";
  for (const auto& rep : result["cells"][0]["repetitions"]) {
    bool flagged = false;
    for (const auto& f : rep["flags"]) flagged |= f.get<std::string>().rfind("busy-machine:", 0) == 0;
    double busy = 0;
    for (const auto& b : rep["server"]["cpu_busy"])
      if (std::to_string(b["cpu"].get<int>()) == cpu) busy = b["busy_pct"];
    EXPECT_TRUE(flagged) << "CPU " << cpu << " " << busy << " % busy, the cell's own "
                         << rep["server"]["cpu_pct"].get<double>() +
                                rep["load_parts"][0]["client"]["cpu_pct"].get<double>()
                         << " %: " << rep["flags"].dump();
  }
}

// "auto" takes the machine's cpuset where there is one (cpuset-v1 on hybrid hosts, cpuset-v2
// where the cpuset controller is delegated); "affinity" only sched_setaffinity.
INSTANTIATE_TEST_SUITE_P(Bindings, Placement, ::testing::Values("auto", "affinity"));

}  // namespace
}  // namespace loadlab
