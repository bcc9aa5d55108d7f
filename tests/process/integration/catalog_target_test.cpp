// Catalog targets that are not ours. A Python server (standard library only) hosted, loaded
// and measured through the agent's own calls, against what the server itself knows: how many
// requests it served, its delay, its VmRSS. And the example targets' launcher when their
// toolchain is missing: one line naming the package, which the controller shows.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "loadlab/agent/agent_service.hpp"
#include "loadlab/shared/endpoint.hpp"
#include "test_support.hpp"

namespace loadlab {
namespace {

using namespace std::chrono_literals;
using testing::bin;
using testing::http_get_body;
using testing::process_running;
using testing::TempDir;

const std::string kSource = LOADLAB_SOURCE_DIR;

// A folder for PATH holding every program of this test's PATH but `hidden`: the machine as
// it is, minus a toolchain. Run with a PATH of only this folder.
class PathWithout {
 public:
  explicit PathWithout(const std::set<std::string>& hidden) {
    std::filesystem::create_directory(dir_.path() / "bin");
    std::string path = getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin";
    for (size_t start = 0; start <= path.size();) {
      size_t end = std::min(path.find(':', start), path.size());
      std::filesystem::path folder = path.substr(start, end - start);
      start = end + 1;
      std::error_code ec;
      for (auto& entry : std::filesystem::directory_iterator(folder, ec)) {
        auto name = entry.path().filename().string();
        if (hidden.count(name)) continue;
        std::filesystem::create_symlink(entry.path(), dir_.path() / "bin" / name, ec);  // first wins
      }
    }
  }
  std::string path() const { return (dir_.path() / "bin").string(); }
  const TempDir& dir() const { return dir_; }

 private:
  TempDir dir_;
};

const std::set<std::string> kToolchains = {"go", "gofmt", "java", "javac", "node", "nodejs"};

// Runs `argv` with PATH = `path` and a fresh cache folder; its exit code and output.
testing::RunOutput run_with_path(const std::vector<std::string>& argv, const PathWithout& path) {
  agent::SpawnOptions o;
  o.env = {{"PATH", path.path()}, {"XDG_CACHE_HOME", (path.dir().path() / "cache").string()}};
  auto child = loadlab::testing::spawn_tool(argv, o);
  testing::RunOutput out;
  auto st = child->wait_exit(30s);
  if (!st) st = child->terminate();
  child->wait_output_end(5s);
  out.code = st->code;
  out.output_tail = child->output_tail(40);
  return out;
}

TEST(ExampleTargets, AMissingToolchainIsOneLineNamingItsPackage) {
  PathWithout path(kToolchains);
  const std::string run_target = kSource + "/examples/targets/run-target";
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"go-nethttp", "go-nethttp needs the Go compiler: apt-get install golang-go"},
      {"fasthttp",
       "fasthttp needs the Go compiler: apt-get install golang-go golang-github-valyala-fasthttp-dev"},
      {"java-httpserver",
       "java-httpserver needs a Java JDK (javac and java): apt-get install default-jdk-headless"},
      {"node-http", "node-http needs Node.js: apt-get install nodejs"}};
  for (auto& [name, line] : expected) {
    auto r = run_with_path({run_target, name, "127.0.0.1", "1", "0", "1"}, path);
    EXPECT_EQ(r.code, 127) << name;
    EXPECT_EQ(r.output_tail, line);
  }
  EXPECT_FALSE(std::filesystem::exists(path.dir().path() / "cache"))
      << "nothing is built without a toolchain";
  auto r = run_with_path({run_target, "rust-hyper", "127.0.0.1", "1", "0"}, path);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(
      r.output_tail,
      "run-target: unknown target 'rust-hyper'; known: go-nethttp, fasthttp, java-httpserver, node-http");
  r = run_with_path({run_target, "go-nethttp", "127.0.0.1", "port", "0"}, path);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.output_tail, "run-target: PORT must be an integer >= 0, not 'port'");
}

TEST(ExampleTargets, TheExampleCatalogLoadsFromAnyWorkingDirectory) {
  auto c = agent::Catalog::load_file(kSource + "/examples/catalog.json");
  EXPECT_EQ(c.names_joined(),
            "hello, fasthttp, go-nethttp, java-httpserver, java-httpserver-nodelay, node-http");
  for (auto* name : {"go-nethttp", "fasthttp", "java-httpserver", "java-httpserver-nodelay", "node-http"}) {
    auto* e = c.find(name);
    ASSERT_NE(e, nullptr) << name;
    EXPECT_EQ(std::filesystem::path(e->argv[0]),
              std::filesystem::path(kSource) / "examples/targets/run-target");
    EXPECT_EQ(e->readiness, agent::CatalogEntry::Readiness::kHttp);
    EXPECT_GE(e->start_timeout_ms, 30000u) << name << ": a first start builds";
  }
}

