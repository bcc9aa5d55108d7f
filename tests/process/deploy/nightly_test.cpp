// loadlab-nightly (deploy/nightly), as installed: nights of a scenario repository in git,
// each compared with the last good one; its exit status is what monitoring sees.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include "bare_lookalike_repo.hpp"
#include "deploy_support.hpp"
#include "loadlab/shared/json_input.hpp"

namespace loadlab::testing {
namespace {

namespace fs = std::filesystem;

// A scenario repository: scenarios/nightly.json on a base it includes, with the server's delay
// (the target's x-loadlab-delay-ms header).
class ScenarioRepo {
 public:
  explicit ScenarioRepo(fs::path path) : path_(std::move(path)) {
    write("scenarios/base/matrix.json",
          R"({"targets": [{"name": "beast", "builtin": "hello", "server_threads": 1}],
              "matrix": {"delay_ms": [10], "threads": [4]}, "load": {"requests_per_thread": 40}, "repetitions": 2,
              "execution": {"remeasure_wait_s": 0.5}})");  // a disturbed night: measured again soon
    EXPECT_EQ(git({"init", "-q", "-b", "main"}).code, 0);
  }
  // Commits the scenario with this server delay; returns the commit.
  std::string commit_delay(int delay_ms) {
    write("scenarios/nightly.json", R"({"include": "base/matrix.json", "name": "nightly",
        "load": {"headers": {"x-loadlab-delay-ms": ")" +
                                        std::to_string(delay_ms) + R"("}}})");
    EXPECT_EQ(git({"add", "-A"}).code, 0);
    EXPECT_EQ(git({"commit", "-qm", "delay " + std::to_string(delay_ms)}).code, 0);
    auto head = git({"rev-parse", "HEAD"});
    return head.stdout_text.substr(0, 40);
  }
  std::string url() const { return "file://" + path_.string(); }
  // Commits a file of the repository (e.g. a lab kept with the scenarios).
  void commit_file(const std::string& name, const std::string& text) {
    write(name, text);
    EXPECT_EQ(git({"add", "-A"}).code, 0);
    EXPECT_EQ(git({"commit", "-qm", "add " + name}).code, 0);
  }

