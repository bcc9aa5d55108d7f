// `loadlab bisect` on a repository the test makes: eight commits after a good one, one of them
// adding CPU work per request (several times the instructions per request), one before it that
// does not compile. Each step is a real A/B run of a real agent's builds, judged on the
// instructions per request callgrind counts: other work on the machine does not move them (a
// bisect on requests per second beside a busy core measures every pair again, then doubles
// them: minutes a step; its accuracy is bench/bisect.sh's to measure).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "source_repo.hpp"
#include "test_support.hpp"

// Named, not anonymous: the file shares a unity batch with others.
namespace loadlab::bisect_test {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using source_repo::SourceRepo;
using testing::AgentProcess;
using testing::bin;
using testing::run_command;
using testing::TempDir;

// good, n1, n2, broken, n3, more (the work), n4, bad: the first step is the commit that does
// not build (midway), skipped for n2 beside it; then n3 and `more` name it in four steps.
SourceRepo eight_commits(const fs::path& at) {
  SourceRepo repo(at);
  repo.commit("good", "the server");
  repo.commit("n1", "a change that changes nothing");
  repo.commit("n2", "another");
  repo.break_build();
  repo.commit("broken", "a commit that does not build");
  repo.mend_build("good");
  repo.commit("n3", "mended");
  repo.set_work(400000);
  repo.commit("more", "more work per request");
  repo.commit("n4", "a later change");
  repo.commit("bad", "the night it was seen");
  return repo;
}

class Bisect : public ::testing::Test {
 protected:
  Bisect()
      : repo(eight_commits(dir.path() / "repo")),
        agent("srv", "127.0.0.1:0",
              {"--catalog", source_repo::catalog(dir, repo), "--build-cache",
               (dir.path() / "cache").string()}) {
    lab = source_repo::one_agent_lab(dir, agent.address);
    nlohmann::json s = {{"name", "built"},
                        {"targets", {{{"name", "cs"}, {"catalog", "cs"}, {"commit", "main"}}}},
                        {"matrix", {{"threads", {1}}}},
                        {"load", {{"duration_s", 0.2}, {"warmup_s", 0.1}}},
                        {"instructions", {{"requests", {50, 250}}}},
                        {"regression", {{"metric", "instructions"}, {"threshold_pct", 1}}}};
    scenario = dir.file("s.json", s.dump());
  }
  std::vector<std::string> bisect_argv(const std::string& out) const {
    return {bin("loadlab"), "bisect", scenario, "--cell",  "cs/t1", "--good", "good", "--bad",
            "bad",          "--lab",  lab,      "--pairs", "2",     "--out",  out};
  }
  static nlohmann::json result_of(const fs::path& folder) {
    return nlohmann::json::parse(std::ifstream(folder / "result.json"), nullptr, false);
  }

