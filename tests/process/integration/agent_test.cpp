// The agent's numbers against ground truth: processes of known CPU and memory cost
// (loadlab-burn) hosted through the catalog, measured between marks over real gRPC.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "agent_fixture.hpp"
#include "loadlab/agent/agent_service.hpp"
#include "loadlab/agent/ports.hpp"
#include "loadlab/agent/proc_control.hpp"
#include "loadlab/agent/profiler.hpp"
#include "loadlab/agent/usage_window.hpp"
#include "loadlab/shared/build_info.hpp"
#include "loadlab/shared/json_input.hpp"
#include "proc_control_paths.hpp"
#include "schedstat.hpp"
#include "test_support.hpp"

namespace loadlab::agent {
namespace {

using namespace agent_fixture;
using namespace std::chrono_literals;
using loadlab::testing::bin;

INSTANTIATE_TEST_SUITE_P(Paths, AgentTruthTest,
                         ::testing::Values(ProcControlMode::kCgroup2, ProcControlMode::kCgroup1Freezer,
                                           ProcControlMode::kProcessGroup),
                         [](const ::testing::TestParamInfo<ProcControlMode>& info) {
                           return std::string(info.param == ProcControlMode::kCgroup2          ? "cgroup2"
                                              : info.param == ProcControlMode::kCgroup1Freezer ? "cgroup1"
                                                                                               : "pgroup");
                         });

TEST_P(AgentTruthTest, CancellingTheStreamLeavesNoProcessOfTheJob) {
  auto h = host("tree30");
  ASSERT_TRUE(h.stream);
  auto pids = tree_pids(h.pid);
  for (auto until = std::chrono::steady_clock::now() + 5s;
       pids.size() < 3 && std::chrono::steady_clock::now() < until; pids = tree_pids(h.pid))
    std::this_thread::sleep_for(10ms);  // its shell starts the other two
  ASSERT_EQ(pids.size(), 3u);
  h.ctx->TryCancel();
  h.stream->Finish();
  auto deadline = std::chrono::steady_clock::now() + 5s;
  for (pid_t p : pids) {
    while (running(p) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(20ms);
    EXPECT_FALSE(running(p)) << "pid " << p << " outlived its stream";
  }
}

// A target that daemonises (setsid, and its parent exits: out of the group, re-parented to the
// job's first process, a child subreaper) is stopped with its job on every path: it stays in
// the job's tree, and its cgroup holds it where there is one.
TEST_P(AgentTruthTest, ADaemonisingTargetIsStoppedWithItsJob) {
  loadlab::testing::TempDir dir;
  const std::string pid_file = (dir.path() / "daemon.pid").string();
  const std::string script =
      "(setsid " + bin("loadlab-burn") + " --port {port} & echo $! > " + pid_file + "); exec sleep 60";
  start({{"targets", {{"daemon", {{"argv", {"/bin/sh", "-c", script}}, {"readiness", {{"type", "tcp"}}}}}}}});
  auto h = host("daemon");
  ASSERT_TRUE(h.stream);
  pid_t daemon = 0;
  std::ifstream(pid_file) >> daemon;
  ASSERT_GT(daemon, 0);
  ASSERT_TRUE(running(daemon));
  auto children = tree_pids(h.pid);
  ASSERT_EQ(std::count(children.begin(), children.end(), daemon), 1) << "the daemon left the job's tree";
  stop(h);
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (running(daemon) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(running(daemon)) << "daemon pid " << daemon << " outlived its job";
}

TEST_F(AgentTest, ASecondTargetIsRefusedWhileOneRuns) {
  auto first = host("burn50");
  ASSERT_TRUE(first.stream);
  grpc::Status st;
  auto second = host("burn50", &st);
  EXPECT_FALSE(second.stream);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  stop(first);
}

TEST_F(AgentTest, AnUnknownNameIsNotFoundWithTheKnownOnes) {
  grpc::Status st;
  host("/bin/sh -c reboot", &st);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(st.error_message().find(
                "this agent knows: hello, beast-http, burn50, deaf, envcwd, quitter, rss200, tree30"),
            std::string::npos)
      << st.error_message();
}

TEST_P(AgentTruthTest, ATargetThatExitsEarlyReportsItsStatusAndOutput) {
  grpc::Status st;
  host("quitter", &st);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(st.error_message().find("exit status 7"), std::string::npos) << st.error_message();
  EXPECT_NE(st.error_message().find("boom on "), std::string::npos) << st.error_message();
}

TEST_P(AgentTruthTest, ATargetThatNeverListensTimesOutAndIsKilled) {
  grpc::Status st;
  auto t0 = std::chrono::steady_clock::now();
  auto h = host("deaf", &st);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(st.error_message().find("accepted no connection within 500 ms"), std::string::npos)
      << st.error_message();
  EXPECT_FALSE(running(h.pid));
}

TEST_F(AgentTest, AnHttpReadinessProbeWaitsForA2xxAndPlaceholdersAreFilled) {
  auto h = host("beast-http", nullptr, 7);
  ASSERT_TRUE(h.stream);
  // The catalog's {port} is the port the agent reserved, on the advertised host.
  EXPECT_EQ(h.endpoint.rfind("127.0.0.1:", 0), 0u);
  // {delay_ms} reached the program: a request takes at least 7 ms.
  auto ep = parse_endpoint(h.endpoint);
  ASSERT_TRUE(ep);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(agent::http_ready(*ep, "/"));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 7ms);
  stop(h);
}

TEST_F(AgentTest, CatalogEnvAndWorkingDirectoryReachTheProgram) {
  auto h = host("envcwd", nullptr, 3);
  ASSERT_TRUE(h.stream);
  auto tail = stop(h);
  EXPECT_NE(tail.find("FOO=bar-3"), std::string::npos) << tail;
  EXPECT_NE(tail.find("/tmp"), std::string::npos) << tail;
}

TEST(Catalog, BadEntriesAreRejectedWithTheirPath) {
  auto err = [](const std::string& text) {
    try {
      (void)Catalog::parse(nlohmann::json::parse(text));
      return std::string();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
  };
  EXPECT_EQ(err(R"({"targets": {"x": {"argv": ["bin/rel"]}}})"),
            "/targets/x/argv/0: must be an absolute path to the program (a relative one needs a catalog file "
            "to be relative to)");
  EXPECT_EQ(err(R"({"targets": {"x": {"argv": [""]}}})"),
            "/targets/x/argv/0: must be the path to the program");
  EXPECT_EQ(err(R"({"targets": {"x": {"argv": ["/bin/sh"], "cwd": "{catalog_dir}"}}})"),
            "/targets/x/cwd: {catalog_dir} is only known in a catalog read from a file");
  EXPECT_EQ(err(R"({"targets": {"x": {"argv": ["/nonexistent/prog"]}}})"),
            "/targets/x/argv/0: /nonexistent/prog is not an executable file on this machine");
  EXPECT_EQ(err(R"({"targets": {"x": {"argv": ["/bin/sh", "{prot}"]}}})"),
            "/targets/x/argv/1: unknown placeholder {prot}; allowed: {port}, {host}, {delay_ms}, {threads}, "
            "{protocol}, {tls_cert}, {tls_key}, {catalog_dir}, {build_dir}");
  // Built from a commit: a source with a repository and a build command; {build_dir} only there.
  EXPECT_EQ(err(R"({"targets": {"x": {"argv": ["{build_dir}/server"]}}})"),
            "/targets/x: {build_dir} is only known in an entry with a \"source\"");
  EXPECT_EQ(err(R"({"targets": {"x": {"argv": ["{build_dir}/s"], "source": {"repository": "/nonexistent",
                                        "build": ["make"]}}}})"),
            "/targets/x/source/repository: /nonexistent is not a folder on this machine");
  EXPECT_EQ(err(R"({"targets": {"x": {"argv": ["{build_dir}/s"], "source": {"repository": "-u/x",
                                        "build": ["make"]}}}})"),
            "/targets/x/source/repository: must be a folder or a URL, not beginning with '-'");
  EXPECT_EQ(err(R"({"targets": {"x": {"argv": ["{build_dir}/s"], "source": {"repository": "/tmp",
                                        "build": ["no-such-compiler"]}}}})"),
            "/targets/x/source/build/0: no-such-compiler is not a program on this machine");
  EXPECT_EQ(err(R"({"targets": {"x": {"argv": ["{build_dir}/s"], "source": {"repository": "/tmp",
                                        "build": ["/bin/true"], "timeout_s": 0}}}})"),
            "/targets/x/source/timeout_s: must be an integer in 1..21600");
  EXPECT_EQ(err(R"({"targets": {"x": {"argv": ["{build_dir}/s"], "source": {"repository": "/tmp",
                                        "build": ["/bin/true"], "branch": "main"}}}})"),
            "/targets/x/source/branch: unknown key; allowed here: repository, build, timeout_s");
  EXPECT_EQ(err(R"({"targets": {"x": {"argv": ["/bin/sh"], "protocols": ["https", "h4"]}}})"),
            "/targets/x/protocols/1: must be one of http1, https, h2, h2c, h3, got \"h4\"");
  EXPECT_EQ(err(R"({"targets": {"x": {"argv": ["/bin/sh"], "protocols": ["h2c", "h2c"]}}})"),
            "/targets/x/protocols/1: is listed twice");
  EXPECT_EQ(err(R"({"targets": {"x": {"argv": ["/bin/sh"], "protocols": []}}})"),
            "/targets/x/protocols: must be a non-empty array of http1, https, h2, h2c, h3");
  EXPECT_EQ(
      err(R"({"targets": {"x": {"argv": ["/bin/sh"], "readiness": {"type": "http"},
                                      "protocols": ["http1", "h2"]}}})"),
      "/targets/x/protocols/1: is served over TLS, and the \"http\" readiness probe speaks plain HTTP: use "
      "\"type\": \"tcp\"");
  EXPECT_EQ(err(R"({"targets": {"x": {"argv": ["/bin/sh"], "readiness": {"type": "grpc"}}}})"),
            "/targets/x/readiness/type: must be \"tcp\" or \"http\"");
  EXPECT_EQ(err(R"({"targets": {"hello": {"argv": ["/bin/sh"]}}})"),
            "/targets/hello: \"hello\" is a built-in target; choose another name");
  EXPECT_EQ(err(R"({"targets": {"x": {"argv": ["/bin/sh"], "cmd": "rm"}}})").substr(0, 33),
            "/targets/x/cmd: unknown key; allo");
}

