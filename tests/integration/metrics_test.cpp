// The metrics a lab scrapes (docs/agent.md and docs/operations.md, "Metrics"): the exposition
// formats, loadlab-agent --metrics-listen held against the kernel's own count of a job's CPU
// and memory, its token and listen rules, loadlab run --metrics-listen against a delay-bound
// cell's known rate and latency, and deploy/monitoring's Prometheus config and Grafana
// dashboard against the metrics the programs really serve. Debian's promtool (package
// prometheus) and python3-prometheus-client's strict OpenMetrics parser check the text.
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
#include "run/run_metrics.hpp"
#include "schedstat.hpp"
#include "test_support.hpp"

namespace loadlab {
namespace {

using namespace std::chrono_literals;
using testing::AgentProcess;
using testing::bin;
using ::testing::HasSubstr;
using testing::http_get;
using testing::run_command;
using testing::TempDir;

// The value of the sample written `series` (NAME or NAME{LABELS}, as the text has it).
std::optional<double> value_of(const std::string& text, const std::string& series) {
  const std::string head = series + " ";
  for (size_t at = 0; (at = text.find(head, at)) != std::string::npos; at += head.size())
    if (at == 0 || text[at - 1] == '\n') return std::stod(text.substr(at + head.size()));
  return std::nullopt;
}

bool have(const std::string& command) {
  return std::system(("command -v " + command + " >/dev/null").c_str()) == 0;
}

// promtool check metrics: nothing to say about the text (lint problems are printed and fail).
void expect_promtool_accepts(const TempDir& dir, const std::string& text) {
  if (!have("promtool")) {
    std::cout << "promtool is not installed (apt-get install prometheus): not checked\n";
    return;
  }
  auto file = dir.file("metrics.prom", text);
  auto r = run_command({"/bin/sh", "-c", "promtool check metrics < " + file + " 2>&1"});
  EXPECT_EQ(r.code, 0) << r.output_tail << "\n" << text;
  EXPECT_EQ(r.stdout_text, "") << text;
}

// python3-prometheus-client's OpenMetrics parser, strict: it refuses what breaks the format.
void expect_openmetrics_parses(const TempDir& dir, const std::string& text) {
  if (std::system("python3 -c 'import prometheus_client.openmetrics.parser' 2>/dev/null") != 0) {
    std::cout << "python3-prometheus-client is not installed: OpenMetrics text not parsed\n";
    return;
  }
  auto file = dir.file("metrics.om", text);
  auto r =
      run_command({"python3", "-c",
                   "import sys\n"
                   "from prometheus_client.openmetrics.parser import text_string_to_metric_families as p\n"
                   "n = sum(1 for f in p(open(sys.argv[1]).read()))\n"
                   "print(n)\n",
                   file});
  EXPECT_EQ(r.code, 0) << r.output_tail << "\n" << text;
}

const std::string kOpenMetrics = "Accept: application/openmetrics-text; version=1.0.0\r\n";

// The second line an agent started with --metrics-listen prints: where its metrics are.
std::string metrics_address(AgentProcess& agent) {
  std::string line;
  EXPECT_EQ(agent.proc->next_line(line, 10s), agent::ChildProcess::LineStatus::kLine)
      << agent.proc->output_tail();
  EXPECT_EQ(line.rfind("metrics on ", 0), 0u) << line;
  return line.size() > 11 ? line.substr(11) : "";
}

TEST(MetricsText, BothFormatsWriteOneFamilyTheirOwnWay) {
  using metrics::Type;
  std::vector<metrics::Family> f{
      {"x_jobs", Type::kCounter, "Jobs \"done\"\\ here.", "", {{{{"kind", "a\"b\\c\nd"}}, 3}}},
      {"x_rss_bytes", Type::kGauge, "Memory.", "bytes", {{{}, 1.5e9}, {{{"k", "v"}}, 0.25}}},
      {"x_build", Type::kInfo, "Build.", "", {{{{"version", "1"}}, 1}}}};
  EXPECT_EQ(metrics::render(f, metrics::Format::kOpenMetrics),
            "# TYPE x_jobs counter\n"
            "# HELP x_jobs Jobs \\\"done\\\"\\\\ here.\n"
            "x_jobs_total{kind=\"a\\\"b\\\\c\\nd\"} 3\n"
            "# TYPE x_rss_bytes gauge\n"
            "# UNIT x_rss_bytes bytes\n"
            "# HELP x_rss_bytes Memory.\n"
            "x_rss_bytes 1500000000\n"
            "x_rss_bytes{k=\"v\"} 0.25\n"
            "# TYPE x_build info\n"
            "# HELP x_build Build.\n"
            "x_build_info{version=\"1\"} 1\n"
            "# EOF\n");
  EXPECT_EQ(metrics::render(f, metrics::Format::kPrometheus),
            "# HELP x_jobs_total Jobs \"done\"\\\\ here.\n"
            "# TYPE x_jobs_total counter\n"
            "x_jobs_total{kind=\"a\\\"b\\\\c\\nd\"} 3\n"
            "# HELP x_rss_bytes Memory.\n"
            "# TYPE x_rss_bytes gauge\n"
            "x_rss_bytes 1500000000\n"
            "x_rss_bytes{k=\"v\"} 0.25\n"
            "# HELP x_build_info Build.\n"
            "# TYPE x_build_info gauge\n"
            "x_build_info{version=\"1\"} 1\n");
  EXPECT_EQ(metrics::negotiate("application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"),
            metrics::Format::kOpenMetrics);
  EXPECT_EQ(metrics::negotiate("text/plain"), metrics::Format::kPrometheus);
  EXPECT_EQ(metrics::negotiate(""), metrics::Format::kPrometheus);
}

// A target burning half a core and holding 100 MiB: the agent's job figures against the
// kernel's (schedstat for the CPU, /proc's VmRSS), both formats checked by their parsers.
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
  expect_promtool_accepts(dir, first.body);
  expect_openmetrics_parses(dir, second.body);

