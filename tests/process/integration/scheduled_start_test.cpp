// A scheduled start (issue 28): a load worker that warms up, says it is ready and goes on
// loading unmeasured until it is told the instant its window opens; and the agent that tells
// it, in its own clock, after echoing the controller's clock probes. On one machine every
// clock is CLOCK_MONOTONIC, so the truth is known: the instant sent is the instant read back.
#include <gtest/gtest.h>
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "delay_proxy.hpp"
#include "loadlab/agent/agent_service.hpp"
#include "loadlab/proto/json.hpp"
#include "scheduled_start_support.hpp"
#include "test_support.hpp"

namespace loadlab {
namespace {

using namespace std::chrono_literals;
using testing::bin;
using testing::DelayTarget;
using namespace scheduled_start_support;

// The intended send times (µs from the window's opening) of a --csv-requests file.
std::vector<long long> csv_starts(const std::filesystem::path& file) {
  std::vector<long long> starts;
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    std::stringstream fields(line);
    std::string field;
    for (int i = 0; i < 4 && std::getline(fields, field, ','); ++i) {
    }
    starts.push_back(std::stoll(field));
  }
  return starts;
}

// Two workers of one cell's open loop (--pace-share 0/4 and 2/4: two threads each, 100
// requests/s a thread), started 137 ms apart, so each paces from its own start while it warms
// up: told one instant, both pace from it on one grid, and the cell's send times are one even
// pace of 400 a second. Without the anchor the two grids were apart by whatever their starts
// were, and the gaps anything from 0 to 5 ms.
TEST(ScheduledStart, WorkersOfOneCellPaceOneEvenGridFromTheInstant) {
  DelayTarget target(1);
  ASSERT_FALSE(target.endpoint().empty());
  testing::TempDir dir;
  std::vector<std::unique_ptr<agent::ChildProcess>> workers;
  for (int part = 0; part < 2; ++part) {
    if (part) std::this_thread::sleep_for(137ms);
    workers.push_back(agent::ChildProcess::spawn(
        {bin("loadlab-load"), "http://" + target.endpoint() + "/", "-t", "2", "-c", "2", "--rate", "200",
         "-d", "1", "--warmup", "0.2", "--start-on-signal", "--json-events", "--pace-share",
         std::to_string(2 * part) + "/4", "--csv-requests",
         (dir.path() / ("part" + std::to_string(part))).string()}));
  }
  for (auto& w : workers) ASSERT_TRUE(next_event(*w, 10s).has_ready()) << w->output_tail();
  const int64_t at = monotonic_ns() + 200'000'000;
  sigval value{};
  value.sival_ptr = reinterpret_cast<void*>(static_cast<intptr_t>(at));
  for (auto& w : workers) ASSERT_TRUE(w->queue_signal(SIGUSR1, value)) << strerror(errno);
  std::vector<long long> starts;
  for (int part = 0; part < 2; ++part) {
    ASSERT_TRUE(next_event(*workers[part], 5s).has_measure_start()) << workers[part]->output_tail();
    auto result = next_event(*workers[part], 5s);
    ASSERT_TRUE(result.has_result()) << workers[part]->output_tail();
    EXPECT_EQ(result.result().window_open_ns(), at);
    EXPECT_FALSE(result.result().rate_not_held());
    EXPECT_EQ(result.result().errors(), 0u);
    auto status = workers[part]->wait_exit(5s);
    ASSERT_TRUE(status);
    EXPECT_EQ(status->code, 0);
    auto part_starts = csv_starts(dir.path() / ("part" + std::to_string(part)));
    starts.insert(starts.end(), part_starts.begin(), part_starts.end());
  }
  std::sort(starts.begin(), starts.end());
  ASSERT_GE(starts.size(), 390u);
  EXPECT_LE(starts.front(), 2500);  // the grid from the instant: its first slot within 2.5 ms
  size_t even = 0;
  for (size_t i = 1; i < starts.size(); ++i) even += std::abs(starts[i] - starts[i - 1] - 2500) <= 2;
  EXPECT_GE(even, (starts.size() - 1) * 99 / 100)
      << even << " of " << starts.size() - 1 << " gaps are 2.5 ms";
}

TEST(ScheduledStart, AWorkerToldAnInstantThatHasPassedOpensAtOnceAndNeedsADuration) {
  DelayTarget target(2);
  ASSERT_FALSE(target.endpoint().empty());
  auto worker = agent::ChildProcess::spawn({bin("loadlab-load"), "http://" + target.endpoint() + "/", "-c",
                                            "2", "-d", "0.5", "--start-on-signal", "--json-events"});
  ASSERT_TRUE(next_event(*worker, 10s).has_ready()) << worker->output_tail();
  const int64_t before = monotonic_ns();
  sigval value{};
  value.sival_ptr = reinterpret_cast<void*>(static_cast<intptr_t>(before - 5'000'000'000));
  ASSERT_TRUE(worker->queue_signal(SIGUSR1, value));
  ASSERT_TRUE(next_event(*worker, 5s).has_measure_start());
  auto result = next_event(*worker, 5s);
  ASSERT_TRUE(result.has_result());
  EXPECT_GE(result.result().window_open_ns(), before);
  EXPECT_DOUBLE_EQ(result.result().duration_s(), 0.5);

  auto counted =
      testing::run_command({bin("loadlab-load"), "http://127.0.0.1:9/", "-n", "10", "--start-on-signal"});
  EXPECT_EQ(counted.code, 2);
  EXPECT_NE(counted.output_tail.find("--start-on-signal"), std::string::npos) << counted.output_tail;
}

// An in-process agent whose clock is made to read 200 ms ahead of the machine's.
class OffsetAgent {
 public:
  explicit OffsetAgent(int64_t offset_ns) {
    agent::AgentOptions options;
    options.name = "offset";
    options.bin_dir = LOADLAB_BIN_DIR;
    options.test_clock_offset_ns = offset_ns;
    options.catalog = agent::Catalog::parse({{"clients", {{"wrk", {{"tool", "wrk"}}}}}});
    server_ = std::make_unique<agent::AgentServer>(options);
    stub_ = v1::Agent::NewStub(
        grpc::CreateChannel(server_->start("127.0.0.1:0"), grpc::InsecureChannelCredentials()));
  }
  ~OffsetAgent() { server_->shutdown(0); }
  v1::Agent::Stub& stub() { return *stub_; }

 private:
  std::unique_ptr<agent::AgentServer> server_;
  std::unique_ptr<v1::Agent::Stub> stub_;
};

TEST(ScheduledStart, TheAgentEchoesProbesInItsClockAndStartsTheWorkerAtTheInstantInIt) {
  DelayTarget target(10);
  ASSERT_FALSE(target.endpoint().empty());
  const int64_t offset = 200'000'000;
  OffsetAgent agent(offset);
  grpc::ClientContext ctx;
  auto stream = agent.stub().RunLoad(&ctx);
  v1::LoadCommand cmd;
  auto* spec = cmd.mutable_spec();
  spec->set_endpoint(target.endpoint());
  spec->set_threads(1);
  spec->set_connections(4);
  spec->set_keep_alive(true);
  spec->set_duration_s(1);
  spec->set_warmup_s(0.2);
  spec->set_scheduled_start(true);
  ASSERT_TRUE(stream->Write(cmd));

  v1::LoadEvent ev;
  // Probes while it warms up: each echo is the agent's clock, 200 ms off the machine's, within
  // the round trip.
  for (int i = 0; i < 3; ++i) {
    v1::LoadCommand probe;
    const int64_t sent = monotonic_ns();
    probe.mutable_clock_probe()->set_controller_ns(sent);
    ASSERT_TRUE(stream->Write(probe));
    do ASSERT_TRUE(stream->Read(&ev));
    while (ev.has_progress());
    const int64_t back = monotonic_ns();
    ASSERT_TRUE(ev.has_clock_echo()) << proto::to_json(ev);
    EXPECT_EQ(ev.clock_echo().controller_ns(), sent);
    EXPECT_GE(ev.clock_echo().received_ns() - offset, sent);
    EXPECT_LE(ev.clock_echo().sent_ns() - offset, back);
    EXPECT_LE(ev.clock_echo().received_ns(), ev.clock_echo().sent_ns());
  }
  do ASSERT_TRUE(stream->Read(&ev));
  while (ev.has_progress());
  ASSERT_TRUE(ev.has_ready()) << proto::to_json(ev);
  EXPECT_GE(ev.ready().agent_ns() - offset, monotonic_ns() - 1'000'000'000);
  EXPECT_LE(ev.ready().agent_ns() - offset, monotonic_ns());

  // The instant in the agent's clock; the worker opens at the machine's (the offset taken off)
  // and the result says it in the agent's again.
  const int64_t at_machine = monotonic_ns() + 300'000'000;
  v1::LoadCommand start;
  start.mutable_start_at()->set_agent_ns(at_machine + offset);
  ASSERT_TRUE(stream->Write(start));
  stream->WritesDone();
  std::optional<int64_t> start_seen;
  v1::LoadResult result;
  while (stream->Read(&ev)) {
    if (ev.has_measure_start()) start_seen = monotonic_ns();
    if (ev.has_result()) result = ev.result();
  }
  auto status = stream->Finish();
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_TRUE(start_seen);
  EXPECT_GE(*start_seen, at_machine);
  EXPECT_LE(*start_seen - at_machine, 100'000'000);
  EXPECT_EQ(result.window_open_ns(), at_machine + offset);
  EXPECT_EQ(result.window_close_ns(), at_machine + offset + 1'000'000'000);
  expect_delay_bound_qps(result.qps(), 4, 10);
}

TEST(ScheduledStart, AnExternalClientCannotWaitForOne) {
  OffsetAgent agent(0);
  grpc::ClientContext ctx;
  auto stream = agent.stub().RunLoad(&ctx);
  v1::LoadCommand cmd;
  auto* spec = cmd.mutable_spec();
  spec->set_endpoint("127.0.0.1:9");
  spec->set_client("wrk");
  spec->set_threads(1);
  spec->set_connections(1);
  spec->set_duration_s(1);
  spec->set_scheduled_start(true);
  stream->Write(cmd);
  stream->WritesDone();
  v1::LoadEvent ev;
  while (stream->Read(&ev)) {
  }
  auto status = stream->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("scheduled_start"), std::string::npos) << status.error_message();
}

}  // namespace
}  // namespace loadlab
