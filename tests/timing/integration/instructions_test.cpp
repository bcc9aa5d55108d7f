// Instructions per request (a scenario's `instructions`, docs/instructions.md): counted under
// callgrind through the agent, for the built-in target and a small C catalog target. The
// ground truth is a knob of the C target that adds a fixed loop to every request: unchanged
// code gives the same count run after run, and 2 % more work per request is a regression at
// the 1 % threshold. And the paths where no count can be true say why. In the timing tier: the
// built-in target's count moves with what runs beside it (more wake-ups per request).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "loadlab/shared/json_input.hpp"
#include "test_support.hpp"

namespace loadlab {
namespace {

using namespace std::chrono_literals;
using testing::bin;
using testing::TempDir;

// An agent with a catalog of the C target ("tiny": its work per request read from a file at
// start; "jit": the same program declared uncountable), and a lab file naming it.
struct CountingLab {
  TempDir dir;
  std::string work_file = (dir.path() / "work").string();
  std::unique_ptr<agent::ChildProcess> agent;
  std::string lab;

  explicit CountingLab(const std::string& path_env = "") {
    set_work(0);
    const std::string tiny = bin("loadlab-tiny-target");
    auto catalog = dir.file("catalog.json", R"({"targets": {
        "tiny": {"argv": [")" + tiny + R"(", "--listen", "{host}:{port}", "--work-file", ")" +
                                                work_file + R"("]},
        "jit": {"argv": [")" + tiny + R"(", "--listen", "{host}:{port}"],
                "instructions_unavailable": "a JIT compiles while it serves"}}})");
    agent::SpawnOptions o;
    if (!path_env.empty()) o.env = {{"PATH", path_env}};
    agent = testing::spawn_tool(
        {bin("loadlab-agent"), "--listen", "127.0.0.1:0", "--name", "counting", "--catalog", catalog}, o);
    std::string line;
    EXPECT_EQ(agent->next_line(line, 10s), agent::ChildProcess::LineStatus::kLine) << agent->output_tail();
    lab = dir.file("lab.json", R"({"agents": [{"name": "counting", "address": ")" + line.substr(13) +
                                   R"(", "roles": ["target", "load"]}]})");
  }

  void set_work(unsigned long steps) const { std::ofstream(work_file) << steps << "\n"; }

  // `loadlab run` of scenario `scenario` with these targets and `instructions`, into the folder
  // `name`; its path.
  std::filesystem::path run(const std::string& name, const std::string& scenario, const std::string& targets,
                            const std::string& instructions, int repetitions, int expect_code = 0) {
    auto s = dir.file(name + ".json", R"({"name": ")" + scenario + R"(", "targets": )" + targets +
                                          R"(, "matrix": {"threads": [1]}, "load": {"total_requests": 200},
        "repetitions": )" + std::to_string(repetitions) +
                                          R"(, "instructions": )" + instructions + "}");
    auto out = dir.path() / name;
    auto r = testing::run_command({bin("loadlab"), "run", s, "--lab", lab, "--out", out.string()}, 600s);
    EXPECT_EQ(r.code, expect_code) << r.output_tail;
    return out;
  }
};

std::vector<double> counts(const v1::CellResult& c) {
  std::vector<double> v;
  for (auto& r : c.repetitions()) {
    EXPECT_TRUE(r.has_instructions_per_request()) << c.cell().key() << ": " << r.instructions_unavailable();
    if (r.has_instructions_per_request()) v.push_back(r.instructions_per_request());
  }
  return v;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? NAN : v[(v.size() - 1) / 2];
}

// (max − min) / median, in %.
double spread_pct(std::vector<double> v) {
  if (v.empty()) return INFINITY;
  auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return (*hi - *lo) / median(v) * 100;
}

