// LoadRunner against an in-test Beast server on 127.0.0.1:0, and the loadlab-load
// binary's exit codes and output. Every run is bounded by run_bounded(). Its figures in real
// time (the window, a shutdown, a rate held): timing/load_generator/load_runner_window_test.cpp.
#include "load_runner.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <array>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdio>
#include <future>
#include <string>
#include <vector>

#include "input_error_of.hpp"
#include "load_runner_support.hpp"
#include "load_test_support.hpp"
#include "loadlab/load/load_options.hpp"
#include "loadlab/proto/histogram_proto.hpp"
#include "loadlab/proto/json.hpp"
#include "request_log.hpp"
#include "test_server.hpp"

namespace loadlab::load {
namespace {

using loadlab::load::testing::Exec;
using loadlab::load::testing::options_for;
using loadlab::load::testing::run_binary;
using loadlab::load::testing::run_bounded;
using loadlab::load::testing::TestServer;
using loadlab::testing::input_error_of;

using namespace std::chrono_literals;

uint16_t closed_port() {
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::acceptor acceptor(ioc, {boost::asio::ip::make_address("127.0.0.1"), 0});
  return acceptor.local_endpoint().port();  // closed when the acceptor goes
}

TEST(LoadRunnerTest, RequestsPerThreadIsExact) {
  TestServer server;
  LoadOptions o = options_for(server);
  o.threads = 2;
  o.connections = 4;
  o.requests_per_thread = 200;
  LoadResult r = run_bounded(o);
  EXPECT_EQ(r.requests, 400);
  EXPECT_EQ(r.responses, 400);
  EXPECT_EQ(r.errors, 0);
  EXPECT_EQ(server.requests(), 400);
  EXPECT_EQ(server.accepts(), 4);  // keep-alive: one connection each
  EXPECT_EQ(r.histogram.count(), 400);
  ASSERT_EQ(r.status.count(200), 1u);
  EXPECT_EQ(r.status.at(200), 400);
  EXPECT_EQ(r.bytes_read, 400 * static_cast<int64_t>(r.bytes_read / 400));
  EXPECT_GT(r.bytes_read, 400 * 40);  // status line + headers + "hello"
  EXPECT_EQ(r.threads, 2);
  EXPECT_EQ(r.connections, 4);
  EXPECT_GT(r.duration_s, 0);
  EXPECT_NEAR(r.qps, r.requests / r.duration_s, 1e-6);
  EXPECT_TRUE(r.error.empty());
}

TEST(LoadRunnerTest, TotalIsSplitOverThreadsExactly) {
  TestServer server;
  LoadOptions o = options_for(server);
  o.threads = 2;
  o.total_requests = 101;
  LoadResult r = run_bounded(o);
  EXPECT_EQ(r.requests, 101);
  EXPECT_EQ(server.requests(), 101);
}

TEST(LoadRunnerTest, LatencyReflectsServerDelay) {
  TestServer server(10ms);
  LoadOptions o = options_for(server);
  o.threads = 1;
  o.connections = 2;
  o.requests_per_thread = 60;
  LoadResult r = run_bounded(o);
  ASSERT_EQ(r.requests, 60);
  int64_t p50 = r.histogram.value_at_percentile(50);
  EXPECT_GE(p50, 10000);
  EXPECT_LE(p50, 11500);
  EXPECT_GE(r.histogram.min(), 10000);
}

TEST(LoadRunnerTest, WarmupRequestsAreExcluded) {
  TestServer server;
  LoadOptions o = options_for(server);
  o.threads = 2;
  o.connections = 2;
  o.requests_per_thread = 100;
  o.warmup_s = 0.3;
  int measure_starts = 0;
  RunCallbacks callbacks;
  callbacks.on_measure_start = [&] { ++measure_starts; };
  LoadResult r = run_bounded(o, 20s, callbacks);
  EXPECT_EQ(r.requests, 200);
  EXPECT_EQ(r.histogram.count(), 200);
  EXPECT_GT(r.warmup_requests, 0);
  EXPECT_GT(server.requests(), r.requests);
  EXPECT_GE(server.requests(), r.requests + r.warmup_requests);
  EXPECT_EQ(measure_starts, 1);
}

TEST(LoadRunnerTest, UnreachableTargetEndsWithError) {
  LoadOptions o;
  uint16_t port = closed_port();
  o.url = "http://127.0.0.1:" + std::to_string(port) + "/";
  o.threads = 2;
  o.connections = 4;
  o.duration_s = 30;
  auto start = std::chrono::steady_clock::now();
  LoadResult r = run_bounded(o, 10s);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_EQ(r.error.rfind("cannot connect to 127.0.0.1:" + std::to_string(port) + ": ", 0), 0u) << r.error;
  EXPECT_EQ(r.responses, 0);
}

TEST(LoadRunnerTest, UnreachableWithRequestBudgetEnds) {
  LoadOptions o;
  const uint16_t port = closed_port();
  o.url = "http://127.0.0.1:" + std::to_string(port) + "/";
  o.requests_per_thread = 1000000;
  LoadResult r = run_bounded(o, 10s);
  EXPECT_EQ(r.error.rfind("cannot connect to 127.0.0.1:" + std::to_string(port) + ": ", 0), 0u) << r.error;
  EXPECT_EQ(r.responses, 0);
}

TEST(LoadRunnerTest, OpenLoopUnreachableTargetEndsAtOnce) {
  // Connections connect before their first slot, so a slow rate does not delay the verdict.
  LoadOptions o;
  const uint16_t port = closed_port();
  o.url = "http://127.0.0.1:" + std::to_string(port) + "/";
  o.connections = 100;
  o.rate = 1;
  o.duration_s = 30;
  auto start = std::chrono::steady_clock::now();
  LoadResult r = run_bounded(o, 10s);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_EQ(r.error.rfind("cannot connect to 127.0.0.1:" + std::to_string(port) + ": ", 0), 0u) << r.error;
  EXPECT_EQ(r.responses, 0);
}

TEST(LoadRunnerTest, SlowResponsesTimeOutAndReconnect) {
  TestServer server(400ms);
  LoadOptions o = options_for(server);
  o.connections = 2;
  o.timeout_ms = 50;
  o.duration_s = 0.5;
  LoadResult r = run_bounded(o);
  EXPECT_GT(r.errors_by_kind[static_cast<int>(ErrorKind::kTimeout)], 2);
  EXPECT_EQ(r.responses, 0);
  EXPECT_EQ(r.errors, r.requests);
  EXPECT_GT(server.accepts(), 4);  // a timed-out connection is reopened
  EXPECT_TRUE(r.error.empty());
}

TEST(LoadRunnerTest, ErrorStatusesAreCountedAsErrors) {
  TestServer server;
  LoadOptions o = options_for(server, "/missing");
  o.requests_per_thread = 20;
  LoadResult r = run_bounded(o);
  EXPECT_EQ(r.requests, 20);
  EXPECT_EQ(r.responses, 20);
  EXPECT_EQ(r.errors, 20);
  EXPECT_EQ(r.errors_by_kind[static_cast<int>(ErrorKind::kStatus)], 20);
  EXPECT_EQ(r.status.at(404), 20);
}

TEST(LoadRunnerTest, AnInterimResponseIsNotTheAnswerToTheRequest) {
  // 103 Early Hints (or 100 Continue) comes before the final response (RFC 9110 §15.2):
  // taken as the answer, the final 200 would then answer the next request, and every
  // latency after it would be one response off.
  TestServer server;
  LoadOptions o = options_for(server, "/hints");
  o.requests_per_thread = 50;
  LoadResult r = run_bounded(o);
  EXPECT_EQ(r.requests, 50);
  EXPECT_EQ(r.errors, 0);
  EXPECT_EQ(server.requests(), 50);
  ASSERT_EQ(r.status.count(200), 1u);
  EXPECT_EQ(r.status.at(200), 50);
  EXPECT_EQ(r.status.count(103), 0u);
}

TEST(LoadRunnerTest, NoKeepAliveOpensOneConnectionPerRequest) {
  TestServer server;
  LoadOptions o = options_for(server);
  o.connections = 2;
  o.requests_per_thread = 30;
  o.keep_alive = false;
  LoadResult r = run_bounded(o);
  EXPECT_EQ(r.requests, 30);
  EXPECT_EQ(r.errors, 0);
  EXPECT_EQ(server.accepts(), 30);
}

// The slowest rate the flags allow: one slot at the start, the next 1000 s later. The
// window still ends on time, and a shutdown still ends a run whose budget would take hours.
TEST(LoadRunnerTest, SlowestRateKeepsTheDeadlineAndTheShutdown) {
  TestServer server;
  LoadOptions o = options_for(server);
  o.rate = 0.001;
  o.duration_s = 0.5;
  auto start = std::chrono::steady_clock::now();
  LoadResult r = run_bounded(o, 10s);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  EXPECT_EQ(r.requests, 1);
  EXPECT_TRUE(r.rate_held);

  o.duration_s.reset();
  o.requests_per_thread = 5;  // 4000 s of schedule
  ASSERT_EQ(input_error_of([&] { complete_and_validate(o); }), "");
  LoadRunner runner(o);
  const int64_t before = server.requests();
  auto future = std::async(std::launch::async, [&] { return runner.run(); });
  // The shutdown comes once the run is waiting for its second slot: its first request served.
  for (auto deadline = std::chrono::steady_clock::now() + 10s;
       server.requests() == before && std::chrono::steady_clock::now() < deadline;)
    std::this_thread::sleep_for(5ms);
  EXPECT_GT(server.requests(), before) << "the run sent no request in 10 s";
  runner.initiate_shutdown();
  ASSERT_EQ(future.wait_for(5s), std::future_status::ready);
  EXPECT_TRUE(future.get().interrupted);
}

TEST(LoadRunnerTest, ProgressIsReported) {
  TestServer server;
  LoadOptions o = options_for(server);
  o.duration_s = 0.6;
  o.warmup_s = 0.3;
  std::vector<Progress> seen;
  RunCallbacks callbacks;
  callbacks.on_progress = [&](const Progress& p) { seen.push_back(p); };
  ASSERT_EQ(input_error_of([&] { complete_and_validate(o); }), "");
  LoadRunner runner(o, callbacks);
  runner.progress_interval = 100ms;
  LoadResult r = runner.run();
  ASSERT_GE(seen.size(), 5u);
  EXPECT_TRUE(seen.front().warmup);
  EXPECT_FALSE(seen.back().warmup);
  EXPECT_GT(seen.front().requests, 0);
  EXPECT_GT(seen.back().qps, 0);
  EXPECT_LE(seen.back().requests, r.requests);
}

TEST(LoadRunnerTest, KeepAliveConnectsAreTimedOncePerConnection) {
  TestServer server;
  LoadOptions o = options_for(server);
  o.connections = 3;
  o.requests_per_thread = 30;
  LoadResult r = run_bounded(o);
  EXPECT_EQ(r.connects, 3);
  EXPECT_EQ(r.connect_histogram.count(), 3);
  // Closed loop: nothing to correct, both histograms are the same.
  EXPECT_EQ(r.histogram_uncorrected.count(), 30);
  EXPECT_EQ(r.histogram_uncorrected.value_at_percentile(99), r.histogram.value_at_percentile(99));
}

TEST(LoadRunnerTest, CsvHasOneRowPerMeasuredRequest) {
  TestServer server;
  LoadOptions o = options_for(server);
  o.threads = 2;
  o.connections = 4;
  o.rate = 2000;
  o.duration_s = 0.5;
  o.csv_requests = ::testing::TempDir() + "/load_requests.csv";
  LoadResult r = run_bounded(o);
  ASSERT_EQ(r.csv_error, "");
  std::FILE* f = std::fopen(o.csv_requests.c_str(), "r");
  ASSERT_NE(f, nullptr);
  char line[256];
  ASSERT_NE(std::fgets(line, sizeof line, f), nullptr);
  EXPECT_EQ(std::string(line), kRequestCsvHeader);
  int64_t rows = 0, last_start = -1, bytes = 0, first_rows = 0;
  long long iteration, start, latency, connect, tls, first_byte, status, size, reused, resumed;
  while (std::fscanf(f, "http/1.1,,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld\n", &iteration, &start,
                     &latency, &connect, &tls, &first_byte, &size, &status, &reused, &resumed) == 10) {
    EXPECT_EQ(iteration, rows);
    EXPECT_EQ(tls, 0);
    EXPECT_EQ(resumed, 0);
    EXPECT_LE(first_byte, latency);
    // Open loop with keep-alive: connections are made before the first slot; the first
    // request of each still carries its connect, the others none.
    if (reused) EXPECT_EQ(connect, 0);
    first_rows += reused == 0;
    ++rows;
    EXPECT_GE(start, last_start);
    EXPECT_LT(start, 500000);
    EXPECT_EQ(start % 500, 0) << "off the schedule";
    EXPECT_EQ(status, 200);
    last_start = start;
    bytes += size;
  }
  std::fclose(f);
  EXPECT_EQ(rows, r.requests);
  EXPECT_EQ(first_rows, 4);  // one per connection
  EXPECT_EQ(bytes, r.bytes_read);
  // Open loop: rows start on the schedule (above), 0.5 ms apart overall, through the window. A
  // generator that fell behind on a busy machine may lose the last few slots when the window
  // closes; one that stopped early would end far sooner than the window's second half.
  EXPECT_GE(last_start, 250000);
}

// --- the binary ---

TEST(LoadBinaryTest, BadFlagsExitTwoWithOneLineNamingTheFlag) {
  Exec e = run_binary("http://127.0.0.1:1/ -t 0 2>&1");
  EXPECT_EQ(e.exit_code, 2);
  EXPECT_NE(e.out.find("--threads: must be a number in 1..1024, got 0"), std::string::npos) << e.out;
  EXPECT_EQ(std::count(e.out.begin(), e.out.end(), '\n'), 1) << e.out;
  // Beyond what the flag's type holds: the same message, not a failed conversion.
  e = run_binary("http://127.0.0.1:1/ -t 1e309 2>&1");
  EXPECT_EQ(e.exit_code, 2);
  EXPECT_NE(e.out.find("--threads: must be a number in 1..1024, got 1e309"), std::string::npos) << e.out;
  e = run_binary("http://127.0.0.1:1/ -c 99999999999 2>&1");
  EXPECT_NE(e.out.find("--connections: must be a number in 1..1000000"), std::string::npos) << e.out;
  EXPECT_EQ(run_binary("http://127.0.0.1:1/ --nope 2>/dev/null").exit_code, 2);
  EXPECT_EQ(run_binary("ftp://127.0.0.1:1/ 2>/dev/null").exit_code, 2);
}

TEST(LoadBinaryTest, UnreachableTargetExitsOne) {
  std::string port = std::to_string(closed_port());
  Exec e = run_binary("http://127.0.0.1:" + port + "/ -d 30 2>&1");
  EXPECT_EQ(e.exit_code, 1);
  EXPECT_NE(e.out.find("cannot connect to 127.0.0.1:" + port + ": "), std::string::npos) << e.out;
}

TEST(LoadBinaryTest, JsonPrintsOneObject) {
  TestServer server;
  Exec e = run_binary("http://127.0.0.1:" + std::to_string(server.port()) +
                      "/ -n 50 -t 2 -c 2 --json 2>/dev/null");
  ASSERT_EQ(e.exit_code, 0);
  ASSERT_EQ(e.out.find('\n'), e.out.size() - 1) << e.out;  // one line
  v1::LoadResult r;  // the protocol's message, read strictly: every field is one of it
  ASSERT_NO_THROW(proto::from_json(e.out, &r)) << e.out;
  EXPECT_EQ(r.requests(), 100u);
  EXPECT_EQ(r.responses(), 100u);
  EXPECT_EQ(r.status().at(200), 100u);
  EXPECT_TRUE(r.error_kinds().empty());
  EXPECT_GT(r.latency().p50_us(), 0);
  EXPECT_LE(r.latency().p50_us(), r.latency().p99_us());
  EXPECT_LE(r.latency().p99_us(), r.latency().max_us());
  Histogram h;
  ASSERT_NO_THROW(proto::from_proto(r.histogram(), &h));
  EXPECT_EQ(h.count(), 100);
  ASSERT_NO_THROW(proto::from_proto(r.histogram_uncorrected(), &h));
  EXPECT_EQ(h.count(), 100);
  EXPECT_GT(r.connect().p50_us(), 0);
  EXPECT_EQ(r.connects(), 2u);
  EXPECT_EQ(r.rate(), 0);
  EXPECT_FALSE(r.latency_corrected());
  // Defaults are printed, not left out: a reader sees every figure.
  EXPECT_NE(e.out.find("\"errors\":\"0\""), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("\"interrupted\":false"), std::string::npos) << e.out;
}

TEST(LoadBinaryTest, RateMakesLatencyCorrected) {
  TestServer server;
  Exec e = run_binary("http://127.0.0.1:" + std::to_string(server.port()) +
                      "/ --rate 500 -d 0.4 -c 2 --json 2>/dev/null");
  ASSERT_EQ(e.exit_code, 0);
  v1::LoadResult r;
  ASSERT_NO_THROW(proto::from_json(e.out, &r)) << e.out;
  EXPECT_EQ(r.rate(), 500.0);
  EXPECT_TRUE(r.latency_corrected());
  EXPECT_NEAR(r.qps(), 500, 10);
  EXPECT_FALSE(r.rate_not_held());
}

TEST(LoadBinaryTest, UnwritableCsvExitsTwoBeforeRunning) {
  Exec e = run_binary("http://127.0.0.1:1/ --csv-requests /nonexistent-dir/r.csv 2>&1");
  EXPECT_EQ(e.exit_code, 2);
  EXPECT_NE(e.out.find("--csv-requests"), std::string::npos) << e.out;
}

TEST(LoadBinaryTest, JsonEventsStreamProgressMeasureStartAndResult) {
  TestServer server;
  Exec e = run_binary("http://127.0.0.1:" + std::to_string(server.port()) +
                      "/ -d 0.8 --warmup 0.6 --json-events 2>/dev/null");
  ASSERT_EQ(e.exit_code, 0);
  std::vector<v1::LoadEvent> events;
  size_t pos = 0;
  while (pos < e.out.size()) {
    size_t nl = e.out.find('\n', pos);
    v1::LoadEvent ev;
    ASSERT_NO_THROW(proto::from_json(e.out.substr(pos, nl - pos), &ev)) << e.out.substr(pos, nl - pos);
    events.push_back(ev);
    pos = nl + 1;
  }
  ASSERT_GE(events.size(), 3u);
  ASSERT_TRUE(events.front().has_progress());
  EXPECT_TRUE(events.front().progress().warmup());
  ASSERT_TRUE(events.back().has_result());
  EXPECT_GT(events.back().result().requests(), 0u);
  int measure_starts = 0;
  for (const auto& ev : events) measure_starts += ev.has_measure_start();
  EXPECT_EQ(measure_starts, 1);
}

TEST(LoadBinaryTest, RateNotHeldIsPrintedAndInTheJson) {
  TestServer server(2ms);
  Exec e = run_binary("http://127.0.0.1:" + std::to_string(server.port()) +
                      "/ -c 1 -d 0.5 --rate 2000 --json 2>&1");
  ASSERT_EQ(e.exit_code, 0) << e.out;
  EXPECT_NE(e.out.find("loadlab-load: rate not held: achieved "), std::string::npos) << e.out;
  auto brace = e.out.find('{');
  ASSERT_NE(brace, std::string::npos) << e.out;
  v1::LoadResult r;
  ASSERT_NO_THROW(proto::from_json(e.out.substr(brace, e.out.find('\n', brace) - brace), &r)) << e.out;
  EXPECT_TRUE(r.rate_not_held());
  EXPECT_LT(r.achieved_rate(), 1000);
}

TEST(LoadBinaryTest, SigintPrintsTheResult) {
  TestServer server;
  // `timeout` wraps the binary; the signal goes to the binary under it.
  // The signal is sent once the server has answered requests, however slow the start.
  std::string pid_file = ::testing::TempDir() + "/sigint-load.pid";
  std::remove(pid_file.c_str());
  auto exec = std::async(std::launch::async, [&] {
    return run_binary("http://127.0.0.1:" + std::to_string(server.port()) +
                      "/ -d 30 --json 2>/dev/null & echo $! > " + pid_file + "; wait $!");
  });
  auto deadline = std::chrono::steady_clock::now() + 15s;
  while (server.requests() < 10 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  pid_t pid = 0;
  if (std::FILE* f = std::fopen(pid_file.c_str(), "r")) {
    if (std::fscanf(f, "%d", &pid) != 1) pid = 0;
    std::fclose(f);
  }
  ASSERT_GT(pid, 0);
  // To loadlab-load itself, the child of `timeout`: `timeout` would forward a SIGINT to it
  // and to its process group, and a second SIGINT ends loadlab-load at once (by design).
  pid_t load_pid = 0;
  if (std::FILE* f = std::fopen(
          ("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children").c_str(), "r")) {
    if (std::fscanf(f, "%d", &load_pid) != 1) load_pid = 0;
    std::fclose(f);
  }
  ASSERT_GT(load_pid, 0);
  ::kill(load_pid, SIGINT);
  Exec e = exec.get();
  ASSERT_EQ(e.exit_code, 0) << e.out;
  v1::LoadResult r;
  ASSERT_NO_THROW(proto::from_json(e.out, &r)) << e.out;
  EXPECT_TRUE(r.interrupted());
  EXPECT_GT(r.requests(), 0u);
}

}  // namespace
}  // namespace loadlab::load