 private:
  void write(const std::string& name, const std::string& text) const {
    fs::create_directories((path_ / name).parent_path());
    std::ofstream(path_ / name) << text;
  }
  RunOutput git(std::vector<std::string> args) const {
    std::vector<std::string> argv = {
        LOADLAB_GIT, "-C", path_.string(), "-c", "user.name=t", "-c", "user.email=t@example.invalid"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_command(argv);
  }
  fs::path path_;
};

class Nightly : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string(LOADLAB_GIT).empty()) GTEST_SKIP() << "no git: loadlab-nightly is not tried";
  }
  // One night, as the service runs it: the installed script, its settings in the environment;
  // an empty LOADLAB_LAB runs it on an embedded agent.
  RunOutput night(const std::string& repo_url, const std::string& lab = "", const std::string& ref = "main") {
    return run_command({"/usr/bin/env", "LOADLAB_SCENARIO_REPO=" + repo_url, "LOADLAB_SCENARIO_REF=" + ref,
                        "LOADLAB_SCENARIO_DIR=scenarios", "LOADLAB_LAB=" + lab,
                        "LOADLAB_LAB_CREDENTIALS=" + (dir_.path() / "no-such-credentials.json").string(),
                        "LOADLAB_STATE_DIR=" + state(), "LOADLAB_NIGHTLY_FLAGS=--log-level warn",
                        tree_.path("bin/loadlab-nightly")});
  }
  std::string state() const { return (dir_.path() / "state").string(); }
  nlohmann::json latest_result() const {
    return read_json_file(state() + "/runs/latest/nightly/result.json");
  }
  std::string latest_night() const { return fs::canonical(state() + "/runs/latest").string(); }
  std::string index_page() const {
    std::ifstream in(state() + "/runs/index.html");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  // A night on a machine busy with other work is inconclusive, as the tool says it must; such a
  // night stays in the history and among the nights kept, but is none of the baseline nights of
  // the nights after it (controller/judge/verdict.cpp: SeriesJudge::context skips a disturbed
  // night), so another try changes only how many nights there are. A night, then, run again
  // (twice more at most) while the machine was busy; `each` checks every try for what holds
  // whatever the machine did. False when the last try was busy too (busy_why_ says why).
  bool night_until_quiet(const std::string& repo_url, RunOutput& r,
                         const std::function<void(const RunOutput&)>& each) {
    for (int attempt = 1; attempt <= kTries; ++attempt) {
      r = night(repo_url);
      ++nights_;
      busy_why_ = busy_reason();
      each(r);
      if (busy_why_.empty() || HasFatalFailure()) return busy_why_.empty();
    }
    return false;
  }
  std::string skip_reason(const std::string& which) const {
    return "the machine was busy with other work on " + std::to_string(kTries) + " tries of " + which +
           ", so the nights after it cannot be predicted here: " + busy_why_;
  }

  // A new build of the server (here: one that burns 5 ms of CPU per request, half the rate).
  void install_a_slower_build() {
    const std::string target = tree_.path("bin/loadlab-target");
    fs::rename(target, target + ".real");
    std::ofstream(target) << "#!/bin/sh\nexec " << target << ".real \"$@\" --work-us 5000\n";
    fs::permissions(target, fs::perms::owner_all);
  }

  // The first night of EachNightRunsTheRepositorysNewestCommit..., whatever the machine did:
  // nothing to compare with, its scenario's files and where they came from, the history and the
  // report. `first_night` is set to the folder of the first try.
  void expect_a_first_night(const RunOutput& r, const std::string& first, std::string& first_night) {
    ASSERT_EQ(r.code, 0) << r.stdout_text << r.output_tail;  // nothing to compare with
    EXPECT_NE(r.stdout_text.find("report: " + state() + "/runs/"), std::string::npos) << r.stdout_text;
    auto result = latest_result();
    EXPECT_EQ(result["scenario_files"][0]["git"]["commit"], first);
    EXPECT_EQ(result["scenario_files"][1]["path"], state() + "/checkout/scenarios/base/matrix.json");
    EXPECT_TRUE(fs::exists(state() + "/history.db"));
    EXPECT_TRUE(fs::exists(latest_night() + "/nightly/report.html"));
    if (first_night.empty()) first_night = latest_night();
  }

  // A night of the slower build, whatever the machine did: a folder of its own, the same commit,
  // the new build recorded, judged against the history (exit status 1 for a regression, 0 for
  // a night the machine's other work made inconclusive), and every night kept on one page.
  void expect_a_slower_night(const RunOutput& r, const std::string& first, const std::string& first_night) {
    auto result = latest_result();
    const bool regression = result["verdicts"]["cells"][0]["verdict"] == "regression";
    EXPECT_EQ(r.code, regression ? 1 : 0) << r.stdout_text << r.output_tail;
    EXPECT_NE(r.stdout_text.find("exit status " + std::to_string(r.code)), std::string::npos)
        << r.stdout_text;
    EXPECT_NE(latest_night(), first_night);  // a folder per night
    EXPECT_TRUE(fs::exists(first_night + "/nightly/result.json")) << "nights are kept";
    EXPECT_EQ(result["scenario_files"][0]["git"]["commit"], first);
    EXPECT_NE(result["cells"][0]["repetitions"][0]["target_build"], latest_build_before_)
        << "the new build is recorded";
    EXPECT_EQ(result["verdicts"]["baseline"], state() + "/history.db");
    EXPECT_NE(r.stdout_text.find("index: " + state() + "/runs/index.html"), std::string::npos)
        << r.stdout_text;
    const std::string index = index_page();
    EXPECT_NE(index.find(std::to_string(nights_) + " nights, newest first."), std::string::npos) << index;
  }

  static constexpr int kTries = 3;
  InstalledTree tree_;
  TempDir dir_;
  nlohmann::json latest_build_before_;
  int nights_ = 0;        // nights run by night_until_quiet, each a folder of its own
  std::string busy_why_;  // the latest night's reason when the machine was busy, else ""

 private:
  // The latest night's reason when other work on the machine made it inconclusive, else "".
  std::string busy_reason() const {
    const std::string path = state() + "/runs/latest/nightly/result.json";
    if (!fs::exists(path)) return "";
    auto latest = read_json_file(path);
    auto& v = latest["verdicts"]["cells"][0];
    if (v["verdict"] != "inconclusive") return "";
    const std::string reason = v.value("reason", std::string());
    return reason.find("the machine was busy") == std::string::npos ? "" : reason;
  }
};

