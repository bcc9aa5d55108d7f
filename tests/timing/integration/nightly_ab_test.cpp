// regression.ab_last_good: nights of a target built from a commit, each judged against the
// history and, once a good night exists, by an A/B of tonight's commit against the last good
// night's in the same run. The repository is the test's own (source_repo.hpp); the figure is
// the instructions per request callgrind counts, which other work on the machine does not move.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "source_repo.hpp"
#include "test_support.hpp"

// Named, not anonymous: the file shares a unity batch with others.
namespace loadlab::nightly_ab_test {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using source_repo::SourceRepo;
using testing::AgentProcess;
using testing::bin;
using testing::run_command;
using testing::TempDir;

// good; same (a change that changes nothing); more (several times the work per request).
SourceRepo three_commits(const fs::path& at) {
  SourceRepo repo(at);
  repo.commit("good", "the server");
  repo.commit("same", "a change that changes nothing");
  repo.set_work(400000);
  repo.commit("more", "more work per request");
  return repo;
}

class NightlyAb : public ::testing::Test {
 protected:
  NightlyAb()
      : repo(three_commits(dir.path() / "repo")),
        agent("srv", "127.0.0.1:0",
              {"--catalog", source_repo::catalog(dir, repo), "--build-cache",
               (dir.path() / "cache").string()}) {
    lab = source_repo::one_agent_lab(dir, agent.address);
  }
  std::string scenario(const nlohmann::json& regression) {
    nlohmann::json s = {{"name", "nightly"},
                        {"targets", {{{"name", "cs"}, {"catalog", "cs"}, {"commit", "nightly"}}}},
                        {"matrix", {{"threads", {1}}}},
                        {"load", {{"duration_s", 0.2}, {"warmup_s", 0.1}}},
                        {"repetitions", 2},
                        {"instructions", {{"requests", {50, 250}}}},
                        // No confirmation pairs: a count several times the other's needs none,
                        // and each would cost two runs under callgrind.
                        {"execution", {{"confirm", 0}}},
                        {"regression", regression}};
    return dir.file("nightly.json", s.dump());
  }
  // A night of the scenario with the branch "nightly" at `tag`; its result.json.
  nlohmann::json night(const std::string& file, const std::string& tag, int expect_status) {
    source_repo::git(repo.dir, {"branch", "--force", "nightly", tag});
    const fs::path out = dir.path() / ("night" + std::to_string(++nights));
    auto r =
        run_command({bin("loadlab"), "run", file, "--lab", lab, "--history", (dir.path() / "h.db").string(),
                     "--baseline", "history", "--out", out.string(), "--quiet"},
                    600s);
    EXPECT_EQ(r.code, expect_status) << tag << ": " << r.output_tail;
    last_output = r.stdout_text;
    return nlohmann::json::parse(std::ifstream(out / "result.json"), nullptr, false);
  }

