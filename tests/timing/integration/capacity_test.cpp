// Capacity searches (docs/capacity.md) against targets whose capacity is known, measured in
// the same test: a queue whose service is made by a timer (the Python target's FIFO workers,
// each request holding one for a sleep, every service's start and length logged by the
// target), a server of a fixed number of such workers (a cliff), a client held to too few
// connections, and one load thread made the limit. Each search runs through `loadlab run` on
// a lab agent, as a user runs it, and stays within its step bound.
//
// This project's VM stops both CPUs for 6-90 ms a few times a minute. A stop during a service
// lengthens that service, and the target's log shows it: the queue model is fed the services
// the target had, stops included, so a truth holds through them. A step whose measurement
// stopped each of the four times the search took it is judged by what it had, says so, and
// is the stall budget past which a truth is skipped.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <numeric>
#include <random>
#include <vector>

#include "test_support.hpp"

namespace loadlab::controller {
namespace {

using loadlab::testing::bin;
using loadlab::testing::result_cells;
using loadlab::testing::run_command;
using loadlab::testing::TempDir;
using namespace std::chrono_literals;

const std::string kSource = LOADLAB_SOURCE_DIR;

// One agent, both roles, whose catalog holds `fifo`: the Python target with --slots
// {threads} workers and a service log in the test's folder.
struct Lab {
  std::unique_ptr<agent::ChildProcess> agent;  // its group stopped by its destructor
  std::string file;
  std::filesystem::path service_log;
};

Lab solo_lab(const TempDir& dir) {
  Lab l;
  l.service_log = dir.path() / "service.log";
  const auto catalog = dir.file("catalog.json", R"({"targets": {"fifo": {"argv": ["/usr/bin/python3", ")" +
                                                    kSource + R"(/tests/data/python_target/server.py",
      "{host}", "{port}", "{delay_ms}", "--slots", "{threads}", "--service-log", ")" +
                                                    l.service_log.string() + R"("],
      "readiness": {"type": "http", "path": "/__ready"}, "start_timeout_ms": 10000}}})");
  l.agent = loadlab::testing::spawn_tool(
      {bin("loadlab-agent"), "--listen", "127.0.0.1:0", "--name", "solo", "--catalog", catalog});
  std::string line;
  EXPECT_EQ(l.agent->next_line(line, 10s), agent::ChildProcess::LineStatus::kLine) << l.agent->output_tail();
  l.file = dir.file("lab.json", R"({"agents": [{"name": "solo", "address": ")" + line.substr(13) +
                                    R"(", "roles": ["target", "load"]}]})");
  return l;
}

// The services the target logged that began within [from_ns, to_ns] of CLOCK_MONOTONIC (the
// agent's clock for a window), in s: the ground truth of the queue's service.
std::vector<double> services_in(const Lab& lab, int64_t from_ns, int64_t to_ns) {
  std::ifstream in(lab.service_log);
  std::vector<double> held;
  int64_t start = 0, ns = 0;
  while (in >> start >> ns)
    if (start >= from_ns && start <= to_ns) held.push_back(ns / 1e9);
  return held;
}

