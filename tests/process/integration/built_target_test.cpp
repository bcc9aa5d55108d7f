// Targets built from a commit (a catalog entry's "source"): a repository the test makes of its
// own, holding the small C server of tests/data/commit_server and a commit for each case (one
// that adds work, one that does not compile, one whose build outlasts its limit), built with cc
// by a real agent through its own calls and through `loadlab run`.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "agent_calls.hpp"
#include "history/history.hpp"
#include "source_repo.hpp"
#include "test_support.hpp"

// Named, not anonymous: the file shares a unity batch with others.
namespace loadlab::built_target {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::AgentProcess;
using testing::bin;
using testing::run_command;
using testing::TempDir;

using source_repo::catalog;
using source_repo::SourceRepo;

// The repository: v1 (the server), v2 (more work per request), broken (does not compile),
// slow (a build that sleeps a minute), each a tag.
SourceRepo four_commits(const fs::path& at) {
  SourceRepo repo(at);
  repo.commit("v1", "the server");
  repo.set_work(200000);
  repo.commit("v2", "more work per request");
  repo.break_build();
  repo.commit("broken", "a commit that does not build");
  repo.mend_build("v2");
  source_repo::write(repo.dir / "Makefile",
                     "server: server.c work.h\n\tsleep 60\n\tcc -O2 -D_GNU_SOURCE -o server server.c\n");
  repo.commit("slow", "a build that outlasts its limit");
  return repo;
}

class BuiltTarget : public ::testing::Test {
 protected:
  BuiltTarget() : repo(four_commits(dir.path() / "repo")) {}
  void start_agent(std::vector<std::string> extra = {}) {
    cache = dir.path() / "cache";
    extra.insert(extra.end(), {"--catalog", catalog(dir, repo), "--build-cache", cache.string()});
    agent = std::make_unique<AgentProcess>("srv", "127.0.0.1:0", extra);
    stub = testing::stub_for(agent->address, grpc::InsecureChannelCredentials());
  }
  grpc::Status resolve(const std::string& target, const std::string& ref, v1::ResolvedCommit& out,
                       const std::string& since = "") {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 60s);
    v1::CommitQuery q;
    q.set_target(target);
    q.set_ref(ref);
    q.set_since(since);
    return stub->ResolveCommit(&ctx, q, &out);
  }
  // One HostTarget call of `target` at `commit`, its events to Ready (or the end), GET / once.
  struct Hosting {
    std::vector<v1::TargetEvent> events;
    grpc::Status status;
    std::string reply;
  };
  Hosting host(const std::string& target, const std::string& commit) {
    v1::TargetSpec spec;
    spec.set_catalog(target);
    spec.set_commit(commit);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 120s);
    auto stream = stub->HostTarget(&ctx);
    v1::TargetCommand cmd;
    *cmd.mutable_spec() = spec;
    stream->Write(cmd);
    Hosting h;
    for (v1::TargetEvent ev; stream->Read(&ev);) {
      h.events.push_back(ev);
      if (ev.has_ready()) {
        h.reply = testing::http_get_body(ev.ready().endpoint(), "/");
        stream->WritesDone();
      }
    }
    h.status = stream->Finish();
    return h;
  }
  static const v1::Built* built(const Hosting& h) {
    for (auto& e : h.events)
      if (e.has_built()) return &e.built();
    return nullptr;
  }
  static bool building(const Hosting& h) {
    for (auto& e : h.events)
      if (e.has_building()) return true;
    return false;
  }

  TempDir dir;
  SourceRepo repo;
  fs::path cache;
  std::unique_ptr<AgentProcess> agent;
  std::unique_ptr<v1::Agent::Stub> stub;
};