// What an operator sees when the target agent's machine lacks Go: the cell fails with the
// launcher's line, in result.json and on the controller's output.
TEST(ExampleTargets, TheControllerShowsTheMissingToolchainLine) {
  PathWithout path(kToolchains);
  agent::SpawnOptions o;
  o.env = {{"PATH", path.path()}, {"XDG_CACHE_HOME", (path.dir().path() / "cache").string()}};
  auto agent = loadlab::testing::spawn_tool({bin("loadlab-agent"), "--listen", "127.0.0.1:0", "--name",
                                             "solo", "--catalog", kSource + "/examples/catalog.json"},
                                            o);
  std::string line;
  ASSERT_EQ(agent->next_line(line, 10s), agent::ChildProcess::LineStatus::kLine) << agent->output_tail();
  const auto& dir = path.dir();
  auto lab = dir.file("lab.json", R"({"agents": [{"name": "solo", "address": ")" + line.substr(13) +
                                      R"(", "roles": ["target", "load"]}]})");
  auto s = dir.file("s.json", R"({"name": "nogo", "targets": [{"name": "go", "catalog": "go-nethttp"}],
      "matrix": {"delay_ms": [0], "threads": [1]}, "load": {"total_requests": 10}, "execution": {"retries": 0}})");
  auto out = dir.path() / "out";
  auto r = testing::run_command({bin("loadlab"), "run", s, "--lab", lab, "--out", out.string()});
  EXPECT_EQ(r.code, 3) << r.output_tail;
  const std::string why = "go-nethttp needs the Go compiler: apt-get install golang-go";
  // The printed matrix keeps the row on one line.
  EXPECT_NE(r.stdout_text.find("did not become ready: it exited (exit status 127); last output: " + why),
            std::string::npos)
      << r.stdout_text;
  auto cells = testing::result_cells(out / "result.json");
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_FALSE(cells[0].ok());
  EXPECT_NE(cells[0].error().find(why), std::string::npos) << cells[0].error();
  EXPECT_NE(cells[0].error().find("exit status 127"), std::string::npos) << cells[0].error();
}

// A catalog target over TLS: the agent makes a certificate and key for the job ({tls_cert},
// {tls_key}); the load worker's handshakes are one per connection, and a 20 ms server at 4
// connections answers about 200 requests/s. A protocol the entry does not list is refused
// before anything runs, naming the cell.
TEST(PythonCatalogTarget, ServesHttpsWithTheCertificateTheAgentMadeForTheJob) {
  TempDir dir;
  auto agent =
      loadlab::testing::spawn_tool({bin("loadlab-agent"), "--listen", "127.0.0.1:0", "--name", "solo",
                                    "--catalog", kSource + "/tests/data/python_target/catalog.json"});
  std::string line;
  ASSERT_EQ(agent->next_line(line, 10s), agent::ChildProcess::LineStatus::kLine) << agent->output_tail();
  auto lab = dir.file("lab.json", R"({"agents": [{"name": "solo", "address": ")" + line.substr(13) +
                                      R"(", "roles": ["target", "load"]}]})");
  auto s = dir.file("s.json", R"({"name": "pytls",
      "targets": [{"name": "py", "catalog": "python-tls", "delay_ms": 20}],
      "matrix": {"protocol": ["https"]},
      "load": {"total_requests": 80, "threads": 1, "connections": 4}})");
  auto out = dir.path() / "out";
  auto r = testing::run_command({bin("loadlab"), "run", s, "--lab", lab, "--out", out.string()});
  ASSERT_EQ(r.code, 0) << r.output_tail;
  auto cells = testing::result_cells(out / "result.json");
  ASSERT_EQ(cells.size(), 1u);
  const auto& m = cells[0].median();
  EXPECT_EQ(m.requests(), 80u);
  EXPECT_EQ(m.errors(), 0u);
  EXPECT_EQ(m.tls_handshakes(), 4u);
  EXPECT_GE(m.qps(), 200 * 0.5);
  EXPECT_LE(m.qps(), 200 * 1.05);
  auto h2 = dir.file("h2.json", R"({"name": "pyh2", "targets": [{"name": "py", "catalog": "python-tls"}],
      "matrix": {"protocol": ["https", "h2"]}, "load": {"total_requests": 10}})");
  r = testing::run_command({bin("loadlab"), "run", h2, "--lab", lab, "--out", (dir.path() / "h2").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(
      r.output_tail.find("/matrix/protocol/1: cell py/h2: no agent serves h2 with the target \"python-tls\""),
      std::string::npos)
      << r.output_tail;
}

}  // namespace
}  // namespace loadlab
