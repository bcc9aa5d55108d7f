// One set of limits: every limit of shared/limits.hpp at its edge passes the scenario
// checker, the agent's spec checks and the worker's own flag check; one step past it is
// refused by `loadlab validate`'s checker, with the JSON path, before any agent sees it.
#include "loadlab/shared/limits.hpp"

#include <gtest/gtest.h>

#include <string>

#include "loadlab/agent/agent_service.hpp"
#include "loadlab/controller/cell_specs.hpp"
#include "loadlab/controller/plan.hpp"
#include "loadlab/controller/scenario.hpp"
#include "loadlab/load/load_spec.hpp"
#include "loadlab/shared/json_input.hpp"

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

}  // namespace
}  // namespace loadlab