TEST_F(BuiltTarget, ARefResolvesToItsCommitAndItsFirstParentRange) {
  start_agent();
  v1::ResolvedCommit r;
  ASSERT_TRUE(resolve("cs", "v2", r).ok());
  EXPECT_EQ(r.commit().sha(), repo.shas["v2"]);
  EXPECT_EQ(r.commit().subject(), "more work per request");
  EXPECT_GT(r.commit().time_unix(), 1'600'000'000);
  ASSERT_TRUE(resolve("cs", "main", r, "v1").ok());
  EXPECT_EQ(r.commit().sha(), repo.shas["slow"]);
  EXPECT_EQ(r.since().sha(), repo.shas["v1"]);
  ASSERT_EQ(r.between_size(), 2);  // oldest first, both ends excluded
  EXPECT_EQ(r.between(0).sha(), repo.shas["v2"]);
  EXPECT_EQ(r.between(1).sha(), repo.shas["broken"]);
}

TEST_F(BuiltTarget, ABuildIsMadeOnceAndReusedFromTheCache) {
  start_agent();
  auto first = host("cs", repo.shas["v1"]);
  ASSERT_TRUE(first.status.ok()) << first.status.error_message();
  EXPECT_EQ(first.reply, "hello");
  EXPECT_TRUE(building(first));
  ASSERT_NE(built(first), nullptr);
  EXPECT_FALSE(built(first)->cached());
  EXPECT_EQ(built(first)->commit(), repo.shas["v1"]);
  EXPECT_GT(built(first)->size_bytes(), 10'000u);  // the server binary at least

  auto again = host("cs", repo.shas["v1"]);
  ASSERT_TRUE(again.status.ok()) << again.status.error_message();
  EXPECT_EQ(again.reply, "hello");
  EXPECT_FALSE(building(again));
  ASSERT_NE(built(again), nullptr);
  EXPECT_TRUE(built(again)->cached());
  // One build in the cache, with its log and what it is.
  size_t builds = 0;
  for (auto& d : fs::directory_iterator(cache / "builds")) {
    ++builds;
    auto meta = nlohmann::json::parse(std::ifstream(d.path() / "meta.json"));
    EXPECT_EQ(meta["commit"], repo.shas["v1"]);
    EXPECT_EQ(meta["repository"], repo.dir.string());
    EXPECT_TRUE(fs::exists(d.path() / "build.log"));
  }
  EXPECT_EQ(builds, 1u);
}

TEST_F(BuiltTarget, AFailedBuildFailsWithItsLogsTailAndIsNotBuiltAgain) {
  start_agent();
  auto h = host("cs", repo.shas["broken"]);
  EXPECT_EQ(h.status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(h.status.error_message().find("failed: exit status 2"), std::string::npos)
      << h.status.error_message();
  EXPECT_NE(h.status.error_message().find("this commit does not compile"), std::string::npos)
      << h.status.error_message();
  EXPECT_TRUE(building(h));
  auto again = host("cs", repo.shas["broken"]);
  EXPECT_EQ(again.status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(again.status.error_message(), h.status.error_message());
  EXPECT_FALSE(building(again));  // remembered, not built again
}

TEST_F(BuiltTarget, ABuildPastItsLimitIsStoppedAndSaid) {
  start_agent();
  const auto t0 = std::chrono::steady_clock::now();
  auto h = host("cs-quick", repo.shas["slow"]);
  const double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(h.status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(h.status.error_message().find("ran past its limit of 2 s (source.timeout_s) and was stopped"),
            std::string::npos)
      << h.status.error_message();
  EXPECT_LT(took_s, 30);  // not the build's minute
  ASSERT_TRUE(building(h));
  EXPECT_EQ(h.events.front().building().timeout_ms(), 2000u);
}

TEST_F(BuiltTarget, RefsAndCommitsThatAreNotOnesAreRefused) {
  start_agent();
  v1::ResolvedCommit r;
  auto st = resolve("cs", "--upload-pack=touch /tmp/owned", r);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(st.error_message().find("ref: must not begin with '-'"), std::string::npos) << st.error_message();
  st = resolve("cs", "no-such-branch", r);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(st.error_message().find("\"no-such-branch\" names no commit"), std::string::npos)
      << st.error_message();
  st = resolve("hello", "main", r);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION);

  auto h = host("cs", "main");  // a ref, not a sha
  EXPECT_EQ(h.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(h.status.error_message().find("commit: must be a full sha"), std::string::npos);
  h = host("cs", "");
  EXPECT_EQ(h.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(h.status.error_message().find("is built from a commit; the spec must name one"),
            std::string::npos);
}

// The scenario names a commit and nothing more: a repository or a command is an unknown key.
TEST_F(BuiltTarget, AScenarioCannotNameARepositoryOrACommand) {
  auto validate = [&](const nlohmann::json& target) {
    nlohmann::json s = {
        {"name", "s"}, {"targets", {target}}, {"load", {{"duration_s", 1}}}, {"matrix", {{"threads", {1}}}}};
    return run_command({bin("loadlab"), "validate", dir.file("s.json", s.dump())});
  };
  nlohmann::json t = {{"name", "cs"}, {"catalog", "cs"}, {"commit", "main"}};
  EXPECT_EQ(validate(t).code, 0) << validate(t).output_tail;
  for (const char* key : {"source", "repository", "build", "argv"}) {
    auto with = t;
    with[key] = key == std::string("source") ? nlohmann::json{{"repository", "/tmp"}} : nlohmann::json("x");
    auto r = validate(with);
    EXPECT_EQ(r.code, 2) << key;
    EXPECT_NE(r.output_tail.find(std::string("/targets/0/") + key), std::string::npos) << r.output_tail;
  }
  t["commit"] = "--output=/etc/passwd";
  auto r = validate(t);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output_tail.find("/targets/0/commit: must not begin with '-'"), std::string::npos)
      << r.output_tail;
}

// `loadlab run` resolves the ref once and records the commit in result.json and the history.
TEST_F(BuiltTarget, TheCommitIsRecordedInResultJsonAndTheHistory) {
  start_agent();
  const std::string lab = source_repo::one_agent_lab(dir, agent->address);
  nlohmann::json s = {{"name", "built"},
                      {"targets", {{{"name", "cs"}, {"catalog", "cs"}, {"commit", "v2~1"}}}},
                      {"load", {{"duration_s", 0.5}, {"warmup_s", 0.1}}},
                      {"matrix", {{"threads", {1}}}}};
  const std::string db = (dir.path() / "history.db").string(), out = (dir.path() / "run").string();
  auto r = run_command(
      {bin("loadlab"), "run", dir.file("s.json", s.dump()), "--lab", lab, "--out", out, "--history", db},
      120s);
  ASSERT_EQ(r.code, 0) << r.output_tail;
  auto result = nlohmann::json::parse(std::ifstream(out + "/result.json"));
  ASSERT_EQ(result["target_commits"].size(), 1u);
  EXPECT_EQ(result["target_commits"][0]["ref"], "v2~1");
  EXPECT_EQ(result["target_commits"][0]["sha"], repo.shas["v1"]);
  EXPECT_EQ(result["target_commits"][0]["subject"], "the server");
  EXPECT_EQ(result["cells"][0]["repetitions"][0]["target_commit"], repo.shas["v1"]);

  auto history = controller::History::open(db, controller::History::Mode::kExisting);
  auto points = history.series("built", result["cells"][0]["cell"]["key"], controller::history_metric("qps"));
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].target_commit, repo.shas["v1"]);
  EXPECT_FALSE(points[0].values.empty());
}

// A build runs as the job user, and what it made is sealed: the job user (a target started
// from it, the next build) cannot change what a later run trusts.
TEST(BuiltTargetAsJobUser, TheBuildCannotBeWrittenByTheJobUserAfterTheBuild) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run jobs as another user (CI is root)";
  TempDir dir;
  fs::permissions(dir.path(), fs::perms(0755));  // the job user reaches its build folder
  SourceRepo repo = four_commits(dir.path() / "repo");
  const fs::path cache = dir.path() / "cache";
  AgentProcess agent(
      "srv", "127.0.0.1:0",
      {"--catalog", catalog(dir, repo), "--build-cache", cache.string(), "--job-user", "nobody"});
  auto stub = testing::stub_for(agent.address, grpc::InsecureChannelCredentials());
  v1::TargetSpec spec;
  spec.set_catalog("cs");
  spec.set_commit(repo.shas["v1"]);
  testing::Hosted hosted(*stub, spec);
  ASSERT_FALSE(hosted.endpoint.empty());
  EXPECT_EQ(testing::http_get_body(hosted.endpoint, "/"), "hello");

  fs::path build;
  for (auto& d : fs::directory_iterator(cache / "builds")) build = d.path();
  ASSERT_FALSE(build.empty());
  std::ifstream log(build / "build.log");
  std::string text((std::istreambuf_iterator<char>(log)), {});
  EXPECT_NE(text.find("built by nobody"), std::string::npos) << text;
  // Owned by the agent, no write bit, no set-id bit, anywhere in the tree.
  size_t files = 0;
  for (auto& e : fs::recursive_directory_iterator(build / "tree")) {
    struct stat st {};
    ASSERT_EQ(lstat(e.path().c_str(), &st), 0);
    if (S_ISLNK(st.st_mode)) continue;
    ++files;
    EXPECT_EQ(st.st_uid, 0u) << e.path();
    EXPECT_EQ(st.st_mode & 07222, 0u) << e.path();
  }
  EXPECT_GT(files, 4u);
  // The job user tries: append to the program, add a file, replace the program.
  const std::string tree = (build / "tree").string();
  for (const std::string& script :
       {"echo x >> " + tree + "/server", "touch " + tree + "/new", "mv " + tree + "/server " + tree + "/old",
        "chmod u+w " + tree + "/server"}) {
    auto r = run_command(
        {"/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "/bin/sh", "-c", script});
    EXPECT_NE(r.code, 0) << script << " succeeded as the job user";
  }
  EXPECT_TRUE(hosted.close().ok());
}

}  // namespace loadlab::built_target