// 10 runs of unchanged code within 0.5 % for both targets, with callgrind's per-function output
// kept in the run folder; a 2 % change in the C target's work per request is a regression at
// the 1 % threshold, and another run of unchanged code is not.
TEST(Instructions, UnchangedCodeRepeatsAndATwoPercentChangeIsCaught) {
  CountingLab lab;
  const std::string beast = R"([{"name": "beast", "builtin": "hello", "server_threads": 1}])";
  const std::string tiny = R"([{"name": "tiny", "catalog": "tiny"}])";
  std::map<std::string, double> counted;
  // Half the default probes (the same pace), to keep the test short: 20 repetitions of two
  // probes each.
  const std::string probes = R"({"requests": [100, 600]})";
  for (auto [name, targets] : {std::pair{"beast", beast}, std::pair{"tiny", tiny}}) {
    auto base = lab.run(name, name, targets, probes, 10);
    auto cells = testing::result_cells(base / "result.json");
    ASSERT_EQ(cells.size(), 1u);
    const auto& c = cells[0];
    const auto v = counts(c);
    ASSERT_EQ(v.size(), 10u) << c.cell().key();
    std::cout << "[ measured ] " << c.cell().key() << ": " << median(v)
              << " instructions per request, spread " << spread_pct(v) << " %\n";
    EXPECT_LT(spread_pct(v), 0.5) << c.cell().key();
    EXPECT_EQ(c.cell().instructions(), "callgrind");
    const auto& profile = c.repetitions(0).profile_file();
    ASSERT_FALSE(profile.empty());
    const std::string text = read_text_file((base / profile).string());
    EXPECT_NE(text.find("\nfn="), std::string::npos) << "callgrind's per-function output";
    counted[name] = median(v);
  }
  EXPECT_GT(counted["beast"], counted["tiny"])
      << "Beast parses and routes; the C target answers a fixed response";

  // The knob's cost per step, from 1000 steps; then the steps that add 2 % to a request.
  lab.set_work(1000);
  auto calibrate = lab.run("calibrate", "tiny", tiny, probes, 1);
  const auto calibrated = testing::result_cells(calibrate / "result.json");
  ASSERT_EQ(calibrated.size(), 1u);
  const double per_step = (median(counts(calibrated[0])) - counted["tiny"]) / 1000;
  ASSERT_GT(per_step, 1);
  const auto steps = static_cast<unsigned long>(std::ceil(0.02 * counted["tiny"] / per_step));
  lab.set_work(steps);
  auto slower = lab.run("slower", "tiny", tiny, probes, 3);
  const auto slowed = testing::result_cells(slower / "result.json");
  ASSERT_EQ(slowed.size(), 1u);
  const double changed = median(counts(slowed[0]));
  std::cout << "[ measured ] " << steps << " steps of " << per_step << " instructions: " << counted["tiny"]
            << " -> " << changed << " per request\n";
  EXPECT_NEAR((changed / counted["tiny"] - 1) * 100, 2.0, 0.6);
  const std::string base = (lab.dir.path() / "tiny" / "result.json").string();
  auto judged = testing::run_command(
      {bin("loadlab"), "compare", base, (slower / "result.json").string(), "--metric", "instructions"});
  EXPECT_EQ(judged.code, 1) << judged.output_tail;
  EXPECT_NE(judged.stdout_text.find("regression"), std::string::npos) << judged.stdout_text;

  lab.set_work(0);
  auto again = lab.run("again", "tiny", tiny, probes, 3);
  auto same = testing::run_command(
      {bin("loadlab"), "compare", base, (again / "result.json").string(), "--metric", "instructions"});
  EXPECT_EQ(same.code, 0) << same.output_tail;
}

// Where a count cannot be true the cell says why, and its other figures stand: a catalog
// target declared uncountable, an agent without valgrind, counters on a machine without them.
TEST(Instructions, TheUnavailablePathsSayWhy) {
  CountingLab lab;
  auto jit = lab.run("jit", "jit", R"([{"name": "jit", "catalog": "jit"}])", "{}", 1);
  auto cells = testing::result_cells(jit / "result.json");
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_TRUE(cells[0].ok());
  EXPECT_EQ(cells[0].repetitions(0).requests(), 200u);
  EXPECT_FALSE(cells[0].repetitions(0).has_instructions_per_request());
  EXPECT_EQ(cells[0].repetitions(0).instructions_unavailable(), "target jit: a JIT compiles while it serves");

  auto counters =
      lab.run("counters", "tiny", R"([{"name": "tiny", "catalog": "tiny"}])", R"({"method": "counters"})", 1);
  const auto counted = testing::result_cells(counters / "result.json");
  ASSERT_EQ(counted.size(), 1u);
  const auto& r = counted[0].repetitions(0);
  if (r.has_instructions_per_request()) {
    // A machine with hardware counters: the window's count, more than the C target's few
    // thousand instructions of user space per request would be odd.
    EXPECT_GT(r.instructions_per_request(), 100);
    EXPECT_LT(r.instructions_per_request(), 1e6);
  } else {
    EXPECT_EQ(r.instructions_unavailable().rfind("perf_event_open(instructions:u) on thread ", 0), 0u)
        << r.instructions_unavailable();
  }

  TempDir empty;  // a PATH without valgrind
  CountingLab bare(empty.path().string());
  auto none = bare.run("none", "tiny", R"([{"name": "tiny", "catalog": "tiny"}])", "{}", 1);
  const auto uncounted = testing::result_cells(none / "result.json");
  ASSERT_EQ(uncounted.size(), 1u);
  const auto& n = uncounted[0].repetitions(0);
  EXPECT_FALSE(n.has_instructions_per_request());
  EXPECT_EQ(n.instructions_unavailable(),
            "agent counting has no valgrind on its PATH (apt-get install valgrind)");
}

}  // namespace
}  // namespace loadlab
