// Capacity searches (docs/capacity.md) against targets whose capacity is known, measured in
// the same test: a one-thread target burning a known CPU time per request (its service time S
// from a closed loop on one connection, and from its own CPU clock), a server of a fixed
// number of slots (a cliff), a client held to too few connections, and one load thread made
// the limit. Each search runs through `loadlab run` on a lab agent, as a user runs it, and
// stays within its step bound.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
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

// One agent with the Python catalog targets (python_target/catalog.json), both roles.
struct Lab {
  std::unique_ptr<agent::ChildProcess> agent;  // its group stopped by its destructor
  std::string file;
};

Lab solo_lab(const TempDir& dir) {
  Lab l;
  l.agent = loadlab::testing::spawn_tool({bin("loadlab-agent"), "--listen", "127.0.0.1:0", "--name", "solo",
                                          "--catalog", kSource + "/tests/data/python_target/catalog.json"});
  std::string line;
  EXPECT_EQ(l.agent->next_line(line, 10s), agent::ChildProcess::LineStatus::kLine) << l.agent->output_tail();
  l.file = dir.file("lab.json", R"({"agents": [{"name": "solo", "address": ")" + line.substr(13) +
                                    R"(", "roles": ["target", "load"]}]})");
  return l;
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
// the three times the search measured it: it then judged what it had, and says so in the step.
// (A step disturbed once and then measured clean counts as the clean one.) A latency truth cannot be held
// against such a search (another process busy on the target's core doubles its service time and adds its time
// slices to the latency); the test then holds only that the search said it, and is skipped.
bool disturbed(const v1::SearchResult& s) {
  return std::any_of(s.steps().begin(), s.steps().end(), [](const v1::SearchStep& st) {
    return st.counted() &&
           (st.verdict() == "disturbed" || st.why().find("busy-machine") != std::string::npos ||
            st.why().find("(stalled)") != std::string::npos);
  });
}
#define SKIP_IF_DISTURBED(search)                                                                 \
  if (disturbed(search))                                                                          \
  GTEST_SKIP() << "other work ran on the steps' CPUs, or they stopped, and the search says so:\n" \
               << steps_text(search)

// The step that validated the capacity found.
const v1::SearchStep* validation(const v1::SearchResult& s) {
  for (auto it = s.steps().rbegin(); it != s.steps().rend(); ++it)
    if (it->kind() == "validate" && it->verdict() == "pass") return &*it;
  return nullptr;
}

// A closed loop on `connections` connections for 2 s: the figures a search is checked against.
struct Closed {
  double qps = 0;
  double server_cpu_s = 0;  // the target's CPU time per request (its own clock)
  bool busy = false;        // other work ran on its CPUs (a busy-machine flag)
};
Closed closed_loop(const TempDir& dir, const Lab& lab, const std::string& name, const std::string& target,
                   const std::string& load_extra, int connections) {
  auto cell = run_cell(
      dir, lab, name,
      R"({"name": ")" + name + R"(", "targets": [)" + target +
          R"(], "matrix": {"threads": [1]}, "load": {"duration_s": 2, "warmup_s": 0.5, "connections": )" +
          std::to_string(connections) + load_extra + "}}");
  Closed c;
  if (!cell.ok()) return c;
  c.qps = cell.median().qps();
  c.server_cpu_s = cell.median().server().cpu_pct() / 100.0 / c.qps;
  for (const auto& r : cell.repetitions())
    for (const auto& f : r.flags()) c.busy = c.busy || f.rfind("busy-machine", 0) == 0;
  return c;
}

// The response time's 99th percentile of an M/D/1 queue (Poisson arrivals at `rate`, one
// server, every service `service_s`), from Lindley's recursion over 10^6 customers
// (W' = max(0, W + S - A)), seeded: the same figure every time.
double md1_p99_s(double rate, double service_s) {
  std::mt19937_64 rng(1);
  std::exponential_distribution<double> gap(rate);
  std::vector<double> response(1'000'000);
  double wait = 0;
  for (auto& r : response) {
    r = wait + service_s;
    wait = std::max(0.0, wait + service_s - gap(rng));
  }
  auto at = response.begin() + static_cast<ptrdiff_t>(response.size() * 99 / 100);
  std::nth_element(response.begin(), at, response.end());
  return *at;
}