double mean_of(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// Runs a scenario on the lab; its one cell.
v1::CellResult run_cell(const TempDir& dir, const Lab& lab, const std::string& name,
                        const std::string& scenario, std::chrono::seconds limit = 300s) {
  auto s = dir.file(name + ".json", scenario);
  auto out = dir.path() / name;
  auto r = run_command({bin("loadlab"), "run", s, "--lab", lab.file, "--out", out.string()}, limit);
  EXPECT_EQ(r.code, 0) << r.output_tail;
  auto cells = result_cells(out / "result.json");
  EXPECT_EQ(cells.size(), 1u);
  return cells.empty() ? v1::CellResult() : cells.front();
}

// The issue's bound: ceil(log2(max / min)) + ceil(log2(100 / precision)) + 4, validations included.
size_t step_bound(double min, double max, double precision) {
  return static_cast<size_t>(std::ceil(std::log2(max / min)) + std::ceil(std::log2(100 / precision)) + 4);
}

size_t counted_steps(const v1::SearchResult& s) {
  return static_cast<size_t>(
      std::count_if(s.steps().begin(), s.steps().end(), [](auto& st) { return st.counted(); }));
}

// Every step, a line each: what a failed expectation prints.
std::string steps_text(const v1::SearchResult& s) {
  std::string out = s.end() + ": " + s.reason() + "\n";
  for (const auto& st : s.steps())
    out += fmt::format(
        "  {} {:.0f} req/s ({} connections): held {:.0f}, p99 {:.2f} ms ({:.2f} from the write), {}{} {}\n",
        st.kind(), st.rate(), st.connections(), st.repetition().achieved_rate(),
        st.repetition().latency().p99_us() / 1000.0, st.repetition().latency_uncorrected().p99_us() / 1000.0,
        st.verdict(), st.counted() ? "" : " (again)", st.why());
  return out;
}

// Other work ran on a step's CPUs (the busy-machine check), or they stopped (stalled), each of
// the four times the search measured it: it then judged what it had, and says so in the step.
// (A step disturbed once and then measured clean counts as the clean one.) That is the stall
// budget of these truths: past it the test holds only that the search said it, and is skipped.
bool disturbed(const v1::SearchResult& s) {
  return std::any_of(s.steps().begin(), s.steps().end(), [](const v1::SearchStep& st) {
    return st.counted() &&
           (st.verdict() == "disturbed" || st.why().find("busy-machine") != std::string::npos ||
            st.why().find("(stalled)") != std::string::npos);
  });
}
#define SKIP_IF_DISTURBED(search)                                                                      \
  if (disturbed(search))                                                                               \
  GTEST_SKIP() << "a step's CPUs ran other work, or stopped, each of the four times it was measured, " \
                  "and the search says so:\n"                                                          \
               << steps_text(search)

// The step that validated the capacity found.
const v1::SearchStep* validation(const v1::SearchResult& s) {
  for (auto it = s.steps().rbegin(); it != s.steps().rend(); ++it)
    if (it->kind() == "validate" && it->verdict() == "pass") return &*it;
  return nullptr;
}

// The services the target logged during a step's measured window.
std::vector<double> services_of(const Lab& lab, const v1::SearchStep& step) {
  const auto& server = step.repetition().server();
  return services_in(lab, server.opened_ns(), server.closed_ns());
}

// A closed loop on `connections` connections for 2 s.
struct Closed {
  double qps = 0;
  bool busy = false;  // other work ran on its CPUs (a busy-machine flag)
};
Closed closed_loop(const TempDir& dir, const Lab& lab, const std::string& name, const std::string& target,
                   int connections) {
  auto cell = run_cell(
      dir, lab, name,
      R"({"name": ")" + name + R"(", "targets": [)" + target +
          R"(], "matrix": {"threads": [1]}, "load": {"duration_s": 2, "warmup_s": 0.5, "connections": )" +
          std::to_string(connections) + "}}");
  Closed c;
  if (!cell.ok()) return c;
  c.qps = cell.median().qps();
  for (const auto& r : cell.repetitions())
    for (const auto& f : r.flags()) c.busy = c.busy || f.rfind("busy-machine", 0) == 0;
  return c;
}

// A FIFO queue of one server fed Poisson arrivals at `rate`, each service drawn (with
// replacement, seeded) from `service`: its response times' mean and percentiles, from
// Lindley's recursion over 10^6 customers (W' = max(0, W + S - A)). The same figures every
// time for the same services.
struct Queue {
  double mean_s = 0, p90_s = 0, p99_s = 0;
};
Queue mg1(double rate, const std::vector<double>& service) {
  std::mt19937_64 rng(1);
  std::exponential_distribution<double> gap(rate);
  std::uniform_int_distribution<size_t> pick(0, service.size() - 1);
  std::vector<double> response(1'000'000);
  double wait = 0, sum = 0;
  for (auto& r : response) {
    const double s = service[pick(rng)];
    r = wait + s;
    sum += r;
    wait = std::max(0.0, wait + s - gap(rng));
  }
  const auto percentile = [&](double q) {
    auto at = response.begin() + static_cast<ptrdiff_t>(static_cast<double>(response.size()) * q);
    std::nth_element(response.begin(), at, response.end());
    return *at;
  };
  return {sum / static_cast<double>(response.size()), percentile(0.90), percentile(0.99)};
}

// Pollaczek-Khinchine: an M/G/1 queue's mean response, E[S] + rate E[S^2] / (2 (1 - rate E[S])).
double pk_mean_s(double rate, const std::vector<double>& service) {
  double m1 = 0, m2 = 0;
  for (double s : service) m1 += s, m2 += s * s;
  m1 /= static_cast<double>(service.size());
  m2 /= static_cast<double>(service.size());
  return m1 + rate * m2 / (2 * (1 - rate * m1));
}

// The model against the closed forms: M/D/1's p99 is Erlang's (4.34 service times at half the
// capacity, 22.9 at 90 %, computed exactly with 60 digits for docs/load.md); M/M/1's response
// is exponential at mu - lambda (its p90 ln 10 / (mu - lambda)); both means are
// Pollaczek-Khinchine's.
TEST(CapacityTruth, TheQueueModelMeetsTheClosedForms) {
  EXPECT_NEAR(mg1(0.5, {1.0}).p99_s / 4.34, 1, 0.02);
  EXPECT_NEAR(mg1(0.9, {1.0}).p99_s / 22.9, 1, 0.05);
  EXPECT_NEAR(mg1(0.75, {1.0}).mean_s / pk_mean_s(0.75, {1.0}), 1, 0.02);  // 2.5 service times
  std::mt19937_64 rng(2);
  std::exponential_distribution<double> draw(1.0);
  std::vector<double> exponential(100'000);
  for (auto& s : exponential) s = draw(rng);
  const double mu = 1 / mean_of(exponential), lambda = 0.75 * mu;
  const auto mm1 = mg1(lambda, exponential);
  EXPECT_NEAR(mm1.p90_s * (mu - lambda) / std::log(10), 1, 0.05);
  EXPECT_NEAR(mm1.p99_s * (mu - lambda) / std::log(100), 1, 0.05);
  EXPECT_NEAR(mm1.mean_s * (mu - lambda), 1, 0.05);
  EXPECT_NEAR(mm1.mean_s / pk_mean_s(lambda, exponential), 1, 0.05);
}

// One worker, each request holding it for a 2 ms sleep (2.1 ms with the timer's slack).
const char* kOneWorker = R"({"name": "fifo", "catalog": "fifo", "server_threads": 1, "delay_ms": 2})";

// Uniform arrivals at one worker: below 1 / S no request waits, above it the queue grows
// without bound; the search finds 1 / S within 10 %, S the mean service the target logged
// during the validation.
TEST(CapacityTruth, UniformArrivalsFindOneOverTheServiceTime) {
  TempDir dir;
  auto lab = solo_lab(dir);
  const double min = 100, max = 16 * min;  // a fifth of 1 / 2 ms to 3.2 times
  auto cell =
      run_cell(dir, lab, "search",
               std::string(R"({"name": "uniform", "targets": [)") + kOneWorker +
                   R"(], "matrix": {"arrivals": ["uniform"]},
      "load": {"threads": 1, "warmup_s": 0.3},
      "search": {"slo": {"p90_ms": 10}, "rate": {"min": )" +
                   std::to_string(min) + R"(, "max": )" + std::to_string(max) + R"(}, "precision_pct": 2,
                 "step_s": 2, "min_requests": 500, "validate_s": 4}})");
  ASSERT_TRUE(cell.ok()) << cell.error();
  ASSERT_EQ(cell.searches_size(), 1);
  const auto& search = cell.searches(0);
  SKIP_IF_DISTURBED(search);
  EXPECT_EQ(search.end(), "found") << steps_text(search);
  EXPECT_LE(counted_steps(search), step_bound(min, max, 2));
  EXPECT_EQ(cell.capacity(), search.capacity());
  const auto* at = validation(search);
  ASSERT_NE(at, nullptr) << steps_text(search);
  EXPECT_EQ(at->rate(), search.capacity());
  const auto had = services_of(lab, *at);
  ASSERT_GT(had.size(), 1000u) << "the target's log holds " << had.size() << " services of the validation";
  EXPECT_NEAR(search.capacity() * mean_of(had), 1, 0.10)
      << "capacity " << search.capacity() << " req/s, 1 / S " << 1 / mean_of(had) << "\n"
      << steps_text(search);
}

// Poisson arrivals at one worker: an M/G/1 queue whose services are the ones the target
// logged, the client's connections a pool whose queue is first come first served
// (schedule.hpp). The SLO is where the model, fed a closed loop's services, puts the p90 at
// 75 % of the capacity. At the capacity the search validated, the model fed that validation's
// own services (a stop of the CPUs in it included, as a long service) must give the p90
// measured there within 10 %. A p90 rather than a p99: a stop of 90 ms queues every request
// that comes until the queue has drained it, at 75 % some 4 % of a 10 s validation, which a
// p99 cannot hold through and a p90 can. Near 75 % a p90 is steep in the rate, and one step
// broken by a stop shorter than the stall probe's 5 ms can end the search low: a capacity
// from 55 % to 90 % is held against the model, and a search that found none is run again, once.
TEST(CapacityTruth, PoissonArrivalsMeetTheMg1QueuesP90AtTheCapacityFound) {
  TempDir dir;
  auto lab = solo_lab(dir);
  auto closed = closed_loop(dir, lab, "closed", kOneWorker, 1);
  ASSERT_GT(closed.qps, 0);
  if (closed.busy) GTEST_SKIP() << "other work ran beside the closed loop that measures S (busy-machine)";
  const auto first = services_in(lab, 0, INT64_MAX);
  ASSERT_GT(first.size(), 500u);
  // The rest of a round trip (the client, the network, the handler thread) adds to every
  // response without holding the worker.
  const double service = mean_of(first), rest = std::max(0.0, 1 / closed.qps - service);
  const double slo_ms = (mg1(0.75 / service, first).p90_s + rest) * 1e3;
  const double min = std::floor(0.4 / service), max = 8 * min;  // 0.4 to 3.2 times the capacity
  for (int attempt = 1; attempt <= 2; ++attempt) {
    SCOPED_TRACE("search " + std::to_string(attempt));
    auto cell = run_cell(dir, lab, "search" + std::to_string(attempt),
                         std::string(R"({"name": "poisson", "targets": [)") + kOneWorker +
                             R"(], "matrix": {"arrivals": ["poisson"]},
      "load": {"threads": 1, "warmup_s": 0.3, "seed": 7},
      "search": {"slo": {"p90_ms": )" +
                             std::to_string(slo_ms) + R"(}, "rate": {"min": )" + std::to_string(min) +
                             R"(, "max": )" + std::to_string(max) + R"(}, "precision_pct": 2,
                 "step_s": 2, "min_requests": 600, "validate_s": 10}})");
    ASSERT_TRUE(cell.ok()) << cell.error();
    const auto& search = cell.searches(0);
    SKIP_IF_DISTURBED(search);
    EXPECT_LE(counted_steps(search), step_bound(min, max, 2));
    const auto* at = validation(search);
    const double rho = search.capacity() * service;
    if (search.end() != "found" || !at || rho < 0.55 || rho > 0.9) {
      std::cout << "search " << attempt << " found no validated capacity near 75 %: " << steps_text(search);
      if (attempt == 2)
        ADD_FAILURE() << "twice no validated capacity near 75 % (rho " << rho << "):\n" << steps_text(search);
      continue;
    }
    const auto had = services_of(lab, *at);
    ASSERT_GT(had.size(), 1000u) << "the target's log holds " << had.size() << " services of the validation";
    // The arrivals the window had: a Poisson count of 3 500 moves by 1.7 % (its sd), the p90
    // near 75 % by some 4 times as much.
    const double arrived = at->repetition().achieved_rate();
    const auto model = mg1(arrived, had);
    EXPECT_NEAR(model.mean_s / pk_mean_s(arrived, had), 1, 0.05);
    const double measured_ms = at->repetition().latency().p90_us() / 1000.0;
    const double model_ms = (model.p90_s + rest) * 1e3;
    const auto longest = *std::max_element(had.begin(), had.end());
    const std::string figures = fmt::format(
        "capacity {:.0f} req/s ({:.0f} arrived, rho {:.3f}), p90 {:.3f} ms measured, {:.3f} ms by M/G/1 "
        "({:+.1f} %); S {:.3f} "
        "ms (the longest {:.1f} ms), the rest of a round trip {:.3f} ms; the window's CPUs stopped {} times",
        search.capacity(), arrived, arrived * mean_of(had), measured_ms, model_ms,
        100 * (measured_ms / model_ms - 1), mean_of(had) * 1e3, longest * 1e3, rest * 1e3,
        at->repetition().server().stalls());
    std::cout << figures << "\n" << steps_text(search);
    EXPECT_NEAR(measured_ms / model_ms, 1, 0.10) << figures;
    return;
  }
}

