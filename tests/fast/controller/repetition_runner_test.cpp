// One repetition's protocol against fake agents (gRPC's generated stub mock, in-memory
// streams) in simulated time: the order of the marks, a phase deadline, a target lost
// mid-window.
#include "lab/repetition_runner.hpp"

#include <gtest/gtest.h>

#include <future>

#include "fake_agent.hpp"
#include "load_result_fixture.hpp"
#include "simulated_clock.hpp"

namespace loadlab::controller {
namespace {

using namespace std::chrono_literals;
using fake::FakeAgent;
using fake::LoadStream;
using fake::TargetStream;

Scenario scenario() {
  return parse_scenario(nlohmann::json::parse(R"({"name": "s",
      "targets": [{"name": "b", "builtin": "hello"}],
      "matrix": {"delay_ms": [0], "threads": [2]},
      "load": {"requests_per_thread": 100, "warmup_s": 1}})"));
}

std::vector<v1::Mark::Kind> marks(const std::vector<v1::TargetCommand>& written) {
  std::vector<v1::Mark::Kind> kinds;
  for (auto& c : written)
    if (c.has_mark()) kinds.push_back(c.mark().kind());
  return kinds;
}

// A target agent that starts the target, answers the final mark with the window's usage
// and stops the target when the stream is closed.
void well_behaved_target(TargetStream& t) {
  t.on_write = [](const v1::TargetCommand& cmd, TargetStream& t) {
    if (cmd.has_spec()) t.send(fake::ready("127.0.0.1:9000", 7));
    if (cmd.has_mark() && cmd.mark().kind() == v1::Mark::FINAL) t.send(fake::target_usage(42));
  };
  t.on_writes_done = [](TargetStream& t) {
    t.send(fake::exited(0, 0, ""));
    t.end();
  };
}

// Counts the live progress reports, so that the test knows what the repetition has handled.
class ProgressSeen {
 public:
  ProgressFn fn() {
    return [this](const LiveProgress&) {
      std::lock_guard lock(mutex_);
      ++count_;
      cv_.notify_all();
    };
  }
  bool wait_for(int n) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, 5s, [&] { return count_ >= n; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int count_ = 0;
};

// The first stream `streams()` lists, once the controller has opened it.
template <class F>
auto first_opened(F streams) {
  for (auto t0 = std::chrono::steady_clock::now(); std::chrono::steady_clock::now() - t0 < 5s;) {
    auto list = streams();
    if (!list.empty()) return list.front();
    std::this_thread::sleep_for(1ms);
  }
  throw std::runtime_error("the controller did not open the stream");
}

// A target agent "srv" and a load agent "cli", and one repetition of the scenario's cell on
// them, run on its own thread.
class RepetitionTest : public ::testing::Test {
 protected:
  void start() {
    options.clock = &clock;
    options.cancel = fake::canceller({&srv, &cli});
    options.progress = progress.fn();
    placement.target = {"srv", srv_stub.get(), 4};
    placement.loads = {{"cli", cli_stub.get(), 2}};
    run = std::async(std::launch::async, [this] { return run_repetition(placement, s, cell, options); });
  }
  // The streams, once the controller has opened them.
  TargetStream& target() {
    return *first_opened([&] { return srv.targets(); });
  }
  LoadStream& load() {
    return *first_opened([&] { return cli.loads(); });
  }
  bool running() { return run.wait_for(50ms) == std::future_status::timeout; }
  // The repetition's outcome; a repetition that hangs fails the test instead of hanging it.
  v1::Repetition outcome() {
    if (run.wait_for(10s) == std::future_status::timeout) {
      ADD_FAILURE() << "the repetition did not end";
      srv.cancel_all();
      cli.cancel_all();
    }
    return run.get();
  }
  // The CellError the repetition fails with.
  CellError failure() {
    try {
      outcome();
    } catch (const CellError& e) {
      return e;
    }
    ADD_FAILURE() << "the repetition did not fail";
    return CellError("none", "");
  }

  Scenario s = scenario();
  Cell cell = expand(s)[0];
  FakeAgent srv{"srv"}, cli{"cli"};
  std::unique_ptr<v1::Agent::StubInterface> srv_stub = srv.stub(), cli_stub = cli.stub();
  SimulatedClock clock;
  ProgressSeen progress;
  RepetitionOptions options;