// The M/D/1 figure above is Erlang's: at half the capacity the p99 response is 4.34 service
// times, at 90 % 22.9 (computed exactly, with 60 digits, for docs/load.md).
TEST(CapacityTruth, TheQueueModelIsErlangs) {
  EXPECT_NEAR(md1_p99_s(0.5, 1) / 4.34, 1, 0.02);
  EXPECT_NEAR(md1_p99_s(0.9, 1) / 22.9, 1, 0.05);
}

const char* kBurn = R"({"name": "burn", "builtin": "hello", "server_threads": 1})";

// Uniform arrivals at a one-thread target that burns 2 ms of CPU a request: below 1 / S no
// request waits, above it the queue grows without bound; the search finds 1 / S within 10 %.
TEST(CapacityTruth, UniformArrivalsFindOneOverTheServiceTime) {
  TempDir dir;
  auto lab = solo_lab(dir);
  const std::string burn = R"(, "headers": {"x-loadlab-work-us": "2000"})";
  auto closed = closed_loop(dir, lab, "closed", kBurn, burn, 1);
  ASSERT_GT(closed.qps, 0);
  ASSERT_GT(closed.server_cpu_s, 0);
  if (closed.busy) GTEST_SKIP() << "other work ran beside the closed loop that measures S (busy-machine)";
  // S is the server's CPU per request, as in the Poisson test below: the rest of the closed
  // loop's round trip (0.2-0.3 ms here) does not hold the server, and an open loop over
  // several connections overlaps it with the next request's service (1 / the round trip was
  // 11 % below the capacity found, once the connections were a pool).
  const double s = closed.server_cpu_s;
  // The range around 1 / S, whatever this machine's speed: a fifth of it to 3.2 times (16×).
  const double min = std::floor(0.2 / s), max = 16 * min;
  auto cell =
      run_cell(dir, lab, "search",
               std::string(R"({"name": "uniform", "targets": [)") + kBurn +
                   R"(], "matrix": {"arrivals": ["uniform"]},
      "load": {"threads": 1, "warmup_s": 0.3)" +
                   burn + R"(},
      "search": {"slo": {"p99_ms": 10}, "rate": {"min": )" +
                   std::to_string(min) + R"(, "max": )" + std::to_string(max) + R"(}, "precision_pct": 2,
                 "step_s": 2, "min_requests": 500, "validate_s": 4}})");
  ASSERT_TRUE(cell.ok()) << cell.error();
  ASSERT_EQ(cell.searches_size(), 1);
  const auto& search = cell.searches(0);
  SKIP_IF_DISTURBED(search);
  EXPECT_EQ(search.end(), "found") << steps_text(search);
  EXPECT_NEAR(search.capacity() * s, 1, 0.10)
      << "capacity " << search.capacity() << " req/s, 1 / S " << 1 / s << " (S " << s * 1e3
      << " ms; a closed loop's round trip " << 1e3 / closed.qps << " ms)";
  ASSERT_NE(validation(search), nullptr) << search.reason();
  EXPECT_EQ(validation(search)->rate(), search.capacity());
  EXPECT_LE(counted_steps(search), step_bound(min, max, 2));
  EXPECT_EQ(cell.capacity(), search.capacity());
}