  stream->WritesDone();
  for (v1::TargetEvent ev; stream->Read(&ev);) {
  }
  EXPECT_TRUE(stream->Finish().ok());
  auto after = http_get(at, "/metrics").body;
  EXPECT_EQ(value_of(after, "loadlab_agent_jobs_running" + target), 0);
  EXPECT_FALSE(value_of(after, "loadlab_agent_job_cpu_seconds_total" + target)) << after;
  EXPECT_EQ(value_of(after, "loadlab_agent_job_failures_total" + target), 0);
  EXPECT_EQ(http_get(at, "/other").status, 404);
}

// The agent's token guards its metrics as it guards its calls; each refusal is counted.
TEST(AgentMetrics, AScrapeWithoutTheTokenIsRefusedAndCounted) {
  TempDir dir;
  auto token = dir.secret("token", "metrics-token-0123456789\n");
  AgentProcess agent("m", "127.0.0.1:0", {"--token-file", token, "--metrics-listen", "127.0.0.1:0"});
  const auto at = metrics_address(agent);
  EXPECT_EQ(http_get(at, "/metrics").status, 401);
  EXPECT_EQ(http_get(at, "/metrics", "Authorization: Bearer wrong-token-0123456789\r\n").status, 401);
  auto ok = http_get(at, "/metrics", "Authorization: Bearer metrics-token-0123456789\r\n");
  ASSERT_EQ(ok.status, 200);
  EXPECT_EQ(value_of(ok.body, "loadlab_agent_auth_refusals_total{endpoint=\"metrics\"}"), 2);
  EXPECT_EQ(value_of(ok.body, "loadlab_agent_auth_refusals_total{endpoint=\"grpc\"}"), 0);
}

// The listen rules are the agent's: an address the network reaches needs TLS with proven
// callers, or --insecure; the controller's the same with its own TLS flags.
TEST(AgentMetrics, ANetworkAddressNeedsTlsOrInsecureAndABadOneIsNamed) {
  auto r =
      run_command({bin("loadlab-agent"), "--listen", "127.0.0.1:0", "--metrics-listen", "0.0.0.0:0"}, 10s);
  EXPECT_EQ(r.code, 2) << r.output_tail;
  EXPECT_THAT(r.output_tail, HasSubstr("--metrics-listen: 0.0.0.0:0 can be reached from the network"));
  r = run_command({bin("loadlab-agent"), "--listen", "127.0.0.1:0", "--metrics-listen", "nowhere"}, 10s);
  EXPECT_EQ(r.code, 2) << r.output_tail;
  EXPECT_THAT(r.output_tail, HasSubstr("--metrics-listen: must be HOST:PORT, got \"nowhere\""));
  TempDir dir;
  auto scenario = dir.file("s.json", R"({"name": "m", "targets": [{"name": "b", "builtin": "hello"}],
      "load": {"duration_s": 0.2}})");
  r = run_command({bin("loadlab"), "run", scenario, "--out", (dir.path() / "out").string(),
                   "--metrics-listen", "0.0.0.0:0"},
                  30s);
  EXPECT_EQ(r.code, 2) << r.output_tail;
  EXPECT_THAT(r.output_tail, HasSubstr("--metrics-listen: 0.0.0.0:0 can be reached from the network"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "out")) << "nothing was run";
}

