// External load clients (wrk, hey, h2load) run by the agent from its catalog: their figures
// against the same tool run directly, and against the target's own request count; and the
// client as a matrix axis through a whole `loadlab run`. Skipped where a tool is missing
// (make deps installs all three).
#include <gtest/gtest.h>
#include <unistd.h>

#include <regex>
#include <thread>

#include "loadlab/agent/agent_service.hpp"
#include "loadlab/clients/output.hpp"
#include "loadlab/proto/json.hpp"
#include "test_support.hpp"

namespace loadlab {
namespace {

using namespace std::chrono_literals;
using testing::bin;
using testing::DelayTarget;
using testing::result_cells;
using testing::run_command;
using testing::TempDir;

bool installed(const char* path) { return access(path, X_OK) == 0; }

// An in-process agent whose catalog names the three tools that are installed.
class ClientAgent {
 public:
  ClientAgent() {
    nlohmann::json clients = nlohmann::json::object();
    for (auto* tool : {"wrk", "hey", "h2load"})
      if (installed(("/usr/bin/" + std::string(tool)).c_str())) clients[tool] = {{"tool", tool}};
    agent::AgentOptions options;
    options.name = "clients";
    options.bin_dir = LOADLAB_BIN_DIR;
    options.catalog = agent::Catalog::parse({{"clients", clients}});
    server_ = std::make_unique<agent::AgentServer>(options);
    stub_ = v1::Agent::NewStub(
        grpc::CreateChannel(server_->start("127.0.0.1:0"), grpc::InsecureChannelCredentials()));
  }
  ~ClientAgent() { server_->shutdown(0); }

  struct Run {
    grpc::Status status;
    std::vector<std::string> events;  // in order: "measure_start", "result", "usage", ...
    v1::LoadResult result;
    v1::Usage usage;
  };
  Run run(const v1::LoadSpec& spec) {
    Run out;
    grpc::ClientContext ctx;
    auto stream = stub_->RunLoad(&ctx);
    v1::LoadCommand cmd;
    *cmd.mutable_spec() = spec;
    stream->Write(cmd);
    stream->WritesDone();
    for (v1::LoadEvent ev; stream->Read(&ev);) {
      if (ev.has_measure_start()) out.events.push_back("measure_start");
      if (ev.has_progress()) continue;
      if (ev.has_result()) {
        out.events.push_back("result");
        out.result = ev.result();
      }
      if (ev.has_usage()) {
        out.events.push_back("usage");
        out.usage = ev.usage();
      }
    }
    out.status = stream->Finish();
    return out;
  }

