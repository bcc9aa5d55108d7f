#pragma once
// The agent under test in the test's process, with a catalog of targets of known cost
// (loadlab-burn), and its truth tests' fixture, once per process-control path: shared by the
// agent's behaviour tests (tests/process/integration/agent_test.cpp) and its truths
// (tests/timing/integration/agent_truth_test.cpp).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "loadlab/agent/agent_service.hpp"
#include "loadlab/agent/ports.hpp"
#include "loadlab/agent/proc_control.hpp"
#include "loadlab/agent/usage_window.hpp"
#include "loadlab/shared/build_info.hpp"
#include "loadlab/shared/json_input.hpp"
#include "proc_control_paths.hpp"
#include "schedstat.hpp"
#include "test_support.hpp"

// Named, not anonymous: the fixture is one class in every file that uses it.
namespace loadlab::agent::agent_fixture {

using namespace std::chrono_literals;
using loadlab::testing::bin;
using Stream = grpc::ClientReaderWriter<v1::TargetCommand, v1::TargetEvent>;

inline bool running(pid_t pid) { return loadlab::testing::process_running(pid); }

using testing::tree_pids;

inline nlohmann::json burn_entry(std::vector<std::string> extra) {
  std::vector<std::string> argv{bin("loadlab-burn"), "--port", "{port}"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return {{"argv", argv}, {"readiness", {{"type", "tcp"}}}};
}

class AgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    nlohmann::json catalog = {
        {"targets",
         {{"burn50", burn_entry({"--cpu-pct", "50"})},
          {"tree30", burn_entry({"--cpu-pct", "30", "--children", "2"})},
          {"rss200", burn_entry({"--rss-mb", "200", "--file-mb", "100"})},
          {"quitter", {{"argv", {"/bin/sh", "-c", "echo boom on {port}; exit 7"}}}},
          {"deaf", {{"argv", {"/bin/sleep", "30"}}, {"start_timeout_ms", 500}}},
          {"beast-http",
           {{"argv",
             {bin("loadlab-target"), "--listen", "{host}:{port}", "--threads", "{threads}", "--delay-ms",
              "{delay_ms}"}},
            {"readiness", {{"type", "http"}, {"path", "/ready"}}}}},
          {"envcwd",
           {{"argv", {"/bin/sh", "-c", "echo FOO=$FOO; pwd; exec " + bin("loadlab-burn") + " --port {port}"}},
            {"env", {{"FOO", "bar-{delay_ms}"}}},
            {"cwd", "/tmp"}}}}}};
    start(catalog);
  }
  void TearDown() override { server->shutdown(0); }

  // (Re)starts the agent with `catalog`.
  void start(const nlohmann::json& catalog) {
    if (server) server->shutdown(0);
    AgentOptions o;
    o.name = "t";
    o.bin_dir = LOADLAB_BIN_DIR;
    o.catalog = Catalog::parse(catalog);
    server = std::make_unique<AgentServer>(o);
    auto address = server->start("127.0.0.1:0");
    stub = v1::Agent::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  }

  struct Hosted {
    std::unique_ptr<grpc::ClientContext> ctx = std::make_unique<grpc::ClientContext>();
    std::unique_ptr<Stream> stream;
    pid_t pid = 0;
    std::string endpoint;
  };

  // Starts a catalog target and waits for Ready; `status` gets the error if there is one.
  Hosted host(const std::string& name, grpc::Status* status = nullptr, uint32_t delay_ms = 0,
              v1::Protocol protocol = v1::PROTOCOL_UNSPECIFIED) {
    Hosted h;
    h.stream = stub->HostTarget(h.ctx.get());
    v1::TargetCommand cmd;
    cmd.mutable_spec()->set_catalog(name);
    cmd.mutable_spec()->set_protocol(protocol);
    cmd.mutable_spec()->set_delay_ms(delay_ms);
    cmd.mutable_spec()->set_threads(1);
    h.stream->Write(cmd);
    for (v1::TargetEvent ev; h.stream->Read(&ev);) {
      if (ev.has_started()) h.pid = ev.started().pid();
      if (ev.has_ready()) {
        h.endpoint = ev.ready().endpoint();
        return h;
      }
    }
    auto st = h.stream->Finish();
    if (status) *status = st;
    h.stream.reset();
    return h;
  }

  // The usage of a window of `window`; `truth_pct`, if given, gets the CPU the scheduler
  // gave the target's tree over the same stretch (schedstat), a source the agent does not
  // read: the truth on an idle machine and on a busy one alike.
  v1::Usage measure(Hosted& h, std::chrono::milliseconds window, double* truth_pct = nullptr) {
    const auto pids = tree_pids(h.pid);
    auto tree_run_s = [&] {
      double s = 0;
      for (pid_t p : pids) s += loadlab::testing::schedstat_s(p);
      return s;
    };
    const double t0 = monotonic_seconds(), run0 = tree_run_s();
    v1::TargetCommand cmd;
    cmd.mutable_mark()->set_kind(v1::Mark::RESET);
    h.stream->Write(cmd);
    std::this_thread::sleep_for(window);
    cmd.mutable_mark()->set_kind(v1::Mark::FINAL);
    h.stream->Write(cmd);
    v1::TargetEvent ev;
    while (h.stream->Read(&ev) && !ev.has_usage()) {
    }
    if (truth_pct) *truth_pct = (tree_run_s() - run0) / (monotonic_seconds() - t0) * 100;
    return ev.usage();
  }

  // Ends the stream; returns the Exited event's output tail.
  std::string stop(Hosted& h) {
    h.stream->WritesDone();
    v1::TargetEvent ev;
    bool exited = false;
    std::string tail;
    while (h.stream->Read(&ev))
      if (ev.has_exited()) {
        exited = true;
        tail = ev.exited().output_tail();
      }
    EXPECT_TRUE(h.stream->Finish().ok());
    EXPECT_TRUE(exited);
    return tail;
  }

  std::unique_ptr<AgentServer> server;
  std::unique_ptr<v1::Agent::Stub> stub;
};

// The truth tests, once per process-control path: the agent's children are started on the
// path selected before the server starts; a path the machine lacks is skipped.
class AgentTruthTest : public AgentTest, public ::testing::WithParamInterface<ProcControlMode> {
 protected:
  void SetUp() override {
    path_.emplace(GetParam());
    if (auto why = path_->unusable(); !why.empty()) GTEST_SKIP() << why;
    AgentTest::SetUp();
  }
  void TearDown() override {
    if (server) AgentTest::TearDown();
    path_.reset();
  }
  std::optional<PathSelection> path_;
};

}  // namespace loadlab::agent::agent_fixture