 private:
  Placement placement;
  std::future<v1::Repetition> run;
};

TEST_F(RepetitionTest, TheWindowOpensOnMeasureStartAndClosesAfterTheResult) {
  srv.on_host_target = well_behaved_target;
  cli.on_run_load = [](LoadStream& l) {
    l.on_writes_done = [](LoadStream& l) { l.send(fake::progress(true, 10)); };
  };
  start();
  ASSERT_TRUE(progress.wait_for(1));  // warming up
  EXPECT_TRUE(marks(target().written()).empty());
  // The load worker sends its spec's endpoint the target agent reported.
  ASSERT_EQ(load().written().size(), 1u);
  EXPECT_EQ(load().written()[0].spec().endpoint(), "127.0.0.1:9000");
  EXPECT_TRUE(load().writes_done());

  load().send(fake::measure_start());
  ASSERT_TRUE(target().wait_written([](auto& w) { return !marks(w).empty(); }));
  load().send(fake::progress(false, 50));
  ASSERT_TRUE(progress.wait_for(2));  // measuring: still no final mark before the result
  EXPECT_EQ(marks(target().written()), (std::vector<v1::Mark::Kind>{v1::Mark::RESET}));

  load().send(fake::load_result(part({100, 200, 300}, 3)));
  load().send(fake::load_usage(150));
  load().end();
  v1::Repetition rep = outcome();
  EXPECT_EQ(marks(target().written()), (std::vector<v1::Mark::Kind>{v1::Mark::RESET, v1::Mark::FINAL}));
  for (auto& c : target().written()) {
    if (c.has_mark()) {
      EXPECT_EQ(c.mark().label(), cell.key());
    }
  }
  EXPECT_TRUE(target().writes_done());  // the target is stopped by closing its stream
  EXPECT_EQ(rep.requests(), 3u);
  EXPECT_DOUBLE_EQ(rep.server().cpu_pct(), 42);
  EXPECT_DOUBLE_EQ(rep.client().cpu_pct(), 150);
  EXPECT_EQ(rep.target_startup_ms(), 7u);
  EXPECT_EQ(rep.target_agent(), "srv");
  ASSERT_EQ(rep.load_parts_size(), 1);
  EXPECT_EQ(rep.load_parts(0).agent(), "cli");
  EXPECT_EQ(rep.load_parts(0).threads(), 2u);
}

// A load agent whose worker did not pace with the cell's granularity (an agent older than the
// field drops it) fails the repetition: its figures are not the granular cell's.
TEST_F(RepetitionTest, ALoadPacedWithoutTheCellsGranularityFailsTheRepetition) {
  s = parse_scenario(nlohmann::json::parse(R"({"name": "s", "targets": [{"name": "b", "builtin": "hello"}],
      "matrix": {"threads": [2]}, "load": {"duration_s": 1, "rate": 100, "pace_granularity_us": 500}})"));
  cell = expand(s)[0];
  srv.on_host_target = well_behaved_target;
  cli.on_run_load = [](LoadStream& l) {
    l.on_writes_done = [](LoadStream& l) { l.send(fake::progress(true, 10)); };
  };
  start();
  ASSERT_TRUE(progress.wait_for(1));
  ASSERT_EQ(load().written().size(), 1u);
  EXPECT_EQ(load().written()[0].spec().pace_granularity_us(), 500);
  load().send(fake::measure_start());
  ASSERT_TRUE(target().wait_written([](auto& w) { return !marks(w).empty(); }));
  load().send(fake::load_result(part({100, 200, 300}, 3)));  // paced with 0
  load().send(fake::load_usage(150));
  load().end();
  const CellError e = failure();
  EXPECT_EQ(
      std::string(e.what()),
      "measure: load agent cli paced with a granularity of 0 µs, not the 500 µs asked (an agent older than "
      "pace_granularity_us paces each slot at its time)");
}

TEST_F(RepetitionTest, APhaseDeadlineFiresOnTheClockAndNamesThePhase) {
  srv.on_host_target = well_behaved_target;
  // A load worker that never gets past its warmup.
  cli.on_run_load = [](LoadStream& l) {
    l.on_writes_done = [](LoadStream& l) { l.send(fake::progress(true, 10)); };
  };
  start();
  ASSERT_TRUE(progress.wait_for(1));
  clock.advance(30s);  // warmup_s 1 + warmup_extra_s 30: not yet
  EXPECT_TRUE(running());
  clock.advance(2s);
  CellError e = failure();
  EXPECT_EQ(e.phase(), "warmup");
  EXPECT_STREQ(e.what(), "warmup: phase 'warmup' ran out after 31 s");
  EXPECT_EQ(e.code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_TRUE(load().cancelled());
  EXPECT_TRUE(target().cancelled());
}

TEST_F(RepetitionTest, ATargetStreamThatEndsMidWindowFailsTheRepetitionWithAReason) {
  // The target agent vanishes once the window has opened (its stream fails on keepalive).
  srv.on_host_target = [](TargetStream& t) {
    t.on_write = [](const v1::TargetCommand& cmd, TargetStream& t) {
      if (cmd.has_spec()) t.send(fake::ready("127.0.0.1:9000", 7));
      if (cmd.has_mark() && cmd.mark().kind() == v1::Mark::RESET)
        t.end(grpc::Status(grpc::StatusCode::UNAVAILABLE, "Socket closed"));
    };
  };
  cli.on_run_load = [](LoadStream& l) {
    l.on_writes_done = [](LoadStream& l) { l.send(fake::measure_start()); };
  };
  start();
  CellError e = failure();
  EXPECT_EQ(e.phase(), "measure");
  EXPECT_STREQ(e.what(), "measure: target agent srv lost: the stream ended");
  EXPECT_EQ(e.code(), grpc::StatusCode::UNKNOWN);  // another agent may do: retried
  EXPECT_TRUE(load().cancelled());                 // the load is not left running
}

TEST_F(RepetitionTest, ATargetThatExitsMidWindowFailsTheRepetitionWithItsExitAndOutput) {
  srv.on_host_target = [](TargetStream& t) {
    t.on_write = [](const v1::TargetCommand& cmd, TargetStream& t) {
      if (cmd.has_spec()) t.send(fake::ready("127.0.0.1:9000", 7));
      if (cmd.has_mark() && cmd.mark().kind() == v1::Mark::RESET)
        t.send(fake::exited(-1, 9, "out of memory"));
    };
  };
  cli.on_run_load = [](LoadStream& l) {
    l.on_writes_done = [](LoadStream& l) { l.send(fake::measure_start()); };
  };
  start();
  CellError e = failure();
  EXPECT_STREQ(e.what(), "measure: target exited (killed by signal 9): out of memory");
  EXPECT_TRUE(load().cancelled());
  EXPECT_TRUE(target().cancelled());
}

}  // namespace
}  // namespace loadlab::controller
