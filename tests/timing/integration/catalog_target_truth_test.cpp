// A catalog target that is not ours, measured: a Python server (standard library only) hosted,
// loaded and measured through the agent's own calls, against what the server itself knows: how
// many requests it served, its delay, its VmRSS.
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

using testing::tree_pids;

// VmRSS of `pid` in kB, from /proc/PID/status; 0 if it is gone.
uint64_t vm_rss_kb(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6));
  return 0;
}

using TargetStream = grpc::ClientReaderWriter<v1::TargetCommand, v1::TargetEvent>;
using LoadStream = grpc::ClientReaderWriter<v1::LoadCommand, v1::LoadEvent>;

void send_mark(TargetStream& target, v1::Mark::Kind kind) {
  v1::TargetCommand cmd;
  cmd.mutable_mark()->set_kind(kind);
  ASSERT_TRUE(target.Write(cmd));
}

// One cell by hand, as the controller runs it (docs/architecture.md): HostTarget, RunLoad,
// the marks at MeasureStart and Result, then the end of the target's stream.
TEST(PythonCatalogTarget, ItsOwnCountDelayAndRssAgreeWithTheMeasurement) {
  const uint32_t kDelayMs = 20, kThreads = 4, kPerThread = 100;
  agent::AgentOptions options;
  options.name = "py";
  options.bin_dir = LOADLAB_BIN_DIR;
  options.catalog = agent::Catalog::load_file(kSource + "/tests/data/python_target/catalog.json");
  agent::AgentServer server(options);
  auto stub = v1::Agent::NewStub(
      grpc::CreateChannel(server.start("127.0.0.1:0"), grpc::InsecureChannelCredentials()));

  grpc::ClientContext target_ctx;
  auto target = stub->HostTarget(&target_ctx);
  v1::TargetCommand spec;
  spec.mutable_spec()->set_catalog("python-delay");
  spec.mutable_spec()->set_delay_ms(kDelayMs);
  ASSERT_TRUE(target->Write(spec));
  pid_t pid = 0;
  std::string endpoint;
  for (v1::TargetEvent ev; endpoint.empty() && target->Read(&ev);) {
    if (ev.has_started()) pid = ev.started().pid();
    if (ev.has_ready()) endpoint = ev.ready().endpoint();
  }
  ASSERT_FALSE(endpoint.empty()) << target->Finish().error_message();
  ASSERT_GT(pid, 0);
  EXPECT_EQ(http_get_body(endpoint, "/__count"), "0");  // the readiness probes are not counted

  grpc::ClientContext load_ctx;
  auto load = stub->RunLoad(&load_ctx);
  v1::LoadCommand load_spec;
  auto* ls = load_spec.mutable_spec();
  ls->set_endpoint(endpoint);
  ls->set_path("/test/fun");
  ls->set_threads(kThreads);
  ls->set_connections(kThreads);
  ls->set_requests_per_thread(kPerThread);
  ls->set_warmup_s(0.5);
  ls->set_keep_alive(true);
  ASSERT_TRUE(load->Write(load_spec));
  load->WritesDone();
  v1::LoadResult result;
  std::vector<uint64_t> rss_truth;  // the server's VmRSS, read at each event of the window
  bool measuring = false;
  for (v1::LoadEvent ev; load->Read(&ev);) {
    if (ev.has_measure_start()) {
      send_mark(*target, v1::Mark::RESET);
      measuring = true;
    }
    if (measuring && (ev.has_progress() || ev.has_measure_start() || ev.has_result()))
      rss_truth.push_back(vm_rss_kb(pid));
    if (ev.has_result()) {
      result = ev.result();
      send_mark(*target, v1::Mark::FINAL);
      measuring = false;
    }
  }
  ASSERT_TRUE(load->Finish().ok());
  v1::Usage usage;
  for (v1::TargetEvent ev; target->Read(&ev);)
    if (ev.has_usage()) {
      usage = ev.usage();
      break;
    }
  ASSERT_GT(usage.window_s(), 0);

  // Every request the client counted, measured or warm-up, is one the server served: no
  // more, no fewer.
  EXPECT_EQ(result.requests(), kThreads * kPerThread);
  EXPECT_EQ(result.errors(), 0u);
  EXPECT_EQ(result.status().at(200), kThreads * kPerThread);
  EXPECT_GT(result.warmup_requests(), 0u);
  EXPECT_EQ(http_get_body(endpoint, "/__count"),
            std::to_string(result.requests() + result.warmup_requests()));
  // No response comes before the server's delay; a closed loop of 4 connections on a 20 ms
  // server does at most 4 / 20 ms = 200 requests/s, and close to it while it is delay-bound.
  EXPECT_GE(result.latency().min_us(), kDelayMs * 1000.0);
  EXPECT_GE(result.latency().p50_us(), kDelayMs * 1000.0);
  const double bound = kThreads * 1000.0 / kDelayMs;
  EXPECT_LE(result.qps(), bound * 1.02);
  EXPECT_GE(result.qps(), bound * 0.5);  // half of it: a serializing server gives a quarter
  // The server's figures: one process, some CPU, and the RSS its own /proc says.
  EXPECT_GT(usage.cpu_pct(), 0);
  EXPECT_EQ(usage.processes(), 1u);
  ASSERT_GE(rss_truth.size(), 2u);
  auto [lo, hi] = std::minmax_element(rss_truth.begin(), rss_truth.end());
  EXPECT_GT(*lo, 1024u);          // a Python interpreter holds more than a MiB
  EXPECT_LT(*hi, 1024u * 1024u);  // and less than a GiB
  // Both read VmRSS, at moments a little apart (the agent samples every 100 ms).
  EXPECT_GE(usage.rss_kb_mean(), *lo * 0.9);
  EXPECT_LE(usage.rss_kb_mean(), *hi * 1.1);
  EXPECT_GE(usage.rss_kb_peak(), *lo * 0.9);
  EXPECT_LE(usage.rss_kb_peak(), *hi * 1.1);
  EXPECT_LE(usage.rss_kb_mean(), usage.rss_kb_peak());

  // The end of the stream ends the server and its tree.
  auto pids = tree_pids(pid);
  target->WritesDone();
  bool exited = false;
  for (v1::TargetEvent ev; target->Read(&ev);) exited = exited || ev.has_exited();
  EXPECT_TRUE(target->Finish().ok());
  EXPECT_TRUE(exited);
  auto deadline = std::chrono::steady_clock::now() + 5s;
  for (pid_t p : pids) {
    while (process_running(p) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(20ms);
    EXPECT_FALSE(process_running(p)) << "pid " << p << " outlived its stream";
  }
  server.shutdown(0);
}

}  // namespace
}  // namespace loadlab
