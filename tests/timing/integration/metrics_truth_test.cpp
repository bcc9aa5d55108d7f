// The metrics against what they count: loadlab-agent --metrics-listen against the kernel's own
// count of a job's CPU and memory, and loadlab run --metrics-listen against a delay-bound
// cell's known rate and latency.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <regex>
#include <set>
#include <thread>

#include "loadlab/agent/agent_service.hpp"
#include "loadlab/agent/usage_window.hpp"
#include "loadlab/metrics/exposition.hpp"
#include "loadlab/shared/limits.hpp"
#include "loadlab/v1/agent.grpc.pb.h"
#include "metrics_support.hpp"
#include "run/run_metrics.hpp"
#include "schedstat.hpp"
#include "test_support.hpp"

namespace loadlab {
namespace {

using namespace std::chrono_literals;
using namespace metrics_support;
using testing::AgentProcess;
using testing::bin;
using ::testing::HasSubstr;
using testing::http_get;
using testing::run_command;
using testing::TempDir;

TEST(AgentMetrics, ARunningJobsCpuAndMemoryAreWhatTheKernelCounts) {
  TempDir dir;
  const nlohmann::json catalog = {
      {"targets",
       {{"burn",
         {{"argv", {bin("loadlab-burn"), "--port", "{port}", "--cpu-pct", "50", "--rss-mb", "100"}},
          {"readiness", {{"type", "tcp"}}}}}}}};
  AgentProcess agent(
      "m", "127.0.0.1:0",
      {"--catalog", dir.file("catalog.json", catalog.dump()), "--metrics-listen", "127.0.0.1:0"});
  const auto at = metrics_address(agent);
  auto idle = http_get(at, "/metrics");
  ASSERT_EQ(idle.status, 200) << idle.body;
  EXPECT_THAT(idle.headers, HasSubstr("text/plain; version=0.0.4"));
  EXPECT_EQ(value_of(idle.body, "loadlab_agent_jobs_running{kind=\"target\"}"), 0);
  EXPECT_EQ(value_of(idle.body, "loadlab_agent_job_starts_total{kind=\"target\"}"), 0);
  EXPECT_THAT(idle.body, HasSubstr("loadlab_agent_build_info{version=\"" LOADLAB_VERSION "\""));

  auto stub = v1::Agent::NewStub(grpc::CreateChannel(agent.address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  auto stream = stub->HostTarget(&ctx);
  v1::TargetCommand cmd;
  cmd.mutable_spec()->set_catalog("burn");
  cmd.mutable_spec()->set_threads(1);
  ASSERT_TRUE(stream->Write(cmd));
  pid_t pid = 0;
  for (v1::TargetEvent ev; stream->Read(&ev) && !ev.has_ready();)
    if (ev.has_started()) pid = ev.started().pid();
  ASSERT_GT(pid, 0);
  std::this_thread::sleep_for(300ms);

  auto truth_s = [pid] { return loadlab::testing::schedstat_s(pid); };
  const double t0 = agent::monotonic_seconds(), run0 = truth_s();
  auto first = http_get(at, "/metrics");
  std::this_thread::sleep_for(2s);
  auto second = http_get(at, "/metrics", kOpenMetrics);
  const double truth_pct = (truth_s() - run0) / (agent::monotonic_seconds() - t0) * 100;
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  double vm_rss_kb = 0;
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) vm_rss_kb = std::stod(line.substr(6));

  const std::string target = "{kind=\"target\"}";
  auto cpu0 = value_of(first.body, "loadlab_agent_job_cpu_seconds_total" + target);
  auto cpu1 = value_of(second.body, "loadlab_agent_job_cpu_seconds_total" + target);
  ASSERT_TRUE(cpu0 && cpu1) << first.body << second.body;
  EXPECT_GT(truth_pct, 10);  // it ran (50 % of a core on an idle machine)
  EXPECT_NEAR((*cpu1 - *cpu0) / 2.0 * 100, truth_pct, 6)
      << "the scrapes 2 s apart, the kernel's over the same";
  auto rss = value_of(second.body, "loadlab_agent_job_resident_bytes" + target);
  ASSERT_TRUE(rss);
  EXPECT_GE(*rss, 100.0 * 1024 * 1024);
  EXPECT_NEAR(*rss / 1024, vm_rss_kb, vm_rss_kb * 0.05);
  EXPECT_EQ(value_of(second.body, "loadlab_agent_job_processes" + target), 1);
  EXPECT_EQ(value_of(second.body, "loadlab_agent_jobs_running" + target), 1);
  EXPECT_EQ(value_of(second.body, "loadlab_agent_job_starts_total" + target), 1);
  EXPECT_THAT(second.headers, HasSubstr("application/openmetrics-text; version=1.0.0"));
  const std::string unchecked =
      expect_promtool_accepts(dir, first.body) + " " + expect_openmetrics_parses(dir, second.body);

  stream->WritesDone();
  for (v1::TargetEvent ev; stream->Read(&ev);) {
  }
  EXPECT_TRUE(stream->Finish().ok());
  auto after = http_get(at, "/metrics").body;
  EXPECT_EQ(value_of(after, "loadlab_agent_jobs_running" + target), 0);
  EXPECT_FALSE(value_of(after, "loadlab_agent_job_cpu_seconds_total" + target)) << after;
  EXPECT_EQ(value_of(after, "loadlab_agent_job_failures_total" + target), 0);
  EXPECT_EQ(http_get(at, "/other").status, 404);
  if (unchecked != " ") GTEST_SKIP() << unchecked;
}

// The agent's token guards its metrics as it guards its calls; each refusal is counted.
// A free port on 127.0.0.1 now (the controller's endpoint is given one: it says where on
// stderr, which a test does not read line by line).
int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

// A 10 ms server at 4 connections: 400 requests/s at 10 ms each, which the run's live
// figures must say while the cell is measured.
TEST(RunMetrics, TheLiveRateAndLatencyAreTheCellsOwn) {
  TempDir dir;
  auto scenario = dir.file("s.json", R"({"name": "live", "targets": [{"name": "b", "builtin": "hello",
      "server_threads": 1}], "matrix": {"delay_ms": [10]},
      "load": {"threads": 1, "connections": 4, "duration_s": 4, "warmup_s": 0.5}})");
  const std::string at = "127.0.0.1:" + std::to_string(free_port());
  auto run = loadlab::testing::spawn_tool({bin("loadlab"), "--log-level", "warn", "run", scenario, "--quiet",
                                           "--out", (dir.path() / "out").string(), "--metrics-listen", at});
  std::optional<double> qps, latency, planned;
  std::string seen;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < deadline && run->poll_exit() == std::nullopt) {
    auto text = http_get(at, "/metrics").body;
    if (!text.empty()) seen = text;
    std::smatch m;
    static const std::regex measured(R"re(loadlab_run_live_warmup\{cell="([^"]+)"\} 0)re");
    if (std::regex_search(text, m, measured)) {
      const std::string cell = "{cell=\"" + m[1].str() + "\"}";
      qps = value_of(text, "loadlab_run_live_requests_per_second" + cell);
      latency = value_of(text, "loadlab_run_live_latency_mean_seconds" + cell);
      planned = value_of(text, "loadlab_run_cells_planned");
      if (qps && *qps > 0) break;
    }
    std::this_thread::sleep_for(200ms);
  }
  auto status = run->wait_exit(60s);
  ASSERT_TRUE(status) << run->output_tail();
  EXPECT_EQ(status->code, 0) << run->output_tail();
  ASSERT_TRUE(qps && latency) << "no measured progress was served; last scrape:\n" << seen;
  EXPECT_EQ(planned, 1);
  EXPECT_GE(*qps, 0.75 * 400) << seen;
  EXPECT_LE(*qps, 1.02 * 400) << seen;
  EXPECT_GE(*latency, 0.010) << seen;
  EXPECT_LE(*latency, 0.014) << seen;
  if (const auto why = expect_promtool_accepts(dir, seen); !why.empty()) GTEST_SKIP() << why;
}

}  // namespace
}  // namespace loadlab
