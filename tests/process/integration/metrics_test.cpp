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
#include "metrics_support.hpp"
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
using namespace metrics_support;

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
  // Without promtool the dashboard is still checked below; the skip at the end says the config
  // was not (a failure before it stays a failure).
  const bool promtool = have("promtool");
  if (promtool) {
    auto r = run_command(
        {"/bin/sh", "-c", "promtool check config --syntax-only " + folder + "prometheus.yml 2>&1"});
    EXPECT_EQ(r.code, 0) << r.output_tail;
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
  if (!promtool)
    GTEST_SKIP() << "promtool is not installed (apt-get install prometheus, `make deps`): " << folder
                 << "prometheus.yml was not checked";
}

}  // namespace
}  // namespace loadlab