TEST_F(Nightly, EachNightRunsTheRepositorysNewestCommitAgainstTheNightsBefore) {
  ScenarioRepo repo(dir_.path() / "repo");
  const std::string first = repo.commit_delay(10);
  std::string first_night;
  RunOutput r;
  bool quiet = night_until_quiet(repo.url(), r,
                                 [&](const RunOutput& t) { expect_a_first_night(t, first, first_night); });
  if (HasFatalFailure()) return;
  if (!quiet) GTEST_SKIP() << skip_reason("the first night");
  EXPECT_NE(r.stdout_text.find("no earlier night to compare with"), std::string::npos) << r.stdout_text;

  // Four more nights of the same code make a band (five nights are needed for one).
  for (int n = 2; n <= 5; ++n) {
    quiet = night_until_quiet(repo.url(), r, [&](const RunOutput& t) {
      ASSERT_EQ(t.code, 0) << n << ": " << t.stdout_text << t.output_tail;
    });
    if (HasFatalFailure()) return;
    if (!quiet) GTEST_SKIP() << skip_reason("night " + std::to_string(n));
  }
  latest_build_before_ = latest_result()["cells"][0]["repetitions"][0]["target_build"];
  // The slower build: the next night runs it, the same scenario, and fails with 1.
  install_a_slower_build();
  quiet = night_until_quiet(repo.url(), r,
                            [&](const RunOutput& t) { expect_a_slower_night(t, first, first_night); });
  if (!quiet) GTEST_SKIP() << skip_reason("the night of the slower build");
  EXPECT_EQ(r.code, 1) << r.stdout_text << r.output_tail;
  EXPECT_NE(r.stdout_text.find("exit status 1"), std::string::npos) << r.stdout_text;
  auto result = latest_result();
  EXPECT_EQ(result["verdicts"]["cells"][0]["verdict"], "regression");
  EXPECT_EQ(result["verdicts"]["cells"][0]["nights"], 5);
  // Every night kept on one page, the slower one first with its regression.
  const std::string index = index_page();
  EXPECT_NE(index.find(std::to_string(nights_) + " nights, newest first. Runs with a regression: 1;"),
            std::string::npos)
      << index;
  EXPECT_LT(index.find("<tr class=\"failed\"><td><a href="), index.find("<h2>", index.find("<h2>") + 1))
      << index;
}

// systemd stopping the service, or a pod's end, signals the script: the night stops keeping
// its finished cells, and the exit status says it was stopped.
// The script runs the controller and its embedded agent: a tool of the test's, not a job.
agent::SpawnOptions tool() {
  agent::SpawnOptions o;
  o.keep_privileges = true;
  return o;
}

TEST_F(Nightly, SigtermToTheScriptStopsTheRunKeepingItsFinishedCells) {
  ScenarioRepo repo(dir_.path() / "repo");
  repo.commit_delay(0);
  auto child = agent::ChildProcess::spawn(
      {"/usr/bin/env", "LOADLAB_SCENARIO_REPO=" + repo.url(), "LOADLAB_LAB=", "LOADLAB_STATE_DIR=" + state(),
       "LOADLAB_NIGHTLY_FLAGS=--set load={\"duration_s\":0.5} --set matrix.delay_ms=[1,2,3,4,5,6,7,8]",
       tree_.path("bin/loadlab-nightly")},
      tool());
  // Until the first cell is in the journal.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  fs::path journal;
  while (journal.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::error_code ec;
    for (fs::recursive_directory_iterator it(state() + "/runs", ec), end; !ec && it != end; it.increment(ec))
      if (it->path().filename() == "journal.jsonl" && fs::file_size(it->path(), ec) > 0) journal = it->path();
  }
  ASSERT_FALSE(journal.empty()) << "no cell finished";
  ASSERT_EQ(::kill(child->pid(), SIGTERM), 0);  // the script alone, as a pod's end does
  auto exit = child->wait_exit(std::chrono::seconds(20));
  ASSERT_TRUE(exit.has_value()) << "the night did not stop";
  EXPECT_EQ(exit->code, 128 + SIGTERM);
  auto result = read_json_file((journal.parent_path() / "result.json").string());
  EXPECT_GE(result["cells"].size(), 1u);
  EXPECT_LT(result["cells"].size(), 8u);
}

