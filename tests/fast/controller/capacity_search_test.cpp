// The capacity search's state machine against servers whose answer to each rate is known: it
// finds a cliff within its precision, validates, stays within its step bound, and says when
// the SLO broke at the start, held to the end, or the client (or its connections) was the limit.
#include "capacity/capacity_search.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

namespace loadlab::controller {
namespace {

// A step's measurement: `p99_ms` at `rate`, the rate held or not, the client saturated or not.
struct Answer {
  double p99_ms = 1;
  bool held = true;
  bool saturated = false;
  bool busy = false;
  // The p99 from each request's write (the server's); < 0: the same as p99_ms (no request
  // waited in the client).
  double from_write_ms = -1;
  double server_cpu_pct = 50;  // of its one CPU
};

v1::Repetition repetition(const StepPlan& p, const Answer& a) {
  v1::Repetition r;
  r.set_requests(static_cast<uint64_t>(p.rate * p.duration_s));
  r.set_rate(p.rate);
  r.set_achieved_rate(a.held ? p.rate : 0.8 * p.rate);
  r.set_rate_not_held(!a.held);
  r.set_latency_corrected(true);
  r.mutable_latency()->set_p50_us(static_cast<uint64_t>(a.p99_ms * 500));
  r.mutable_latency()->set_p99_us(static_cast<uint64_t>(a.p99_ms * 1000));
  r.mutable_latency()->set_max_us(static_cast<uint64_t>(a.p99_ms * 2000));
  const double from_write_ms = a.from_write_ms < 0 ? a.p99_ms : a.from_write_ms;
  r.mutable_latency_uncorrected()->set_p50_us(static_cast<uint64_t>(from_write_ms * 500));
  r.mutable_latency_uncorrected()->set_p99_us(static_cast<uint64_t>(from_write_ms * 1000));
  r.mutable_latency_uncorrected()->set_max_us(static_cast<uint64_t>(from_write_ms * 2000));
  if (a.saturated) {
    r.add_flags("client-saturated");
    r.mutable_client()->set_cpu_pct(99);
  }
  if (a.busy) r.add_flags("busy-machine:lab1");
  r.mutable_server()->set_cpus("1");
  r.mutable_server()->set_machine_cores(2);
  r.mutable_server()->set_cpu_pct(a.server_cpu_pct);
  return r;
}

SearchDef def(double min, double max, double precision) {
  SearchDef d;
  d.slo = {{"p99_ms", 10}};
  d.rate_min = min;
  d.rate_max = max;
  d.precision_pct = precision;
  d.step_s = 5;
  d.min_requests = 20000;
  d.validate_s = 30;
  return d;
}

// Runs a search to its end against `server`; each step's answer from its plan.
CapacitySearch run(const SearchDef& d, const std::function<Answer(const StepPlan&)>& server,
                   SearchLoad load = {}) {
  CapacitySearch s(d, load);
  for (int guard = 0; guard < 200; ++guard) {
    auto step = s.next();
    if (!step) break;
    auto rep = repetition(*step, server(*step));
    s.record(&rep, "");
  }
  EXPECT_NE(s.end(), CapacitySearch::End::kSearching);
  return s;
}

// A cliff: the SLO holds below `capacity` and breaks (queues grow) at and above it.
std::function<Answer(const StepPlan&)> cliff(double capacity) {
  return [capacity](const StepPlan& p) { return Answer{p.rate < capacity ? 2.0 : 80.0, p.rate < capacity}; };
}

TEST(CapacitySearch, ACliffIsFoundWithinThePrecisionAndValidated) {
  auto d = def(100, 500000, 2);
  auto s = run(d, cliff(31337));
  EXPECT_EQ(s.end(), CapacitySearch::End::kFound) << s.reason();
  EXPECT_LT(s.capacity(), 31337);
  EXPECT_GT(s.capacity(), 31337 / 1.02);
  EXPECT_EQ(s.steps().back().plan.kind, StepPlan::Kind::kValidate);
  EXPECT_EQ(s.steps().back().plan.rate, s.capacity());
  EXPECT_EQ(s.steps().back().plan.duration_s, 30);
  // The ramp doubles from rate.min: 100, 200, ... 51200 (the first to break).
  EXPECT_EQ(s.steps()[0].plan.rate, 100);
  EXPECT_EQ(s.steps()[0].plan.duration_s, 200);  // 20000 requests at 100 req/s
  EXPECT_EQ(s.steps()[1].plan.rate, 200);
  EXPECT_EQ(s.steps()[9].plan.rate, 51200);
  EXPECT_EQ(s.steps()[9].verdict, StepVerdict::kFail);
  EXPECT_EQ(s.steps()[9].plan.duration_s, 5);  // step_s: more than 20000 requests
  EXPECT_LE(s.counted_steps(), CapacitySearch::max_steps(d));
  // The bound for this scenario: ceil(log2(5000)) + ceil(log2(50)) + 4.
  EXPECT_EQ(CapacitySearch::max_steps(d), 13u + 6u + 4u);
}

// Every cliff from below rate.min to beyond rate.max, over several ranges and precisions:
// the search ends within its bound, and says what it found.
TEST(CapacitySearch, TheStepsStayWithinTheBoundForEveryCliff) {
  for (auto [min, max, precision] :
       {std::tuple{100.0, 500000.0, 2.0}, std::tuple{1.0, 1e6, 1.0}, std::tuple{1000.0, 3000.0, 5.0},
        std::tuple{10.0, 17.0, 0.5}, std::tuple{1.0, 1024.0, 2.0}})
    for (double c = min / 3; c < max * 3; c *= 1.07) {
      auto d = def(min, max, precision);
      auto s = run(d, cliff(c));
      SCOPED_TRACE(::testing::Message() << "min " << min << " max " << max << " precision " << precision
                                        << " cliff " << c << ": " << s.reason());
      EXPECT_LE(s.counted_steps(), CapacitySearch::max_steps(d));
      if (c <= min) {
        EXPECT_EQ(s.end(), CapacitySearch::End::kBrokenAtMin);
        EXPECT_EQ(s.capacity(), 0);
      } else if (c > max) {
        EXPECT_EQ(s.end(), CapacitySearch::End::kAtMax);
        EXPECT_EQ(s.capacity(), max);
      } else {
        EXPECT_EQ(s.end(), CapacitySearch::End::kFound);
        EXPECT_LT(s.capacity(), c);
        EXPECT_GT(s.capacity(), c / (1 + precision / 100));
      }
      // The worst case: no validation holds (the rate.max a power of two times rate.min makes
      // the ramp test both ends). Still within the bound.
      auto never = run(d, [c](const StepPlan& p) {
        return Answer{p.kind == StepPlan::Kind::kValidate || p.rate >= c ? 40.0 : 2.0, true};
      });
      EXPECT_LE(never.counted_steps(), CapacitySearch::max_steps(d)) << never.reason();
    }
}

// A server that holds a rate for a 5 s step but not for the 30 s validation (a slow leak):
// the validation fails, the rate is lowered by the precision and validated again.
TEST(CapacitySearch, AFailedValidationLowersTheRateAndValidatesAgain) {
  auto d = def(100, 500000, 2);
  const double cliff_rate = 31337, sustained = 0.95 * cliff_rate;
  auto s = run(d, [&](const StepPlan& p) {
    const double limit = p.kind == StepPlan::Kind::kValidate ? sustained : cliff_rate;
    return Answer{p.rate < limit ? 2.0 : 40.0, true};
  });
  EXPECT_EQ(s.end(), CapacitySearch::End::kFound) << s.reason();
  EXPECT_LT(s.capacity(), sustained);
  int validations = 0;
  for (auto& step : s.steps()) validations += step.plan.kind == StepPlan::Kind::kValidate;
  EXPECT_GE(validations, 2);
  EXPECT_LE(validations, CapacitySearch::kMaxValidations);
  EXPECT_LE(s.counted_steps(), CapacitySearch::max_steps(d));

  // One that holds nothing for 30 s: four validations, then the steps' figure, unvalidated.
  auto never = run(d, [&](const StepPlan& p) {
    return Answer{p.kind == StepPlan::Kind::kValidate || p.rate >= cliff_rate ? 40.0 : 2.0, true};
  });
  EXPECT_EQ(never.end(), CapacitySearch::End::kUnvalidated) << never.reason();
  EXPECT_GT(never.capacity(), cliff_rate / 1.02);
  EXPECT_NE(never.reason().find("4 validations"), std::string::npos) << never.reason();
}

// The busy-machine check applies to each step: a disturbed step is measured again (not
// counted), and the search goes on as if it had not been.
TEST(CapacitySearch, ADisturbedStepIsMeasuredAgain) {
  auto d = def(100, 500000, 2);
  int calls = 0;
  auto s = run(d, [&](const StepPlan& p) {
    Answer a = cliff(31337)(p);
    a.busy = ++calls % 3 == 1;  // the first of every three measurements
    return a;
  });
  auto quiet = run(d, cliff(31337));
  EXPECT_EQ(s.end(), CapacitySearch::End::kFound);
  EXPECT_EQ(s.capacity(), quiet.capacity());
  EXPECT_EQ(s.counted_steps(), quiet.counted_steps());
  EXPECT_GT(s.steps().size(), quiet.steps().size());
  // Always busy: each step is judged by what it measured after its retries, and says so.
  auto busy = run(d, [&](const StepPlan& p) {
    Answer a = cliff(31337)(p);
    a.busy = true;
    return a;
  });
  EXPECT_EQ(busy.capacity(), quiet.capacity());
  EXPECT_NE(busy.steps().back().why.find("busy-machine"), std::string::npos) << busy.steps().back().why;
}

// A client that cannot hold more than 20 000 req/s per load thread: the step says nothing of
// the server. Without more threads allowed the search stops there and says so; with
// search.max_threads it doubles the threads and goes on to the server's cliff.
TEST(CapacitySearch, AClientBoundStepAddsThreadsOrEndsTheSearch) {
  auto client = [](const StepPlan& p) {
    const bool saturated = p.rate > 20000.0 * p.threads;
    Answer a = cliff(70000)(p);
    if (saturated) a = Answer{30.0, false, true};
    return a;
  };
  auto d = def(100, 500000, 2);
  auto s = run(d, client);
  EXPECT_EQ(s.end(), CapacitySearch::End::kClientBound);
  EXPECT_EQ(s.capacity(), 12800);  // the last rate that passed
  EXPECT_NE(s.reason().find("client-bound at 25600 req/s with 1 load threads"), std::string::npos)
      << s.reason();
  d.max_threads = 8;
  auto more = run(d, client);
  EXPECT_EQ(more.end(), CapacitySearch::End::kFound) << more.reason();
  EXPECT_LT(more.capacity(), 70000);
  EXPECT_GT(more.capacity(), 70000 / 1.02);
  EXPECT_EQ(more.steps().back().plan.threads, 8u);  // 102 400 req/s needed 8
  EXPECT_LE(more.counted_steps(), CapacitySearch::max_steps(d));
}

TEST(CapacitySearch, TheSloBrokenAtTheFirstRateIsSaid) {
  auto s = run(def(100, 500000, 2), [](const StepPlan&) { return Answer{25.0, true}; });
  EXPECT_EQ(s.end(), CapacitySearch::End::kBrokenAtMin);
  EXPECT_EQ(s.capacity(), 0);
  EXPECT_EQ(s.steps().size(), 1u);
  EXPECT_EQ(s.reason(), "the SLO broke at rate.min 100 req/s");
  EXPECT_EQ(s.steps()[0].why, "p99_ms 25 > 10");
}

// Before any latency is measured, connections are sized from the rate and the SLO's latency
// bound (Little's law): an HTTP/1.1 step at 10 000 req/s within p99 10 ms needs 100. Fewer
// allowed: connection-bound.
TEST(CapacitySearch, ConnectionsAreSizedFromTheRateAndTheLatencyBound) {
  auto d = def(10000, 20000, 2);
  SearchLoad load;
  load.threads = 2;
  load.connections = 4;
  CapacitySearch s(d, load);
  auto p = *s.next();
  EXPECT_EQ(p.connections, 100u);
  EXPECT_EQ(p.streams, 1u);
  EXPECT_FALSE(p.connection_bound);
  d.max_connections = 50;
  CapacitySearch few(d, load);
  p = *few.next();
  EXPECT_EQ(p.connections, 50u);
  EXPECT_TRUE(p.connection_bound);
  auto rep = repetition(p, Answer{30.0, false});
  few.record(&rep, "");
  EXPECT_NE(few.steps()[0].why.find("connection-bound: 50 connections"), std::string::npos)
      << few.steps()[0].why;
  // h2/h3: streams grow on the scenario's connections first.
  load.multiplexed = true;
  d.max_connections = 0;
  CapacitySearch h2(d, load);
  p = *h2.next();
  EXPECT_EQ(p.connections, 4u);
  EXPECT_EQ(p.streams, 25u);
  // A whole search whose limit is its connections: 50 allowed, p99 10 ms, a server that
  // would hold anything: the steps that needed more than 50 fail (connections ÷ latency
  // caps the rate near 5000 req/s), and the search says the connections were the limit.
  auto few_allowed = def(100, 20000, 2);
  few_allowed.max_connections = 50;
  load.multiplexed = false;
  auto bound = run(
      few_allowed,
      [](const StepPlan& p) {
        const bool enough = !p.connection_bound || p.rate <= 5000;
        return Answer{enough ? 2.0 : 30.0, enough};
      },
      load);
  EXPECT_EQ(bound.end(), CapacitySearch::End::kConnectionBound) << bound.reason();
  EXPECT_NE(bound.reason().find("search.max_connections"), std::string::npos) << bound.reason();
  // Only an error rate in the SLO: the request timeout bounds the latency.
  d.slo = {{"errors_pct", 0.1}};
  EXPECT_DOUBLE_EQ(latency_bound_s(d, 2.5), 2.5);
}

// Connections follow the latency measured: after a step passes at p99 2 ms (from the write),
// the next opens what twice that needs (with a Poisson margin), not what the objective's bound
// would, so a looser objective opens no more connections at the same rate. A step short of
// them (its figures from the write hold the SLO; the requests waited in the client) is
// measured again with the bound's, and the search goes on as if it had been measured so.
TEST(CapacitySearch, ConnectionsFollowTheLatencyMeasuredAndAShortStepIsMeasuredAgain) {
  // A server of 2 ms up to 40 000 req/s, 6 ms up to its cliff at 60 000. A step with fewer
  // connections than rate × 6 ms × 1.5 at 6 ms makes its requests wait in the client.
  auto server = [](const StepPlan& p) {
    if (p.rate >= 60000) return Answer{80.0, true};
    const double ms = p.rate < 40000 ? 2.0 : 6.0;
    Answer a{ms, true};
    if (p.connections < p.rate * ms / 1000 * 1.5) a = Answer{50.0, true, false, false, ms};
    return a;
  };
  auto d = def(1000, 500000, 2);
  auto s = run(d, server);
  EXPECT_EQ(s.end(), CapacitySearch::End::kFound) << s.reason();
  EXPECT_LT(s.capacity(), 60000);
  EXPECT_GT(s.capacity(), 60000 / 1.02);
  // The first step knows no latency: the bound's, 1000 req/s × 10 ms.
  EXPECT_EQ(s.steps()[0].plan.connections, 10u);
  EXPECT_TRUE(s.steps()[0].plan.full);
  // 32 000 req/s after a pass at 2 ms: 128 in flight at 4 ms, plus 3 × sqrt(128), not 320.
  ASSERT_EQ(s.steps()[5].plan.rate, 32000);
  EXPECT_EQ(s.steps()[5].plan.connections, 162u);
  EXPECT_FALSE(s.steps()[5].plan.full);
  EXPECT_FALSE(s.steps()[5].plan.connection_bound);
  // The ramp's 64 000 fails from the write (the server's queue); the bisection's 48 000 is
  // short of connections at 6 ms, and measured again with 48 000 × 10 ms.
  ASSERT_EQ(s.steps()[6].plan.rate, 64000);
  EXPECT_EQ(s.steps()[6].verdict, StepVerdict::kFail);
  ASSERT_EQ(s.steps()[7].plan.rate, 48000);
  EXPECT_EQ(s.steps()[7].verdict, StepVerdict::kConnectionShort);
  EXPECT_FALSE(s.steps()[7].counted);
  EXPECT_NE(s.steps()[7].why.find("requests waited for one of 234 connections"), std::string::npos)
      << s.steps()[7].why;
  EXPECT_EQ(s.steps()[8].plan.rate, 48000);
  EXPECT_EQ(s.steps()[8].plan.connections, 480u);
  EXPECT_TRUE(s.steps()[8].plan.full);
  EXPECT_EQ(s.steps()[8].verdict, StepVerdict::kPass);
  EXPECT_LE(s.counted_steps(), CapacitySearch::max_steps(d));
  // A four times looser objective: the same connections at every rate below the knee.
  auto loose = d;
  loose.slo = {{"p99_ms", 40}};
  auto l = run(loose, server);
  for (size_t i = 1; i < 6; ++i) {
    ASSERT_EQ(l.steps()[i].plan.rate, s.steps()[i].plan.rate);
    EXPECT_EQ(l.steps()[i].plan.connections, s.steps()[i].plan.connections) << i;
  }
  // A failure from the write is the server's, whatever the connections: not measured again.
  for (const auto& st : s.steps())
    if (st.plan.rate >= 60000) EXPECT_EQ(st.verdict, StepVerdict::kFail);
}

// A server at its CPUs that could not hold the rate is overloaded: its requests waited in the
// client only because each connection held one while the server queued. More connections
// would queue them in the server instead, so the step fails without being measured again.
TEST(CapacitySearch, AnOverloadedServerIsNotShortOfConnections) {
  auto step = [](double server_cpu_pct, bool held, const std::string& cpus) {
    CapacitySearch s(def(1000, 500000, 2), {});
    auto pass = repetition(*s.next(), Answer{2.0});
    s.record(&pass, "");  // 1000 req/s at 2 ms: the next step is sized for 4 ms
    auto p = *s.next();
    EXPECT_FALSE(p.full);
    auto rep = repetition(p, Answer{50.0, held, false, false, 6.0, server_cpu_pct});
    rep.mutable_server()->set_cpus(cpus);
    s.record(&rep, "");
    return s.steps().back();
  };
  auto overloaded = step(97, false, "1");
  EXPECT_EQ(overloaded.verdict, StepVerdict::kFail);
  EXPECT_TRUE(overloaded.counted);
  EXPECT_NE(overloaded.why.find("the server at 97 % CPU of its CPUs 1: overloaded"), std::string::npos)
      << overloaded.why;
  // Not pinned: 90 % of the machine's two cores.
  EXPECT_EQ(step(185, false, "").verdict, StepVerdict::kFail);
  EXPECT_EQ(step(150, false, "").verdict, StepVerdict::kConnectionShort);
  // CPU to spare, or the rate held (a pause, a burst): measured again with every connection.
  EXPECT_EQ(step(60, false, "1").verdict, StepVerdict::kConnectionShort);
  EXPECT_EQ(step(97, true, "1").verdict, StepVerdict::kConnectionShort);
}

TEST(CapacitySearch, AStepThatCouldNotBeMeasuredEndsTheSearch) {
  CapacitySearch s(def(100, 1000, 2), {});
  s.record(nullptr, "measure: the target exited (status 1)");
  EXPECT_EQ(s.end(), CapacitySearch::End::kFailed);
  EXPECT_FALSE(s.next());
  EXPECT_NE(s.reason().find("the target exited"), std::string::npos);
}

TEST(CapacitySearch, FiguresAreTheCorrectedLatencyAndTheErrorRate) {
  v1::Repetition r;
  EXPECT_FALSE(slo_value(r, "p99_ms"));  // nothing measured
  r.set_requests(2000);
  r.set_errors(3);
  r.mutable_latency()->set_p99_us(12345);
  r.mutable_latency()->set_p999_us(20000);
  EXPECT_DOUBLE_EQ(slo_value(r, "p99_ms").value_or(0), 12.345);
  EXPECT_DOUBLE_EQ(slo_value(r, "p999_ms").value_or(0), 20);
  EXPECT_DOUBLE_EQ(slo_value(r, "errors_pct").value_or(0), 0.15);
}

}  // namespace
}  // namespace loadlab::controller