// A server of 4 workers, each request holding one for 20 ms: its latency is flat up to 4 / S
// requests/s, and grows without bound beyond. Two ground truths bracket the cliff: no server
// of 4 such workers serves more than 4 / S (S the mean service the target logged during the
// validation), and a closed loop with twice the workers in connections measures what this one
// sustains (a little less: the hand-over of a worker). The search finds the cliff between
// them, within its precision.
TEST(CapacityTruth, ACliffIsFoundWithinThePrecision) {
  TempDir dir;
  auto lab = solo_lab(dir);
  const char* slots = R"({"name": "slots", "catalog": "fifo", "server_threads": 4, "delay_ms": 20})";
  auto cliff = closed_loop(dir, lab, "closed", slots, 8).qps;
  ASSERT_GT(cliff, 150);
  const double min = std::floor(cliff / 5), max = 16 * min;
  auto cell =
      run_cell(dir, lab, "search",
               std::string(R"({"name": "cliff", "targets": [)") + slots +
                   R"(], "matrix": {"arrivals": ["uniform"]},
      "load": {"threads": 1, "warmup_s": 0.3},
      "search": {"slo": {"p99_ms": 60}, "rate": {"min": )" +
                   std::to_string(min) + R"(, "max": )" + std::to_string(max) + R"(}, "precision_pct": 2,
                 "step_s": 3, "min_requests": 300, "validate_s": 4}})");
  ASSERT_TRUE(cell.ok()) << cell.error();
  const auto& search = cell.searches(0);
  SKIP_IF_DISTURBED(search);
  EXPECT_EQ(search.end(), "found") << steps_text(search);
  EXPECT_LE(counted_steps(search), step_bound(min, max, 2));
  const auto* at = validation(search);
  ASSERT_NE(at, nullptr) << steps_text(search);
  const auto had = services_of(lab, *at);
  ASSERT_GT(had.size(), 500u) << "the target's log holds " << had.size() << " services of the validation";
  const double most = 4 / mean_of(had);
  EXPECT_LE(search.capacity(), most * 1.02) << "4 / S " << most << "\n" << steps_text(search);
  EXPECT_GE(search.capacity(), cliff / 1.02 / 1.01) << "cliff " << cliff << "\n" << steps_text(search);
}