  TempDir dir;
  SourceRepo repo;
  AgentProcess agent;
  std::string lab, scenario;
};

// Killed once its first step is journaled, then resumed: the first step is kept, not measured
// again, and the bisect names the commit that added the work, having skipped the one that does
// not build.
TEST_F(Bisect, NamesTheCommitThatAddsWorkSkipsOneThatDoesNotBuildAndResumesWhereKilled) {
  const fs::path out = dir.path() / "bisect";
  auto child = testing::spawn_tool(bisect_argv(out.string()));
  const auto deadline = std::chrono::steady_clock::now() + 300s;
  std::string first_step;
  while (first_step.empty() && std::chrono::steady_clock::now() < deadline && !child->poll_exit()) {
    auto j = result_of(out);
    if (j.is_object() && !j["steps"].empty()) first_step = j["steps"][0]["sha"];
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_FALSE(first_step.empty()) << child->output_tail();
  child->queue_signal(SIGKILL, sigval{});
  child->terminate();

  auto r = run_command({bin("loadlab"), "bisect", "--resume", out.string()}, 600s);
  ASSERT_EQ(r.code, 0) << r.output_tail;
  EXPECT_NE(r.stdout_text.find("first bad commit: " + repo.shas["more"] + " more work per request"),
            std::string::npos)
      << r.stdout_text;
  auto j = result_of(out);
  EXPECT_EQ(j["status"], "found");
  EXPECT_EQ(j["first_bad"]["sha"], repo.shas["more"]);
  EXPECT_EQ(j["good"]["sha"], repo.shas["good"]);
  EXPECT_EQ(j["bad"]["sha"], repo.shas["bad"]);
  ASSERT_EQ(j["candidates"].size(), 7u);
  EXPECT_EQ(j["steps"][0]["sha"], first_step);  // kept, not measured again
  std::set<std::string> measured;
  for (auto& s : j["steps"])
    EXPECT_TRUE(measured.insert(s["sha"].get<std::string>() + s["round"].dump()).second) << j["steps"].dump();
  std::map<std::string, std::string> outcome;  // by tag
  for (auto& s : j["steps"])
    for (auto& [tag, sha] : repo.shas)
      if (s["sha"] == sha && s.contains("outcome")) outcome[tag] = s["outcome"];
  EXPECT_EQ(outcome["broken"], "skip");
  EXPECT_EQ(outcome["more"], "bad");
  EXPECT_EQ(outcome["n3"], "good");
  for (auto& s : j["steps"])
    if (s["sha"] == repo.shas["broken"])
      EXPECT_NE(s["why"].get<std::string>().find("does not build"), std::string::npos);
  EXPECT_LE(j["steps"].size(), 3u + 2u) << j["steps"].dump();  // ceil(log2 7) + 2
  std::ifstream report(out / "report.html");
  std::string html((std::istreambuf_iterator<char>(report)), {});
  EXPECT_NE(html.find(repo.shas["more"]), std::string::npos);
}

// An A/B of two commits counted with callgrind names what grew: the busy loop's function, with
// the whole of the change in instructions per request.
TEST_F(Bisect, AnInstructionsRegressionNamesTheFunctionThatGrew) {
  nlohmann::json s = {{"name", "grew"},
                      {"targets",
                       {{{"name", "old"}, {"catalog", "cs"}, {"commit", "good"}},
                        {{"name", "new"}, {"catalog", "cs"}, {"commit", "more"}}}},
                      {"ab", {{"a", "old"}, {"b", "new"}}},
                      {"matrix", {{"threads", {1}}}},
                      {"load", {{"duration_s", 0.2}, {"warmup_s", 0.1}}},
                      {"repetitions", 2},
                      {"instructions", {{"requests", {50, 250}}}},
                      {"execution", {{"confirm", 0}}},
                      {"regression", {{"metric", "instructions"}, {"threshold_pct", 1}}}};
  const std::string out = (dir.path() / "ab").string();
  auto r =
      run_command({bin("loadlab"), "run", dir.file("ab.json", s.dump()), "--lab", lab, "--out", out}, 300s);
  ASSERT_EQ(r.code, 1) << r.output_tail;  // a regression
  auto j = result_of(out);
  const auto& v = j["ab"]["cells"][0];
  ASSERT_EQ(v["verdict"], "regression") << v.dump();
  ASSERT_FALSE(v["grew"].empty()) << v.dump();
  const auto& top = v["grew"][0];
  EXPECT_EQ(top["function"], "work");
  double a = 0, b = 0;  // the cells' instructions per request, mean of their pairs
  for (auto& p : v["pairs"])
    a += p["a"].get<double>() / v["pairs"].size(), b += p["b"].get<double>() / v["pairs"].size();
  const double grew = top["self_b"].get<double>() - top["self_a"].get<double>();
  EXPECT_NEAR(grew, b - a, 0.01 * (b - a)) << v.dump();
  EXPECT_NE(v["reason"].get<std::string>().find("grew most (instructions per request, self): work +"),
            std::string::npos);
}

// A night whose verdict is a regression, with --bisect: the regressed cell is bisected from the
// commit of the nights before (the branch the scenario names was at n3) to tonight's (n4).
TEST_F(Bisect, ANightsRegressionIsBisectedWithBisect) {
  nlohmann::json s = {{"name", "nightly"},
                      {"targets", {{{"name", "cs"}, {"catalog", "cs"}, {"commit", "nightly"}}}},
                      {"matrix", {{"threads", {1}}}},
                      {"load", {{"duration_s", 0.2}, {"warmup_s", 0.1}}},
                      {"repetitions", 2},
                      {"instructions", {{"requests", {50, 250}}}},
                      // No confirmation (of the night, or of each step's A/B): what the test
                      // holds is the bisect the night starts, not the counts' noise.
                      {"execution", {{"confirm", 0}}},
                      {"regression", {{"metric", "instructions"}, {"threshold_pct", 1}, {"min_nights", 2}}}};
  const std::string file = dir.file("nightly.json", s.dump()), db = (dir.path() / "h.db").string();
  auto night = [&](const std::string& name, std::vector<std::string> extra = {}) {
    std::vector<std::string> argv{bin("loadlab"),
                                  "run",
                                  file,
                                  "--lab",
                                  lab,
                                  "--history",
                                  db,
                                  "--baseline",
                                  "history",
                                  "--out",
                                  (dir.path() / name).string(),
                                  "--quiet"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run_command(argv, 600s);
  };
  source_repo::git(repo.dir, {"branch", "--force", "nightly", "n3"});
  // Two nights: fewer than a band needs, but a count several times theirs is beyond even
  // their wide band (regression.min_nights).
  for (int n = 1; n <= 2; ++n) ASSERT_EQ(night("n" + std::to_string(n)).code, 0);
  source_repo::git(repo.dir, {"branch", "--force", "nightly", "n4"});
  auto r = night("tonight", {"--bisect"});
  EXPECT_EQ(r.code, 1) << r.output_tail;  // the night's status: a regression
  EXPECT_NE(r.stdout_text.find("first bad commit: " + repo.shas["more"]), std::string::npos) << r.stdout_text;
  auto j = result_of(dir.path() / "tonight" / "bisect" / "cs_t1");
  EXPECT_EQ(j["good"]["sha"], repo.shas["n3"]);
  EXPECT_EQ(j["bad"]["sha"], repo.shas["n4"]);
  EXPECT_EQ(j["first_bad"]["sha"], repo.shas["more"]);
}

// Bad input exits 2 naming the flag, and leaves no bisect folder behind.
TEST_F(Bisect, BadInputExitsTwoNamingTheFlag) {
  const std::string out = (dir.path() / "refused").string();
  auto bisect = [&](std::vector<std::string> flags) {
    std::vector<std::string> argv{bin("loadlab"), "bisect", scenario, "--lab", lab, "--out", out};
    argv.insert(argv.end(), flags.begin(), flags.end());
    auto r = run_command(argv);
    EXPECT_EQ(r.code, 2) << r.output_tail;
    EXPECT_FALSE(fs::exists(out)) << r.output_tail;
    return r.output_tail;
  };
  auto said = bisect({"--cell", "cs/t9", "--good", "good", "--bad", "bad"});
  EXPECT_NE(said.find("--cell: no cell \"cs/t9\" in the scenario; its cells: cs/t1"), std::string::npos)
      << said;
  said = bisect({"--cell", "cs/t1", "--bad", "bad"});
  EXPECT_NE(said.find("--good: is required"), std::string::npos) << said;
  said = bisect({"--cell", "cs/t1", "--good=-x", "--bad", "bad"});
  EXPECT_NE(said.find("must not begin with '-'"), std::string::npos) << said;
  said = bisect({"--cell", "cs/t1", "--good", "no-such-ref", "--bad", "bad"});
  EXPECT_NE(said.find("--good"), std::string::npos) << said;
}

}  // namespace loadlab::bisect_test