// A connection to a metrics endpoint held open by the test, read with a timeout: what a caller
// holding one of its slots is.
class HeldConnection {
 public:
  explicit HeldConnection(const std::string& endpoint) {
    auto ep = parse_endpoint(endpoint);
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    timeval tv{3, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(ep ? ep->port : 0);
    inet_pton(AF_INET, ep ? ep->host.c_str() : "127.0.0.1", &a.sin_addr);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~HeldConnection() { close(fd_); }
  HeldConnection(const HeldConnection&) = delete;
  HeldConnection& operator=(const HeldConnection&) = delete;
  bool connected() const { return connected_; }

  // Sends GET /metrics (keep-alive) with `headers` and reads the response: its status, 0 when
  // none came (the connection was closed, or nothing within 3 s).
  int scrape(const std::string& headers = "") {
    const std::string req = "GET /metrics HTTP/1.1\r\nHost: test\r\n" + headers + "\r\n";
    if (send(fd_, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) return 0;
    std::string in;
    size_t end = std::string::npos;
    char buf[4096];
    for (ssize_t n;
         (end = in.find("\r\n\r\n")) == std::string::npos && (n = recv(fd_, buf, sizeof buf, 0)) > 0;)
      in.append(buf, static_cast<size_t>(n));
    if (end == std::string::npos || in.rfind("HTTP/1.1 ", 0) != 0) return 0;
    static const std::regex length(R"(\r\n[Cc]ontent-[Ll]ength: *(\d+))");
    std::smatch m;
    const std::string head = in.substr(0, end);
    const size_t body = std::regex_search(head, m, length) ? std::stoul(m[1]) : 0;
    for (ssize_t n; in.size() < end + 4 + body && (n = recv(fd_, buf, sizeof buf, 0)) > 0;)
      in.append(buf, static_cast<size_t>(n));
    return std::atoi(in.c_str() + 9);
  }
  // Whether the server has closed the connection: the next read is the end of the stream (not
  // a timeout after 3 s).
  bool closed_by_server() {
    char c;
    return recv(fd_, &c, 1, 0) == 0;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

const std::string kBearer = "Authorization: Bearer metrics-token-0123456789\r\n";

// A refused scrape costs its caller the connection: whoever lacks the token cannot keep a slot
// by asking again and again. A scraper with the token keeps its connection between scrapes.
TEST(AgentMetrics, A401ClosesItsConnectionAndAnAuthorizedScrapeKeepsIt) {
  TempDir dir;
  auto token = dir.secret("token", "metrics-token-0123456789\n");
  AgentProcess agent("m", "127.0.0.1:0", {"--token-file", token, "--metrics-listen", "127.0.0.1:0"});
  const auto at = metrics_address(agent);
  HeldConnection refused(at);
  ASSERT_TRUE(refused.connected());
  EXPECT_EQ(refused.scrape(), 401);
  EXPECT_TRUE(refused.closed_by_server()) << "the connection that got a 401 is still open";
  HeldConnection scraper(at);
  EXPECT_EQ(scraper.scrape(kBearer), 200);
  EXPECT_EQ(scraper.scrape(kBearer), 200) << "an authorized scraper's connection was not kept";
}

// Whoever reaches the port cannot hold every slot: with a full cap of connections that send
// nothing, and as many again that each took a 401, a scrape with the token is answered at once.
TEST(AgentMetrics, IdleAndRefusedConnectionsDoNotShutOutAScrapeWithTheToken) {
  TempDir dir;
  auto token = dir.secret("token", "metrics-token-0123456789\n");
  AgentProcess agent("m", "127.0.0.1:0", {"--token-file", token, "--metrics-listen", "127.0.0.1:0"});
  const auto at = metrics_address(agent);
  std::vector<std::unique_ptr<HeldConnection>> idle, refused;
  for (int i = 0; i < limits::kMetricsMaxConnections; ++i) {
    idle.push_back(std::make_unique<HeldConnection>(at));
    ASSERT_TRUE(idle.back()->connected());
  }
  std::map<int, int> statuses;  // of the refused connections' scrapes, by status (0: none)
  for (int i = 0; i < limits::kMetricsMaxConnections; ++i) {
    refused.push_back(std::make_unique<HeldConnection>(at));
    ++statuses[refused.back()->scrape()];
  }
  EXPECT_EQ(statuses, (std::map<int, int>{{401, limits::kMetricsMaxConnections}}));
  const auto t0 = std::chrono::steady_clock::now();
  HeldConnection scraper(at);
  EXPECT_EQ(scraper.scrape(kBearer), 200);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
}

// Served to a network without proven callers (--insecure), the metrics endpoint is warned of at
// start as the agent's --listen is; the controller's (--metrics-insecure) too.
TEST(AgentMetrics, AMetricsAddressServedInsecurelyIsWarnedOf) {
  AgentProcess agent("m", "127.0.0.1:0", {"--metrics-listen", "0.0.0.0:0", "--insecure"});
  metrics_address(agent);
  kill(agent.proc->pid(), SIGTERM);
  agent.proc->wait_exit(5s);
  agent.proc->wait_output_end(2s);
  EXPECT_THAT(agent.proc->output_tail(40),
              HasSubstr("--insecure: --metrics-listen 0.0.0.0:0 is reachable from the network without TLS; "
                        "anyone who can reach it can read the metrics"));
  TempDir dir;
  auto scenario = dir.file("s.json", R"({"name": "m", "targets": [{"name": "b", "builtin": "hello"}],
      "matrix": {"delay_ms": [0]}, "load": {"duration_s": 0.2}})");
  auto r = run_command({bin("loadlab"), "--log-level", "warn", "run", scenario, "--quiet", "--out",
                        (dir.path() / "out").string(), "--metrics-listen", "0.0.0.0:0", "--metrics-insecure"},
                       60s);
  EXPECT_EQ(r.code, 0) << r.output_tail;
  EXPECT_THAT(r.output_tail, HasSubstr("--metrics-insecure: --metrics-listen 0.0.0.0:"));
  EXPECT_THAT(r.output_tail, HasSubstr("is reachable from the network without TLS"));
}

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
  expect_promtool_accepts(dir, seen);
}

// The names a program serves: every family's samples (suffixed by type).
std::set<std::string> served_names(const std::vector<metrics::Family>& families) {
  std::set<std::string> out;
  const auto text = metrics::render(families, metrics::Format::kPrometheus);
  static const std::regex type(R"(# TYPE (\S+) )");
  for (std::sregex_iterator it(text.begin(), text.end(), type), end; it != end; ++it) out.insert((*it)[1]);
  return out;
}

// deploy/monitoring: promtool checks the scrape config, and every metric the dashboard's
// queries name is one the agent or the controller serves.
TEST(Monitoring, TheConfigChecksAndTheDashboardAsksForMetricsThatExist) {
  const std::string folder = std::string(LOADLAB_SOURCE_DIR) + "/deploy/monitoring/";
  if (have("promtool")) {
    auto r = run_command(
        {"/bin/sh", "-c", "promtool check config --syntax-only " + folder + "prometheus.yml 2>&1"});
    EXPECT_EQ(r.code, 0) << r.output_tail;
  } else {
    std::cout << "promtool is not installed (apt-get install prometheus): the config is not checked\n";
  }
  agent::AgentOptions options;
  options.bin_dir = LOADLAB_BIN_DIR;
  agent::AgentService service(options);
  controller::RunMetrics run;
  run.run_started("s", 1);
  run.cell_started("b/d10", 0, 1);
  run.live({1, 10, 0, 100, false, 10});
  auto names = served_names(service.metrics());
  names.merge(served_names(run.families()));
  auto dashboard = read_json_file(folder + "grafana-dashboard.json");
  size_t queries = 0;
  static const std::regex metric(R"(\bloadlab_[a-z_]+)");
  for (auto& panel : dashboard.at("panels"))
    for (auto& t : panel.value("targets", nlohmann::json::array())) {
      const std::string expr = t.at("expr");
      ++queries;
      for (std::sregex_iterator it(expr.begin(), expr.end(), metric), end; it != end; ++it)
        EXPECT_TRUE(names.count(it->str())) << it->str() << " in " << expr << " is not a metric served";
    }
  EXPECT_GE(queries, 6u);
}

}  // namespace
}  // namespace loadlab