// Four connections to a 20 ms server carry at most 200 requests/s whatever the server could
// do: the search says its connections were the limit.
TEST(CapacityTruth, TooFewConnectionsAreSaid) {
  TempDir dir;
  auto lab = solo_lab(dir);
  auto cell = run_cell(dir, lab, "search", R"({"name": "conns",
      "targets": [{"name": "b", "builtin": "hello", "server_threads": 1, "delay_ms": 20}],
      "matrix": {"arrivals": ["uniform"]}, "load": {"threads": 1, "warmup_s": 0.2},
      "search": {"slo": {"p99_ms": 50}, "rate": {"min": 50, "max": 2000}, "precision_pct": 5,
                 "step_s": 1, "min_requests": 100, "validate_s": 2, "max_connections": 4}})");
  ASSERT_TRUE(cell.ok()) << cell.error();
  const auto& search = cell.searches(0);
  EXPECT_EQ(search.end(), "connection-bound") << search.reason();
  EXPECT_LE(search.capacity(), 200 * 1.02);
  bool flagged = false;
  for (auto& st : search.steps()) flagged = flagged || (st.connection_bound() && st.verdict() == "fail");
  EXPECT_TRUE(flagged);
}

// One load thread making a TLS 1.2 handshake per request against a one-thread target: the
// client is the limit, and the search says so instead of reporting a server capacity. A
// handshake costs the client more than the server (it verifies the server's ECDSA signature,
// a verify costing some three signs): the client at 98 % CPU beside the server at 49-95 % on
// this project's VM. Plain keep-alive requests cost the two sides about the same, and a CI
// machine's server saturated first (at 53 k req/s). Where the server still saturates first,
// the search rightly finds its capacity, and the client-bound end cannot be shown here: skipped,
// with the figures.
TEST(CapacityTruth, AClientBoundSearchSaysSo) {
  TempDir dir;
  auto lab = solo_lab(dir);
  auto cell = run_cell(dir, lab, "search", R"({"name": "client",
      "targets": [{"name": "b", "builtin": "hello", "server_threads": 1}],
      "matrix": {"arrivals": ["uniform"]},
      "load": {"threads": 1, "warmup_s": 0.2, "protocol": "https", "tls_version": "1.2", "keep_alive": false},
      "search": {"slo": {"p99_ms": 50}, "rate": {"min": 200, "max": 1000000}, "precision_pct": 5,
                 "step_s": 1, "min_requests": 200, "validate_s": 2}})");
  ASSERT_TRUE(cell.ok()) << cell.error();
  const auto& search = cell.searches(0);
  SKIP_IF_DISTURBED(search);
  ASSERT_GT(search.steps_size(), 0);
  if (search.end() != "client-bound")
    for (const auto& step : search.steps())
      if (step.verdict() == "fail" && step.repetition().server().cpu_pct() >= 90 &&
          step.repetition().client().cpu_pct() < 90)
        GTEST_SKIP() << "the server saturated before the client here ("
                     << step.repetition().server().cpu_pct() << " % beside the client's "
                     << step.repetition().client().cpu_pct() << " % at " << step.rate() << " req/s)\n"
                     << steps_text(search);
  EXPECT_EQ(search.end(), "client-bound") << steps_text(search);
  EXPECT_NE(search.reason().find("client-bound at "), std::string::npos) << steps_text(search);
  // And it was the client: saturated at the step that ended the search.
  const auto& last = search.steps(search.steps_size() - 1);
  EXPECT_EQ(last.verdict(), "client-bound") << steps_text(search);
  EXPECT_GE(last.repetition().client().cpu_pct(), 90) << steps_text(search);
}

}  // namespace
}  // namespace loadlab::controller