 private:
  std::unique_ptr<agent::AgentServer> server_;
  std::unique_ptr<v1::Agent::Stub> stub_;
};

v1::LoadSpec spec_for(const std::string& endpoint, const std::string& client) {
  v1::LoadSpec s;
  s.set_endpoint(endpoint);
  s.set_client(client);
  s.set_threads(2);
  s.set_connections(8);
  s.set_keep_alive(true);
  return s;
}

TEST(ExternalClient, WrkThroughTheAgentGivesWhatWrkGivesRunDirectly) {
  if (!installed("/usr/bin/wrk")) GTEST_SKIP() << "wrk is not installed (apt-get install wrk)";
  DelayTarget target(2);
  ASSERT_FALSE(target.endpoint().empty());
  // 8 connections on a 2 ms server: at most 4000 requests/s, for wrk alone and for wrk
  // through the agent alike. Each is run twice, alternating, and the best of each compared:
  // this VM's CPUs stop for tens of ms now and then, which only ever lowers a 2 s run's rate.
  ClientAgent agent;
  auto spec = spec_for(target.endpoint(), "wrk");
  spec.set_duration_s(2);
  double direct_qps = 0;
  ClientAgent::Run run;
  for (int round = 0; round < 2; ++round) {
    auto direct =
        run_command({"/usr/bin/wrk", "-t2", "-c8", "-d2s", "--latency", "http://" + target.endpoint() + "/"});
    ASSERT_EQ(direct.code, 0) << direct.output_tail;
    direct_qps = std::max(direct_qps,
                          clients::parse_output(clients::Tool::kWrk, direct.stdout_text, "", 0).result.qps());
    // The requests wrk left in flight end 2 ms after it: not the next run's.
    std::this_thread::sleep_for(100ms);

    const uint64_t served_before = target.served();
    auto through = agent.run(spec);
    const uint64_t served = target.served() - served_before;
    ASSERT_TRUE(through.status.ok()) << through.status.error_message();
    EXPECT_EQ(through.events, (std::vector<std::string>{"measure_start", "result", "usage"}));
    // wrk counts completed responses; the server also answered the ones in flight at the end.
    EXPECT_GE(served, through.result.requests());
    EXPECT_LE(served, through.result.requests() + 8);
    if (through.result.qps() > run.result.qps()) run = std::move(through);
  }
  const auto& r = run.result;
  EXPECT_NEAR(r.qps(), direct_qps, direct_qps * 0.10) << "through the agent vs direct, the best of two each";
  EXPECT_LE(r.qps(), 4000 * 1.02);
  EXPECT_GE(r.qps(), 4000 * 0.5);  // half of connections ÷ delay: serialized would be far less
  EXPECT_EQ(r.errors(), 0u);
  EXPECT_GE(r.latency().p50_us(), 2000);
  EXPECT_EQ(r.threads(), 2u);
  EXPECT_EQ(r.connections(), 8u);
  // What wrk cannot give is said, not zero.
  EXPECT_NE(std::find(r.unavailable().begin(), r.unavailable().end(), "latency.p999_us"),
            r.unavailable().end());
  // The tool was measured as a job: one process, its CPU over its life.
  EXPECT_GT(run.usage.cpu_pct(), 0);
  EXPECT_GT(run.usage.rss_kb_peak(), 0u);
  EXPECT_GE(run.usage.window_s(), 2.0);
}

// hey and h2load, each that is installed; a missing one skips the test, named, once the
// other is checked.
TEST(ExternalClient, HeyAndH2loadCountExactlyWhatTheServerServed) {
  DelayTarget target(1);
  ASSERT_FALSE(target.endpoint().empty());
  ClientAgent agent;
  std::string missing;
  for (const std::string tool : {"hey", "h2load"}) {
    if (!installed(("/usr/bin/" + tool).c_str())) {
      missing += (missing.empty() ? "" : " and ") + tool;
      continue;
    }
    SCOPED_TRACE(tool);
    auto spec = spec_for(target.endpoint(), tool);
    spec.set_total_requests(400);
    const uint64_t before = target.served();
    auto run = agent.run(spec);
    ASSERT_TRUE(run.status.ok()) << run.status.error_message();
    EXPECT_EQ(run.result.requests(), 400u);
    EXPECT_EQ(target.served() - before, 400u);
    EXPECT_EQ(run.result.errors(), 0u);
    EXPECT_GE(run.result.latency().mean_us(), 1000);
    EXPECT_GT(run.usage.cpu_pct(), 0);
  }
  if (!missing.empty()) GTEST_SKIP() << missing << " not installed (make deps installs them): not checked";
}

TEST(ExternalClient, WhatAToolCannotDoIsRefusedNamingTheFieldAndAnUnknownClientIsNotFound) {
  ClientAgent agent;
  // An unknown client needs no tool: NOT_FOUND, naming what this agent runs.
  auto spec = spec_for("127.0.0.1:9", "ab");
  spec.set_duration_s(1);
  auto run = agent.run(spec);
  EXPECT_EQ(run.status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(run.status.error_message().find("this agent runs: loadlab"), std::string::npos)
      << run.status.error_message();
  if (!installed("/usr/bin/wrk")) GTEST_SKIP() << "wrk is not installed";
  EXPECT_NE(run.status.error_message().find("this agent runs: loadlab, "), std::string::npos)
      << run.status.error_message();
  EXPECT_NE(run.status.error_message().find("wrk"), std::string::npos) << run.status.error_message();
  spec = spec_for("127.0.0.1:9", "wrk");
  spec.set_requests_per_thread(100);  // wrk runs for a duration only
  run = agent.run(spec);
  EXPECT_EQ(run.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(run.status.error_message().find("requests_per_thread"), std::string::npos)
      << run.status.error_message();
}

// One agent "solo" with wrk and h2load in its catalog, both roles; `lab` is its lab file.
struct SoloLab {
  std::unique_ptr<agent::ChildProcess> agent;  // stopped (its group) by its destructor
  std::string lab;
};
SoloLab solo_lab(const TempDir& dir) {
  auto catalog =
      dir.file("catalog.json", R"({"clients": {"wrk": {"tool": "wrk"}, "h2load": {"tool": "h2load"}}})");
  SoloLab l;
  l.agent = loadlab::testing::spawn_tool(
      {bin("loadlab-agent"), "--listen", "127.0.0.1:0", "--name", "solo", "--catalog", catalog});
  std::string line;
  EXPECT_EQ(l.agent->next_line(line, 10s), agent::ChildProcess::LineStatus::kLine) << l.agent->output_tail();
  l.lab = dir.file("lab.json", R"({"agents": [{"name": "solo", "address": ")" + line.substr(13) +
                                   R"(", "roles": ["target", "load"]}]})");
  return l;
}