// Poisson arrivals at a one-thread target burning 0.5 ms a request: an M/D/1 queue, the
// client's connections a pool whose queue is first come first served (schedule.hpp). The SLO
// is set where the model puts the p99 at 75 % of the capacity; the search's capacity must
// then be a rate whose measured p99 the model gives within 15 %. Every validated capacity
// held it, at -10 to +1 %, once the load worker's connections were a pool and a step during
// which the CPUs stopped was measured again (before: +7 to +43 %, and searches ending at
// 40 % of the capacity when the VM's CPUs stopped for 20 ms).
TEST(CapacityTruth, PoissonArrivalsMeetTheMd1QueuesP99AtTheCapacityFound) {
  TempDir dir;
  auto lab = solo_lab(dir);
  const std::string burn = R"(, "headers": {"x-loadlab-work-us": "500"})";
  auto closed = closed_loop(dir, lab, "closed", kBurn, burn, 1);
  ASSERT_GT(closed.qps, 0);
  ASSERT_GT(closed.server_cpu_s, 0);
  if (closed.busy) GTEST_SKIP() << "other work ran beside the closed loop that measures S (busy-machine)";
  // The server's service time is its CPU per request; the rest of a closed loop's round trip
  // (the network and the client) adds to every response without holding the server.
  const double service = closed.server_cpu_s, rest = std::max(0.0, 1 / closed.qps - service);
  const double slo_ms = (md1_p99_s(0.75 / service, service) + rest) * 1e3;
  const double min = std::floor(0.4 / service), max = 8 * min;  // 0.4 to 3.2 times the capacity
  // The model is held against every search that found a validated capacity. Near 75 % of
  // the capacity a p99 is steep in the rate, and a 6 s validation on this VM can fail where
  // the 2 s steps held (four validations down, `unvalidated`), or a step broken by a stop
  // shorter than the stall probe's 5 ms can end the search low: such a search is run again,
  // once. Near 75 % one such step moves the capacity by a p99's noise: the model's p99 is
  // 7.4 service times at 70 % and 8.9 at 75 %, and CI's machine once failed a 2 s step at
  // 60 % with a p99 of 5.8 ms where the model gives 3.0 (its capacity, found at 59 %, then
  // measured 3.27 ms against the model's 3.02). So a found capacity from 55 % to 90 % is
  // held against the model.
  for (int attempt = 1; attempt <= 2; ++attempt) {
    SCOPED_TRACE("search " + std::to_string(attempt));
    auto cell = run_cell(dir, lab, "search" + std::to_string(attempt),
                         std::string(R"({"name": "poisson", "targets": [)") + kBurn +
                             R"(], "matrix": {"arrivals": ["poisson"]},
      "load": {"threads": 1, "warmup_s": 0.3, "seed": 7)" +
                             burn + R"(},
      "search": {"slo": {"p99_ms": )" +
                             std::to_string(slo_ms) + R"(}, "rate": {"min": )" + std::to_string(min) +
                             R"(, "max": )" + std::to_string(max) + R"(}, "precision_pct": 2,
                 "step_s": 2, "min_requests": 5000, "validate_s": 6}})");
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
    const double measured_ms = at->repetition().latency().p99_us() / 1000.0;
    const double model_ms = (md1_p99_s(search.capacity(), service) + rest) * 1e3;
    const std::string figures = fmt::format(
        "capacity {:.0f} req/s (rho {:.3f}), p99 {:.3f} ms measured, {:.3f} ms by M/D/1 ({:+.1f} %); "
        "S {:.3f} ms, the rest of a round trip {:.3f} ms",
        search.capacity(), rho, measured_ms, model_ms, 100 * (measured_ms / model_ms - 1), service * 1e3,
        rest * 1e3);
    std::cout << figures << "\n" << steps_text(search);
    EXPECT_NEAR(measured_ms / model_ms, 1, 0.15) << figures;
    return;
  }
}

// A server of 4 slots, each request holding one for 20 ms: its latency is flat up to
// 4 / 20 ms = 200 requests/s, and grows without bound beyond. Two ground truths bracket the
// cliff: no server of 4 such slots serves more than 200 requests/s, and a closed loop with
// twice the slots in connections measures what this one sustains (a few % less: the Python
// threads' hand-over of a slot). The search finds the cliff between them, within its
// precision.
TEST(CapacityTruth, ACliffIsFoundWithinThePrecision) {
  TempDir dir;
  auto lab = solo_lab(dir);
  const char* slots = R"({"name": "slots", "catalog": "python-slots", "server_threads": 4, "delay_ms": 20})";
  auto cliff = closed_loop(dir, lab, "closed", slots, "", 8).qps;
  ASSERT_GT(cliff, 150);
  const double min = std::floor(cliff / 5), max = 16 * min;
  auto cell =
      run_cell(dir, lab, "search",
               std::string(R"({"name": "cliff", "targets": [)") + slots +
                   R"(], "matrix": {"arrivals": ["uniform"]},
      "load": {"threads": 1, "warmup_s": 0.3},
      "search": {"slo": {"p99_ms": 60}, "rate": {"min": )" +
                   std::to_string(min) + R"(, "max": )" + std::to_string(max) + R"(}, "precision_pct": 2,
                 "step_s": 4, "min_requests": 300, "validate_s": 6}})");
  ASSERT_TRUE(cell.ok()) << cell.error();
  const auto& search = cell.searches(0);
  SKIP_IF_DISTURBED(search);
  EXPECT_EQ(search.end(), "found") << steps_text(search);
  EXPECT_LE(search.capacity(), 4 / 0.020 * 1.02) << "cliff " << cliff << "\n" << steps_text(search);
  EXPECT_GE(search.capacity(), cliff / 1.02 / 1.01) << "cliff " << cliff << "\n" << steps_text(search);
  EXPECT_LE(counted_steps(search), step_bound(min, max, 2));
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