  TempDir dir;
  SourceRepo repo;
  AgentProcess agent;
  std::string lab, last_output;
  int nights = 0;
};

TEST_F(NightlyAb, EachNightRunsTheLastGoodBuildBesideTonightsAndTheAbDecides) {
  const auto file = scenario({{"metric", "instructions"}, {"threshold_pct", 1}, {"ab_last_good", "all"}});
  auto j = night(file, "good", 0);
  EXPECT_FALSE(j.contains("ab")) << j["verdicts"].dump();
  EXPECT_NE(j["verdicts"]["note"].get<std::string>().find("the history holds no night yet"),
            std::string::npos);

  // A commit that changes nothing: A/B against the first night's build, the same.
  j = night(file, "same", 0);
  ASSERT_TRUE(j.contains("ab")) << j["verdicts"].dump();
  auto v = j["verdicts"]["cells"][0];
  EXPECT_EQ(v["key"], "cs/t1");
  EXPECT_EQ(v["verdict"], "same") << v.dump();
  EXPECT_EQ(v["a_key"], "cs.last-good/t1");
  EXPECT_EQ(v["pairs"].size(), 2u);
  EXPECT_TRUE(v.contains("by_history")) << v.dump();
  EXPECT_EQ(j["verdicts"]["cells"].size(), 1u);  // the last good build's cell is A, judged by none
  std::map<std::string, std::string> sha_of;     // target → commit run
  for (auto& c : j["target_commits"]) sha_of[c["target"]] = c["sha"];
  EXPECT_EQ(sha_of["cs"], repo.shas["same"]);
  EXPECT_EQ(sha_of["cs.last-good"], repo.shas["good"]);

  // Several times the work: the A/B against the last good build says regression, exit 1.
  j = night(file, "more", 1);
  v = j["verdicts"]["cells"][0];
  EXPECT_EQ(v["verdict"], "regression") << v.dump();
  EXPECT_EQ(j["verdicts"]["regressions"], 1);
  EXPECT_GT(v["pairs"][0]["b"].get<double>(), 2 * v["pairs"][0]["a"].get<double>()) << v.dump();
  ASSERT_FALSE(v["grew"].empty()) << v.dump();  // what grew, A against B
  EXPECT_EQ(v["grew"][0]["function"], "work");
  EXPECT_NE(last_output.find("the A/B against cs.last-good/t1 decided; the history alone: "),
            std::string::npos)
      << last_output;
  // The night that regressed is not good: the next night is against `same` again.
  j = night(file, "more", 1);
  EXPECT_NE(j["verdicts"]["note"].get<std::string>().find("commit " + repo.shas["same"].substr(0, 12)),
            std::string::npos)
      << j["verdicts"].dump();
  // The slower commit accepted as the cell's new level from night 3 on: nights 3 and 4 are good
  // now, and tonight, the same commit, has nothing to interleave: judged by the history alone.
  auto r =
      run_command({bin("loadlab"), "history", (dir.path() / "h.db").string(), "accept", "all", "--run", "3"});
  ASSERT_EQ(r.code, 0) << r.output_tail;
  j = night(file, "more", 0);
  EXPECT_FALSE(j.contains("ab"));
  EXPECT_NE(j["verdicts"]["note"].get<std::string>().find(
                "tonight's commit " + repo.shas["more"].substr(0, 12) + " is the last good night's"),
            std::string::npos)
      << j["verdicts"].dump();
}

// "auto": a cell is paired while its history cannot resolve the threshold (no nights yet), and
// judged by the history alone once it can.
TEST_F(NightlyAb, AutoPairsACellUntilItsHistoryResolvesTheThreshold) {
  // Three nights of a count that moves by tenths of a percent resolve 50 %: their mdc is the
  // threshold and what two degrees of freedom add to that spread (two nights, one degree, can
  // add tens of %: Student's t at 1 % is 31.8 there, 7.0 at two).
  const auto file = scenario({{"metric", "instructions"},
                              {"threshold_pct", 50},
                              {"baseline_nights", 3},
                              {"min_nights", 2},
                              {"ab_last_good", "auto"}});
  night(file, "good", 0);
  auto j = night(file, "same", 0);
  EXPECT_TRUE(j.contains("ab")) << j["verdicts"].dump();  // one night: no mdc yet
  night(file, "same", 0);
  night(file, "same", 0);
  j = night(file, "more", 1);  // several times the work: the history alone says regression
  EXPECT_FALSE(j.contains("ab")) << j["verdicts"]["note"];
  EXPECT_NE(j["verdicts"]["note"].get<std::string>().find("the history resolves every cell"),
            std::string::npos)
      << j["verdicts"].dump();
  const auto& v = j["verdicts"]["cells"][0];
  EXPECT_EQ(v["verdict"], "regression");
  // What grew, against the newest baseline night's callgrind outputs.
  ASSERT_FALSE(v["grew"].empty()) << v.dump();
  EXPECT_EQ(v["grew"][0]["function"], "work");
  EXPECT_NE(v["reason"].get<std::string>().find("grew most (instructions per request, self): work +"),
            std::string::npos);
}

TEST_F(NightlyAb, ABadSettingExitsTwoNamingIt) {
  auto r = run_command({bin("loadlab"), "run", scenario({{"ab_last_good", "often"}}), "--lab", lab});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output_tail.find("/regression/ab_last_good: must be \"off\", \"auto\" or \"all\""),
            std::string::npos)
      << r.output_tail;
  nlohmann::json s = {{"name", "two"},
                      {"targets",
                       {{{"name", "a"}, {"catalog", "cs"}, {"commit", "good"}},
                        {{"name", "b"}, {"catalog", "cs"}, {"commit", "more"}}}},
                      {"matrix", {{"threads", {1}}}},
                      {"load", {{"duration_s", 0.2}}},
                      {"regression", {{"ab_last_good", "all"}}}};
  r = run_command({bin("loadlab"), "run", dir.file("two.json", s.dump()), "--lab", lab});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output_tail.find("/regression/ab_last_good: needs exactly one target built from a commit"),
            std::string::npos)
      << r.output_tail;
}

}  // namespace loadlab::nightly_ab_test
