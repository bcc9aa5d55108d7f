// `loadlab run DIR`: a scenario repository's folder, every night: one run folder per
// scenario, includes recorded with their git commit, the worst status as the exit status.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "bare_lookalike_repo.hpp"
#include "loadlab/shared/json_input.hpp"
#include "test_support.hpp"

namespace loadlab {
namespace {

namespace fs = std::filesystem;
using testing::bin;
using testing::run_command;
using testing::TempDir;

// A git repository of scenarios: a base matrix in base/ and variants beside it.
struct ScenarioRepo {
  explicit ScenarioRepo(const TempDir& dir) : path(dir.path() / "repo") {
    write("base/matrix.json", R"({"targets": [{"name": "beast", "builtin": "hello", "server_threads": 1}],
        "matrix": {"delay_ms": [0], "threads": [2]}, "load": {"total_requests": 300},
        "regression": {"threshold_pct": 1000}, "execution": {"remeasure_wait_s": 0.5}})");
    // No verdict but "same", and a disturbed night measured again without the nightly's waits: the
    // test is the folder's, not the lab's.
    write("a.json", R"({"include": "base/matrix.json", "name": "a"})");
    write("b.json", R"({"include": "base/matrix.json", "name": "b", "matrix": {"delay_ms": [1]}})");
    git({"init", "-q"});
  }
  void write(const std::string& name, const std::string& text) const {
    fs::create_directories((path / name).parent_path());
    std::ofstream(path / name) << text;
  }
  testing::RunOutput git(std::vector<std::string> args) const {
    std::vector<std::string> argv = {
        "/usr/bin/git", "-C", path.string(), "-c", "user.name=t", "-c", "user.email=t@example.invalid"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_command(argv);
  }
  std::string commit_all() const {
    EXPECT_EQ(git({"add", "-A"}).code, 0);
    EXPECT_EQ(git({"commit", "-qm", "scenarios"}).code, 0);
    auto head = git({"rev-parse", "HEAD"});
    return head.stdout_text.substr(0, 40);
  }
  fs::path path;
};

testing::RunOutput night(const TempDir& dir, const ScenarioRepo& repo, const std::string& name) {
  return run_command({bin("loadlab"), "--log-level", "warn", "run", repo.path.string(), "--out",
                      (dir.path() / name).string(), "--history", (dir.path() / "history.db").string(),
                      "--baseline", "history:last-good"});
}

TEST(ScenarioFolder, EachScenarioRunsIntoItsOwnFolderAndTheWorstStatusIsTheExitStatus) {
  TempDir dir;
  ScenarioRepo repo(dir);
  repo.write("broken.json", R"({"include": "base/matrix.json", "name": "broken", "load": {"treads": 2}})");
  const std::string commit = repo.commit_all();

  auto r = night(dir, repo, "night1");
  EXPECT_EQ(r.code, 2) << r.stdout_text << r.output_tail;  // the bad scenario; the others ran
  EXPECT_NE(r.output_tail.find((repo.path / "broken.json").string() + ": /load/treads: unknown key"),
            std::string::npos)
      << r.output_tail;
  EXPECT_NE(r.stdout_text.find("broken.json: bad input"), std::string::npos) << r.stdout_text;
  EXPECT_FALSE(fs::exists(dir.path() / "night1" / "broken"));
  for (std::string name : {"a", "b"}) {
    const auto folder = dir.path() / "night1" / name;
    EXPECT_NE(r.stdout_text.find(name + ".json: ok, " + folder.string()), std::string::npos) << r.stdout_text;
    auto result = read_json_file((folder / "result.json").string());
    ASSERT_EQ(result["cells"].size(), 1u) << name;
    EXPECT_EQ(result["cells"][0]["median"]["requests"], "300");
    // Every file read, each with the commit it came from.
    ASSERT_EQ(result["scenario_files"].size(), 2u);
    EXPECT_EQ(result["scenario_files"][0]["path"], (repo.path / (name + ".json")).string());
    EXPECT_EQ(result["scenario_files"][1]["path"], (repo.path / "base" / "matrix.json").string());
    for (auto& f : result["scenario_files"]) {
      EXPECT_EQ(f["git"]["commit"], commit);
      EXPECT_EQ(f["git"]["dirty"], false);
    }
    // The run folder's scenario stands alone: merged, without its include.
    auto copy = read_json_file((folder / "scenario.json").string());
    EXPECT_FALSE(copy.contains("include"));
    EXPECT_EQ(copy["load"]["total_requests"], 300);
  }
  EXPECT_EQ(read_json_file(
                (dir.path() / "night1" / "b" / "result.json").string())["scenario"]["matrix"]["delay_ms"],
            nlohmann::json::array({1}));

  // The next night, fixed: every scenario's cells are judged against their own nights.
  ASSERT_EQ(repo.git({"rm", "-q", "broken.json"}).code, 0);
  repo.commit_all();
  r = night(dir, repo, "night2");
  EXPECT_EQ(r.code, 0) << r.stdout_text << r.output_tail;
  std::string busy;  // the scenarios whose night1 is no baseline
  for (std::string name : {"a", "b"}) {
    auto result = read_json_file((dir.path() / "night2" / name / "result.json").string());
    auto first = read_json_file((dir.path() / "night1" / name / "result.json").string());
    EXPECT_EQ(result["verdicts"]["method"], "history");
    auto& history = result["verdicts"]["cells"][0]["history"];
    // A night measured on a busy machine (half its repetitions flagged, or its CPU wait far
    // beyond the usual), still so when measured again, stays out of later bands, as a nightly's
    // would (docs/nightly.md): night2 then has no history, and that is what is checked.
    if (first["verdicts"]["cells"][0]["reason"].get<std::string>().find("the machine was busy") !=
        std::string::npos) {
      EXPECT_EQ(first["verdicts"]["cells"][0]["disturbed"], true) << first["verdicts"].dump();
      EXPECT_TRUE(history.empty()) << "a busy night is no baseline: " << result["verdicts"].dump();
      busy += " " + name;
      continue;
    }
    ASSERT_EQ(history.size(), 1u) << result["verdicts"].dump();
    EXPECT_EQ(history[0]["started_at"], first["started_at"]);
  }
  // A skip says the check against night1 was not made (after everything else was checked).
  if (!busy.empty())
    GTEST_SKIP() << "night1 of" << busy << " was measured on a busy machine: no baseline, so night2's "
                 << "history against it was not checked (only that it is empty)";
}

TEST(ScenarioFolder, ABadFolderOrTwoScenariosOfOneNameExitTwo) {
  TempDir dir;
  ScenarioRepo repo(dir);
  repo.write("c.json", R"({"include": "base/matrix.json", "name": "a"})");
  auto r = run_command({bin("loadlab"), "validate", repo.path.string()});
  EXPECT_EQ(r.code, 2) << r.output_tail;
  EXPECT_NE(r.output_tail.find("c.json: /name: \"a\" names " + (repo.path / "a.json").string() + " too"),
            std::string::npos)
      << r.output_tail;
  EXPECT_NE(r.stdout_text.find("a.json: ok, a, 1 cells × 1 repetitions (1 included files)"),
            std::string::npos)
      << r.stdout_text;

  fs::create_directories(dir.path() / "empty" / "sub");
  std::ofstream(dir.path() / "empty" / "sub" / "s.json") << "{}";
  r = run_command({bin("loadlab"), "run", (dir.path() / "empty").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output_tail.find("the folder holds no scenario file (*.json; subfolders are not searched)"),
            std::string::npos)
      << r.output_tail;

  r = run_command({bin("loadlab"), "run", repo.path.string(), "--baseline", (dir.path() / "old").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output_tail.find("--baseline: with a folder of scenarios only history is allowed"),
            std::string::npos)
      << r.output_tail;
}

// Issue 44, item 6: a scenario repository reads no file of the machine outside its tree. An
// include by "..", by an absolute path or through a link that leads out of the scenario's
// folder is refused with exit status 2, naming the file, the include and the root; a link
// that stays inside is read; the operator's --include-root widens the root.
TEST(ScenarioFolder, IncludesThatLeaveTheScenariosFolderAreRefused) {
  TempDir dir;
  ScenarioRepo repo(dir);
  const std::string secret = fs::canonical(dir.path()).string() + "/secret.json";
  std::ofstream(secret) << R"({"name": "secret", "targets": [{"name": "t", "builtin": "hello"}],
        "matrix": {"threads": [1]}, "load": {"total_requests": 100}})";
  const std::string root = fs::canonical(repo.path).string();
  fs::create_symlink(secret, repo.path / "link.json");
  fs::create_symlink("base/matrix.json", repo.path / "alias.json");
  repo.write("up.json", R"({"include": "../secret.json"})");
  repo.write("abs.json", R"({"include": ")" + secret + R"("})");
  repo.write("via-link.json", R"({"include": "link.json"})");
  repo.write("inside.json", R"({"include": "alias.json", "name": "inside"})");
  auto validate = [&](const std::string& file, std::vector<std::string> more = {}) {
    std::vector<std::string> argv = {bin("loadlab"), "validate", (repo.path / file).string()};
    argv.insert(argv.end(), more.begin(), more.end());
    return run_command(argv);
  };
  for (auto [file, written] : {std::pair<std::string, std::string>{"up.json", "../secret.json"},
                               {"abs.json", secret},
                               {"via-link.json", "link.json"}}) {
    auto r = validate(file);
    EXPECT_EQ(r.code, 2) << file << ": " << r.output_tail;
    EXPECT_NE(r.output_tail.find("loadlab: " + (repo.path / file).string() + ": /include: \"" + written +
                                 "\" resolves to " + secret + ", outside the scenario's root " + root +
                                 " (an include must stay inside the folder of the scenario; --include-root "
                                 "names another)"),
              std::string::npos)
        << r.output_tail;
  }
  auto r = validate("inside.json");
  EXPECT_EQ(r.code, 0) << r.output_tail;
  EXPECT_NE(r.stdout_text.find("includes " + (repo.path / "alias.json").string()), std::string::npos)
      << r.stdout_text;
  r = validate("up.json", {"--include-root", dir.path().string()});
  EXPECT_EQ(r.code, 0) << r.output_tail;

  // `run` refuses it before any agent or run folder.
  r = run_command(
      {bin("loadlab"), "run", (repo.path / "up.json").string(), "--out", (dir.path() / "run").string()});
  EXPECT_EQ(r.code, 2) << r.output_tail;
  EXPECT_NE(r.output_tail.find("/include: \"../secret.json\" resolves to " + secret), std::string::npos)
      << r.output_tail;
  EXPECT_FALSE(fs::exists(dir.path() / "run"));

  // In a folder of scenarios, a scenario file that is a link out of the folder is not read.
  fs::create_symlink(secret, repo.path / "linked-scenario.json");
  r = run_command({bin("loadlab"), "validate", repo.path.string()});
  EXPECT_EQ(r.code, 2) << r.output_tail;
  EXPECT_NE(r.output_tail.find((repo.path / "linked-scenario.json").string() + ": resolves to " + secret +
                               ", outside the folder " + root),
            std::string::npos)
      << r.output_tail;
  EXPECT_NE(r.output_tail.find((repo.path / "up.json").string() + ": /include: \"../secret.json\""),
            std::string::npos)
      << r.output_tail;
  EXPECT_NE(r.stdout_text.find("inside.json: ok, inside"), std::string::npos) << r.stdout_text;
}

// Issue 44, item 5: a committed folder laid out as a bare git repository, whose config runs a
// command when git obeys it, holds the scenario: `loadlab run` records its provenance from the
// repository around it, and the command never runs.
TEST(ScenarioFolder, AFolderThatLooksLikeABareRepositoryRunsNoCommand) {
  TempDir dir;
  const fs::path outer = dir.path() / "outer", clone = dir.path() / "clone", marker = dir.path() / "MARKER";
  fs::create_directories(outer / "evil");
  std::ofstream(outer / "evil" / "part.json")
      << R"({"targets": [{"name": "beast", "builtin": "hello", "server_threads": 1}]})";
  std::ofstream(outer / "evil" / "s.json")
      << R"({"include": "part.json", "name": "evil", "matrix": {"threads": [1]}, "load": {"duration_s": 0.2}})";
  const std::string commit = testing::commit_bare_lookalike(outer, "evil", marker);
  ASSERT_EQ(commit.size(), 40u);
  ASSERT_EQ(run_command({"/usr/bin/git", "clone", "-q", outer.string(), clone.string()}).code, 0);

  auto r = run_command({bin("loadlab"), "--log-level", "warn", "run", (clone / "evil" / "s.json").string(),
                        "--out", (dir.path() / "run").string()});
  EXPECT_EQ(r.code, 0) << r.stdout_text << r.output_tail;
  EXPECT_FALSE(fs::exists(marker)) << "the committed folder's core.fsmonitor ran";
  auto result = read_json_file((dir.path() / "run" / "result.json").string());
  EXPECT_EQ(result["scenario_file"]["git"]["commit"], commit) << result["scenario_file"].dump();
  ASSERT_EQ(result["scenario_files"].size(), 2u);
  for (auto& f : result["scenario_files"]) {
    EXPECT_EQ(f["git"]["commit"], commit) << f.dump();
    EXPECT_EQ(f["git"]["dirty"], false) << f.dump();
  }
}

}  // namespace
}  // namespace loadlab
