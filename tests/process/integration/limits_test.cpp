// One set of limits: every limit of shared/limits.hpp at its edge passes the scenario
// checker, the agent's spec checks and the worker's own flag check; one step past it is
// refused by `loadlab validate`'s checker, with the JSON path, before any agent sees it. And the
// agent's own: its --max-duration-s and its gRPC server's message limit, over gRPC.
#include "loadlab/shared/limits.hpp"

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <string>

#include "lab/cell_specs.hpp"
#include "loadlab/agent/agent_service.hpp"
#include "loadlab/load/load_spec.hpp"
#include "loadlab/shared/json_input.hpp"
#include "loadlab/v1/agent.grpc.pb.h"
#include "scenario/plan.hpp"
#include "scenario/scenario.hpp"

namespace loadlab {
namespace {

using nlohmann::json;

json base() {
  return json::parse(R"({"name": "edges", "targets": [{"name": "t", "builtin": "hello"}],
                         "matrix": {"delay_ms": [0], "threads": [1]},
                         "load": {"requests_per_thread": 10}})");
}

// "" when `s` parses and every cell's specs pass the agent's and the worker's checks.
std::string check_all_layers(const json& s) {
  controller::Scenario scenario;
  try {
    scenario = controller::parse_scenario(s);
  } catch (const InputError& e) {
    return std::string("validate: ") + e.what();
  }
  std::string layer;
  try {
    for (const auto& cell : controller::expand(scenario)) {
      layer = "agent target: ";
      agent::validate_target_spec(controller::target_spec(scenario, cell));
      for (const auto& share : controller::split_load(scenario, cell, 1)) {
        auto spec = controller::load_spec(scenario, cell, share, "127.0.0.1:8080");
        layer = "agent/worker load: ";
        load::validate_spec(spec);
        auto options = load::options_from_spec(spec);
        layer = "worker: ";
        load::complete_and_validate(options);
      }
    }
  } catch (const InputError& e) {
    return layer + e.what();
  }
  return "";
}

struct Edge {
  std::string name;
  std::string at_edge;  // JSON merged into base()
  std::string past_edge;
  std::string path;  // the JSON path that the refusal names
};

class LimitsTest : public ::testing::TestWithParam<Edge> {};

TEST_P(LimitsTest, EdgePassesEveryLayerAndOnePastFailsAtValidateWithThePath) {
  json ok = base(), bad = base();
  ok.merge_patch(json::parse(GetParam().at_edge));
  bad.merge_patch(json::parse(GetParam().past_edge));
  EXPECT_EQ(check_all_layers(ok), "");
  std::string refused = check_all_layers(bad);
  EXPECT_EQ(refused.rfind("validate: " + GetParam().path + ":", 0), 0u) << refused;
}

template <typename T>
std::string n(T v) {
  return json(v).dump();
}
std::string load(const std::string& key, const std::string& value) {
  return R"({"load": {")" + key + R"(": )" + value + "}}";
}

std::vector<Edge> edges() {
  using namespace limits;
  const std::string body(kMaxBodyBytes, 'x');
  const std::string no_n = R"("requests_per_thread": null, )";
  return {
      {"threads", R"({"matrix": {"threads": [)" + n(kMaxThreads) + "]}}",
       R"({"matrix": {"threads": [)" + n(kMaxThreads + 1) + "]}}", "/matrix/threads/0"},
      {"connections_per_thread", load("connections_per_thread", n(kMaxConnectionsPerThread)),
       load("connections_per_thread", n(kMaxConnectionsPerThread + 1)), "/load/connections_per_thread"},
      {"connections",
       R"({"matrix": {"threads": [10]}, "load": {"connections_per_thread": )" + n(kMaxConnections / 10) +
           "}}",
       R"({"matrix": {"threads": [11]}, "load": {"connections_per_thread": )" + n(kMaxConnections / 10) +
           "}}",
       "/load/connections_per_thread"},
      {"requests", load("requests_per_thread", n(kMaxRequests)),
       load("requests_per_thread", n(kMaxRequests + 1)), "/load/requests_per_thread"},
      {"duration", R"({"load": {)" + no_n + R"("duration_s": )" + n(kMaxDurationS) + "}}",
       R"({"load": {)" + no_n + R"("duration_s": )" + n(kMaxDurationS + 1) + "}}", "/load/duration_s"},
      {"warmup", load("warmup_s", n(kMaxWarmupS)), load("warmup_s", n(kMaxWarmupS + 1)), "/load/warmup_s"},
      // Warm-up and duration together: one load's run, which the agent's --max-duration-s caps.
      {"warmup_and_duration",
       R"({"load": {)" + no_n + R"("warmup_s": )" + n(kMaxWarmupS) + R"(, "duration_s": )" +
           n(kMaxLoadRunS - kMaxWarmupS) + "}}",
       R"({"load": {)" + no_n + R"("warmup_s": )" + n(kMaxWarmupS) + R"(, "duration_s": )" +
           n(kMaxLoadRunS - kMaxWarmupS + 1) + "}}",
       "/load/duration_s"},
      {"timeout", load("timeout_ms", n(int64_t{kMaxTimeoutMs})),
       load("timeout_ms", n(int64_t{kMaxTimeoutMs} + 1)), "/load/timeout_ms"},
      {"rate_max", load("rate", n(kMaxRatePerThread)), load("rate", n(kMaxRatePerThread * 1.01)),
       "/load/rate"},
      {"rate_min", load("rate", n(kMinRatePerThread)), load("rate", n(kMinRatePerThread * 0.99)),
       "/load/rate"},
      {"body", load("body", json(body).dump()), load("body", json(body + "x").dump()), "/load/body"},
      {"method", load("method", json(std::string(kMaxMethodLength, 'M')).dump()),
       load("method", json(std::string(kMaxMethodLength + 1, 'M')).dump()), "/load/method"},
      {"delay", R"({"matrix": {"delay_ms": [)" + n(kMaxDelayMs) + "]}}",
       R"({"matrix": {"delay_ms": [)" + n(kMaxDelayMs + 1) + "]}}", "/matrix/delay_ms/0"},
      {"server_threads",
       R"({"targets": [{"name": "t", "builtin": "hello", "server_threads": )" + n(kMaxServerThreads) + "}]}",
       R"({"targets": [{"name": "t", "builtin": "hello", "server_threads": )" + n(kMaxServerThreads + 1) +
           "}]}",
       "/targets/0/server_threads"},
  };
}

INSTANTIATE_TEST_SUITE_P(Table, LimitsTest, ::testing::ValuesIn(edges()),
                         [](const auto& info) { return info.param.name; });

// A search step is a load run too: its window after the warm-up fits the same cap.
TEST(LimitsSearch, AStepWindowAndTheWarmUpFitOneRun) {
  auto searched = [](double validate_s) {
    return json::parse(R"({"name": "cap", "targets": [{"name": "b", "builtin": "hello"}],
        "matrix": {"delay_ms": [0]}, "load": {"threads": 1, "warmup_s": )" +
                       n(limits::kMaxWarmupS) + R"(},
        "search": {"slo": {"p99_ms": 10}, "rate": {"min": 100, "max": 1000}, "validate_s": )" +
                       n(validate_s) + "}}");
  };
  auto refusal = [](const json& s) {
    try {
      controller::parse_scenario(s);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(refusal(searched(limits::kMaxLoadRunS - limits::kMaxWarmupS)), "");
  EXPECT_EQ(refusal(searched(limits::kMaxLoadRunS - limits::kMaxWarmupS + 1)),
            "/search/validate_s: 82801 s with /load/warmup_s's 3600 s is a run of 86401 s, over the "
            "limit of 86400 s for a load's warm-up and duration together");
}

// The agent over gRPC on 127.0.0.1:0, with its own limits: what a caller reaches.
class AgentGrpcLimits : public ::testing::Test {
 protected:
  void start(agent::AgentOptions o) {
    o.bin_dir = LOADLAB_BIN_DIR;
    server_ = std::make_unique<agent::AgentServer>(std::move(o));
    stub_ = v1::Agent::NewStub(
        grpc::CreateChannel(server_->start("127.0.0.1:0"), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    if (server_) server_->shutdown(0);
  }
  // Sends `spec` on a RunLoad stream and returns how the call ended (a load that runs is ended
  // by the deadline: a refusal comes at once).
  grpc::Status run_load(const v1::LoadSpec& spec) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    auto stream = stub_->RunLoad(&ctx);
    v1::LoadCommand cmd;
    *cmd.mutable_spec() = spec;
    stream->Write(cmd);
    stream->WritesDone();
    for (v1::LoadEvent ev; stream->Read(&ev);) {
    }
    return stream->Finish();
  }
  static v1::LoadSpec load(double warmup_s, double duration_s) {
    v1::LoadSpec s;
    s.set_endpoint("127.0.0.1:9");
    s.set_threads(1);
    s.set_warmup_s(warmup_s);
    if (duration_s > 0) s.set_duration_s(duration_s);
    return s;
  }
  std::unique_ptr<agent::AgentServer> server_;
  std::unique_ptr<v1::Agent::Stub> stub_;
};

// --max-duration-s caps a load's whole run: a warm-up that would stretch it past the cap is
// refused before anything runs, naming both fields and the flag.
TEST_F(AgentGrpcLimits, AWarmupThatStretchesTheRunPastMaxDurationIsRefused) {
  agent::AgentOptions o;
  o.limits.duration_s = 30;
  start(o);
  auto st = run_load(load(20, 20));
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << st.error_message();
  EXPECT_THAT(st.error_message(),
              ::testing::HasSubstr("warmup_s + duration_s: 20 + 20 = 40 is over this agent's limit of 30 "
                                   "(loadlab-agent --max-duration-s"));
  auto counted = load(31, 0);  // a count of requests: its warm-up alone is past the cap
  counted.set_total_requests(10);
  st = run_load(counted);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << st.error_message();
  EXPECT_THAT(st.error_message(), ::testing::HasSubstr("warmup_s: 31 is over this agent's limit of 30"));
}

// A message past the agent's receive limit ends its call RESOURCE_EXHAUSTED before the service
// reads it (a LoadSpec whose headers hold more than the limit); one within it is read.
TEST_F(AgentGrpcLimits, AMessageOverTheReceiveLimitIsResourceExhausted) {
  start(agent::AgentOptions{});
  auto big = load(0, 1);
  (*big.mutable_headers())["x-big"] = std::string(limits::kAgentMaxReceiveBytes, 'x');
  auto st = run_load(big);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << st.error_message();
  auto within = load(0, 1);  // the largest body a spec may carry
  within.set_method("POST");
  within.set_body(std::string(limits::kMaxBodyBytes, 'x'));
  st = run_load(within);
  EXPECT_NE(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << st.error_message();
}

}  // namespace
}  // namespace loadlab