TEST_F(Nightly, ANightThatCannotStartExitsFour) {
  auto r = night((dir_.path() / "no-such-repo").string());
  EXPECT_EQ(r.code, 4) << r.output_tail;
  EXPECT_NE(r.output_tail.find("cannot update " + state() + "/checkout to main of"), std::string::npos)
      << r.output_tail;
  r = night("");
  EXPECT_EQ(r.code, 4);
  EXPECT_NE(r.output_tail.find("LOADLAB_SCENARIO_REPO is not set"), std::string::npos) << r.output_tail;
  // Another night holds the lock.
  ScenarioRepo repo(dir_.path() / "repo");
  repo.commit_delay(0);
  fs::create_directories(state());
  int fd = open((state() + "/.lock").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(flock(fd, LOCK_EX), 0);
  r = night(repo.url());
  close(fd);
  EXPECT_EQ(r.code, 4);
  EXPECT_NE(r.output_tail.find("another night is running"), std::string::npos) << r.output_tail;
  EXPECT_FALSE(fs::exists(state() + "/runs/latest"));
}

// Anyone who can push to the scenario repository wrote its lab file: it may name agents, but
// a token file, certificate or key in it is refused before any agent is called (they come
// from LOADLAB_LAB_CREDENTIALS, outside the repository); and a ref is never taken for an
// option of git.
TEST_F(Nightly, ALabFileFromTheRepositoryNamingCredentialsIsRefused) {
  ScenarioRepo repo(dir_.path() / "repo");
  repo.commit_delay(0);
  repo.commit_file("token", "0123456789abcdef0123456789abcdef\n");
  repo.commit_file("lab.json", R"({"token_file": "token", "agents": [
      {"name": "a", "address": "127.0.0.1:9", "roles": ["target", "load"]}]})");
  auto r = night(repo.url(), "lab.json");
  EXPECT_EQ(r.code, 2) << r.output_tail;
  EXPECT_NE(r.output_tail.find("/token_file: comes from --lab-credentials only"), std::string::npos)
      << r.output_tail;
  repo.commit_file("lab.json", R"({"agents": [{"name": "a", "address": "127.0.0.1:9", "roles": ["target"],
      "tls": {"ca": "ca.pem", "server_name": "a.lab"}}]})");
  r = night(repo.url(), "lab.json");
  EXPECT_EQ(r.code, 2) << r.output_tail;
  EXPECT_NE(r.output_tail.find("/agents/0/tls/ca: comes from --lab-credentials only"), std::string::npos)
      << r.output_tail;

  r = night(repo.url(), "", "--upload-pack=touch " + (dir_.path() / "ran").string());
  EXPECT_EQ(r.code, 4) << r.output_tail;
  EXPECT_NE(r.output_tail.find("LOADLAB_SCENARIO_REF must be a branch, tag or commit"), std::string::npos)
      << r.output_tail;
  EXPECT_FALSE(fs::exists(dir_.path() / "ran"));
}

// Issue 44, item 5: the scenario repository holds a folder laid out as a bare git repository
// whose config runs a command when git obeys it, and the night's scenario includes a file of
// it: no git call of the night (the script's, loadlab's provenance) runs the command, and the
// included file's commit is the repository's.
TEST_F(Nightly, AFolderOfTheRepositoryThatLooksLikeABareRepositoryRunsNoCommand) {
  ScenarioRepo repo(dir_.path() / "repo");
  repo.commit_file("scenarios/evil/part.json", R"({"load": {"requests_per_thread": 20}, "repetitions": 1})");
  repo.commit_file("scenarios/nightly.json",
                   R"({"include": ["base/matrix.json", "evil/part.json"], "name": "nightly"})");
  const auto marker = dir_.path() / "MARKER";
  const std::string commit = commit_bare_lookalike(dir_.path() / "repo", "scenarios/evil", marker);
  ASSERT_EQ(commit.size(), 40u);
  auto r = night(repo.url());
  EXPECT_EQ(r.code, 0) << r.stdout_text << r.output_tail;
  EXPECT_FALSE(fs::exists(marker)) << "the committed folder's core.fsmonitor ran";
  auto result = latest_result();
  ASSERT_EQ(result["scenario_files"].size(), 3u) << result["scenario_files"].dump();
  EXPECT_EQ(result["scenario_files"][2]["path"], state() + "/checkout/scenarios/evil/part.json");
  for (auto& f : result["scenario_files"]) EXPECT_EQ(f["git"]["commit"], commit) << f.dump();
}

// Issue 44, item 6: a scenarios folder that is a link out of the checkout would read the
// machine's files into the night: the night does not start.
TEST_F(Nightly, AScenariosFolderThatIsALinkOutOfTheCheckoutIsRefused) {
  const auto elsewhere = dir_.path() / "elsewhere", repo = dir_.path() / "linked";
  fs::create_directories(elsewhere);
  fs::create_directories(repo);
  std::ofstream(elsewhere / "nightly.json")
      << R"({"name": "nightly", "targets": [{"name": "beast", "builtin": "hello"}], "load": {"total_requests": 10}})";
  fs::create_directory_symlink(elsewhere, repo / "scenarios");
  for (std::vector<std::string> args : {std::vector<std::string>{"init", "-q", "-b", "main"},
                                        {"add", "-A"},
                                        {"commit", "-qm", "a link out"}}) {
    std::vector<std::string> argv = {
        LOADLAB_GIT, "-C", repo.string(), "-c", "user.name=t", "-c", "user.email=t@example.invalid"};
    argv.insert(argv.end(), args.begin(), args.end());
    ASSERT_EQ(run_command(argv).code, 0);
  }
  auto r = night("file://" + repo.string());
  EXPECT_EQ(r.code, 4) << r.output_tail;
  EXPECT_NE(
      r.output_tail.find("resolves to " + fs::canonical(elsewhere).string() + ", outside the checkout " +
                         state() + "/checkout: the scenarios folder must be a folder of the repository"),
      std::string::npos)
      << r.output_tail;
  EXPECT_FALSE(fs::exists(state() + "/runs/latest"));
}

}  // namespace
}  // namespace loadlab::testing