// The seed client shoot-out in small: `client` as a matrix axis, through a lab agent.
TEST(ExternalClient, ClientIsAMatrixAxis) {
  if (!installed("/usr/bin/wrk") || !installed("/usr/bin/h2load"))
    GTEST_SKIP() << "wrk and h2load are needed (apt-get install wrk nghttp2-client)";
  TempDir dir;
  auto [agent, lab] = solo_lab(dir);
  auto s = dir.file(
      "s.json", R"({"name": "clients", "targets": [{"name": "b", "builtin": "hello", "server_threads": 1}],
      "matrix": {"client": ["loadlab", "wrk", "h2load"], "delay_ms": [2]},
      "load": {"duration_s": 1, "threads": 2, "connections": 8}})");
  auto out = dir.path() / "out";
  auto r = run_command({bin("loadlab"), "run", s, "--lab", lab, "--out", out.string()});
  ASSERT_EQ(r.code, 0) << r.output_tail;
  auto cells = result_cells(out / "result.json");
  ASSERT_EQ(cells.size(), 3u);
  const char* keys[] = {"b/loadlab/d2", "b/wrk/d2", "b/h2load/d2"};
  for (size_t i = 0; i < cells.size(); ++i) {
    SCOPED_TRACE(keys[i]);
    EXPECT_EQ(cells[i].cell().key(), keys[i]);
    ASSERT_TRUE(cells[i].ok()) << cells[i].error();
    EXPECT_EQ(cells[i].cell().axes(0).axis(), "client");
    // 8 connections on a 2 ms server, whichever client loads it.
    EXPECT_LE(cells[i].median().qps(), 4000 * 1.02);
    EXPECT_GE(cells[i].median().qps(), 4000 * 0.5);  // half of connections ÷ delay
    EXPECT_GT(cells[i].median().client().cpu_pct(), 0);
  }
  // The table names the axes in the scenario's order, and says n/a for what h2load lacks.
  EXPECT_TRUE(std::regex_search(r.stdout_text, std::regex("target +client +delay ms +conns +qps")))
      << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("n/a"), std::string::npos) << r.stdout_text;
}

// HTTP/2 from two clients: loadlab-load and h2load, each with 4 streams on each of 2
// connections, against a 10 ms target: 2 × 4 / 10 ms = 800 requests/s either way.
TEST(ExternalClient, H2loadSpeaksHttp2WithItsStreams) {
  if (!installed("/usr/bin/h2load")) GTEST_SKIP() << "h2load is needed (apt-get install nghttp2-client)";
  TempDir dir;
  auto [agent, lab] = solo_lab(dir);
  auto s = dir.file("s.json", R"({"name": "h2clients",
      "targets": [{"name": "b", "builtin": "hello", "server_threads": 1, "delay_ms": 10}],
      "matrix": {"client": ["loadlab", "h2load"], "protocol": ["h2", "h2c"]},
      "load": {"duration_s": 1, "threads": 1, "connections": 2, "streams": 4}})");
  auto out = dir.path() / "out";
  auto r = run_command({bin("loadlab"), "run", s, "--lab", lab, "--out", out.string()});
  ASSERT_EQ(r.code, 0) << r.output_tail;
  auto cells = result_cells(out / "result.json");
  ASSERT_EQ(cells.size(), 4u);
  EXPECT_EQ(cells[3].cell().key(), "b/h2load/h2c");
  for (auto& c : cells) {
    SCOPED_TRACE(c.cell().key());
    ASSERT_TRUE(c.ok()) << c.error();
    EXPECT_EQ(c.cell().streams(), 4u);
    EXPECT_EQ(c.median().errors(), 0u);
    EXPECT_LE(c.median().qps(), 800 * 1.05);
    EXPECT_GE(c.median().qps(), 800 * 0.5);  // half of streams ÷ delay
  }
  EXPECT_TRUE(std::regex_search(r.stdout_text, std::regex("target +client +protocol +streams +conns")))
      << r.stdout_text;
  // What h2load cannot do is refused by the agent, naming the field; the cell fails, not
  // retried (as every refusal of an external client's spec: the agent knows the tool).
  auto s12 = dir.file("s12.json", R"({"name": "h2tls12", "targets": [{"name": "b", "builtin": "hello"}],
      "matrix": {"client": ["h2load"]}, "load": {"duration_s": 1, "protocol": "h2", "tls_version": "1.2"}})");
  r = run_command({bin("loadlab"), "run", s12, "--lab", lab, "--out", (dir.path() / "o12").string()});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.output_tail.find("h2load: tls_version: h2load cannot force a TLS version"), std::string::npos)
      << r.output_tail;
}

}  // namespace
}  // namespace loadlab