// A catalog beside its programs: relative argv[0] and cwd, and {catalog_dir}, are the catalog
// file's folder, whatever the agent's working directory; the other checks still hold.
TEST(Catalog, RelativePathsAndCatalogDirAreTheCatalogFilesFolder) {
  loadlab::testing::TempDir dir;
  std::filesystem::create_directories(dir.path() / "sub" / "work");
  auto prog = dir.file("sub/prog", "#!/bin/sh\n");
  std::filesystem::permissions(prog, std::filesystem::perms::owner_all);
  auto catalog_file = dir.file("sub/catalog.json", R"({"targets": {
      "rel": {"argv": ["prog", "{catalog_dir}/data", "{port}"], "cwd": "work",
              "env": {"DATA": "{catalog_dir}/x-{threads}"}},
      "dot": {"argv": ["./work/../prog"], "cwd": "{catalog_dir}/work"},
      "abs": {"argv": ["/bin/sh"]}}})");
  const std::string sub = (dir.path() / "sub").string();
  // Read through a relative path with a detour: the folder is still absolute and normal.
  auto relative = std::filesystem::relative(dir.path() / "sub") / "work" / ".." / "catalog.json";
  ASSERT_FALSE(relative.is_absolute());
  for (const std::string& file : {catalog_file, relative.string()}) {
    SCOPED_TRACE(file);
    auto c = Catalog::load_file(file);
    auto* rel = c.find("rel");
    ASSERT_NE(rel, nullptr);
    EXPECT_EQ(rel->argv, (std::vector<std::string>{sub + "/prog", sub + "/data", "{port}"}));
    EXPECT_EQ(rel->cwd, sub + "/work");
    ASSERT_EQ(rel->env.size(), 1u);
    EXPECT_EQ(rel->env[0].second, sub + "/x-{threads}");
    EXPECT_EQ(expand_placeholders(rel->env[0].second, {"127.0.0.1", 80, 0, 4}), sub + "/x-4");
    EXPECT_EQ(c.find("dot")->argv[0], sub + "/prog");
    EXPECT_EQ(c.find("dot")->cwd, sub + "/work");
    EXPECT_EQ(c.find("abs")->argv[0], "/bin/sh");
  }
  auto err = [&](const std::string& text) {
    try {
      Catalog::load_file(dir.file("sub/bad.json", text));
      return std::string();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
  };
  EXPECT_EQ(err(R"({"targets": {"x": {"argv": ["missing"]}}})"),
            "/targets/x/argv/0: " + sub + "/missing is not an executable file on this machine");
  EXPECT_EQ(err(R"({"targets": {"x": {"argv": ["prog"], "cwd": "nowhere"}}})"),
            "/targets/x/cwd: " + sub + "/nowhere is not a folder on this machine");
  EXPECT_EQ(
      err(R"({"targets": {"x": {"argv": ["{catalog_dir}/prog", "{catalog}"]}}})"),
      "/targets/x/argv/1: unknown placeholder {catalog}; allowed: {port}, {host}, {delay_ms}, {threads}, "
      "{protocol}, {tls_cert}, {tls_key}, {catalog_dir}, {build_dir}");
}

TEST(Ports, TwoReservationsNeverShareAPortAndReleaseOnDestruction) {
  char tmpl[] = "/tmp/loadlab-ports-test-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  std::set<uint16_t> seen;
  {
    std::vector<std::unique_ptr<PortReservation>> held;
    for (int i = 0; i < 20; ++i) {
      held.push_back(std::make_unique<PortReservation>("127.0.0.1", dir));
      EXPECT_TRUE(seen.insert(held.back()->port()).second);
      // Held: nobody else can lock it.
      int fd = open((dir + "/" + std::to_string(held.back()->port())).c_str(), O_RDWR);
      ASSERT_GE(fd, 0);
      EXPECT_NE(flock(fd, LOCK_EX | LOCK_NB), 0);
      close(fd);
    }
  }
  for (uint16_t port : seen) {  // released
    int fd = open((dir + "/" + std::to_string(port)).c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    EXPECT_EQ(flock(fd, LOCK_EX | LOCK_NB), 0);
    close(fd);
  }
  std::filesystem::remove_all(dir);
}

TEST_F(AgentTest, DescribeListsTheMachineAndCatalog) {
  grpc::ClientContext ctx;
  v1::AgentInfo info;
  ASSERT_TRUE(stub->Describe(&ctx, {}, &info).ok());
  EXPECT_EQ(info.name(), "t");
  EXPECT_GT(info.cores(), 0u);
  EXPECT_GT(info.memory_bytes(), 0u);
  EXPECT_FALSE(info.kernel().empty());
  EXPECT_FALSE(info.hostname().empty());
  EXPECT_EQ(info.catalog_size(), 8);
  EXPECT_FALSE(info.busy());
  // What each target serves and each client speaks; catalog programs: HTTP/1.1.
  ASSERT_EQ(info.target_protocols().count("burn50"), 1u);
  EXPECT_EQ(info.target_protocols().at("burn50").protocols_size(), 1);
  EXPECT_EQ(info.target_protocols().at("burn50").protocols(0), v1::PROTOCOL_HTTP1);
  ASSERT_EQ(info.client_protocols().count("loadlab"), 1u);
  EXPECT_EQ(info.commit(), std::string(git_commit()));
}

// Describe says what profiling the agent found it can do when it started; given a perf that is
// not there, none, and why.
TEST_F(AgentTest, DescribeSaysWhatProfilingItCanDo) {
  grpc::ClientContext ctx;
  v1::AgentInfo info;
  ASSERT_TRUE(stub->Describe(&ctx, {}, &info).ok());
  const auto here = agent::profiling_support();
  EXPECT_EQ(info.profiling().available(), here.available);
  EXPECT_EQ(info.profiling().reason(), here.reason);
  EXPECT_EQ(info.profiling().kernel(), here.kernel);
  AgentOptions o;
  o.name = "no-perf";
  o.bin_dir = LOADLAB_BIN_DIR;
  o.perf = "/nonexistent/perf";
  AgentServer without(o);
  auto without_stub = v1::Agent::NewStub(
      grpc::CreateChannel(without.start("127.0.0.1:0"), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx2;
  ASSERT_TRUE(without_stub->Describe(&ctx2, {}, &info).ok());
  EXPECT_FALSE(info.profiling().available());
  EXPECT_FALSE(info.profiling().kernel());
  EXPECT_EQ(info.profiling().reason(), "/nonexistent/perf is not installed (Debian's linux-perf)");
  without.shutdown(0);
}

// A spec asking for a protocol the target does not serve is refused at the agent too (the
// controller checks Describe first; this is the edge's own check).
TEST_F(AgentTest, AProtocolTheTargetDoesNotServeIsInvalidArgument) {
  grpc::Status st;
  auto h = host("burn50", &st, 0, v1::PROTOCOL_H3);
  EXPECT_FALSE(h.stream);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message(), "protocol: target \"burn50\" does not serve h3; it serves http1");
}

}  // namespace
}  // namespace loadlab::agent
