// Placement over fake agents: one eligibility check for the pre-run check and for every
// attempt; retries rotate over the eligible agents.
#include "loadlab/controller/agent_pool.hpp"

#include <gtest/gtest.h>

#include "fake_agent.hpp"
#include "loadlab/controller/errors.hpp"
#include "loadlab/shared/json_input.hpp"

namespace loadlab::controller {
namespace {

using fake::FakeAgent;

Scenario scenario(const std::string& target, const std::string& placement = "{}") {
  return parse_scenario(nlohmann::json::parse(R"({"name": "s", "targets": [)" + target + R"(],
      "matrix": {"delay_ms": [0], "threads": [2]}, "load": {"requests_per_thread": 1},
      "placement": )" + placement + "}"));
}

// A lab of fake agents, each added with its roles.
class AgentPoolTest : public ::testing::Test {
 protected:
  void add(FakeAgent& a, const std::string& name, std::vector<std::string> roles,
           std::vector<std::pair<std::string, std::string>> labels = {}) {
    agents[name] = &a;
    pool.add({name, "fake:" + name, std::move(roles), std::move(labels)}, 1);
  }
  static std::string target_of(const Placement& p) { return p.target.name; }
  static std::vector<std::string> loads_of(const Placement& p) {
    std::vector<std::string> names;
    for (auto& l : p.loads) names.push_back(l.name);
    return names;
  }

  std::map<std::string, FakeAgent*> agents;
  AgentPool pool{[this](const AgentDef& def) { return AgentStub{nullptr, agents.at(def.name)->stub()}; }};
};

TEST_F(AgentPoolTest, ARetryGoesToTheNextEligibleTargetAndLoadAgents) {
  FakeAgent srv1{"srv1"}, srv2{"srv2"}, cli1{"cli1"}, cli2{"cli2"};
  add(srv1, "srv1", {"target"});
  add(srv2, "srv2", {"target"});
  add(cli1, "cli1", {"load"});
  add(cli2, "cli2", {"load"});
  auto s = scenario(R"({"name": "b", "builtin": "hello"})");
  pool.check(s);
  auto first = pool.place(s, s.targets[0], "loadlab", 0), second = pool.place(s, s.targets[0], "loadlab", 1);
  EXPECT_EQ(target_of(first), "srv1");
  EXPECT_EQ(loads_of(first), (std::vector<std::string>{"cli1"}));
  EXPECT_EQ(target_of(second), "srv2");
  EXPECT_EQ(loads_of(second), (std::vector<std::string>{"cli2"}));
  EXPECT_EQ(first.target.cores, 4u);  // from Describe
}

TEST_F(AgentPoolTest, AnAgentThatDidNotAnswerOrCannotHostTheTargetIsNeverPlaced) {
  FakeAgent down{"down"}, go{"go", {"go-nethttp"}}, beast{"beast"}, cli{"cli"};
  down.describe_status = grpc::Status(grpc::StatusCode::UNAVAILABLE, "connection refused");
  add(down, "down", {"target"});
  add(go, "go", {"target"});
  add(beast, "beast", {"target"});
  add(cli, "cli", {"load"});
  EXPECT_FALSE(pool.agents()[0]->reachable());
  EXPECT_EQ(pool.agents()[0]->error, "cannot reach agent down at fake:down: connection refused");
  auto s = scenario(R"({"name": "b", "builtin": "hello"})");
  for (uint32_t attempt = 0; attempt < 4; ++attempt)
    EXPECT_EQ(target_of(pool.place(s, s.targets[0], "loadlab", attempt)), "beast");
  // A target no agent's catalog holds is the scenario's error, named by its JSON path.
  auto missing = scenario(R"({"name": "j", "catalog": "jetty"})");
  try {
    pool.check(missing);
    ADD_FAILURE() << "no agent can host jetty";
  } catch (const InputError& e) {
    EXPECT_EQ(e.path(), "/targets/0/catalog");
    EXPECT_NE(std::string(e.what()).find("go:go-nethttp"), std::string::npos) << e.what();
  }
}

TEST_F(AgentPoolTest, TheTargetsAgentRunsNoLoadUnlessTheScenarioShares) {
  FakeAgent both{"both"}, srv{"srv"};
  add(both, "both", {"target", "load"});
  add(srv, "srv", {"target"});
  auto s = scenario(R"({"name": "b", "builtin": "hello"})");
  for (uint32_t attempt = 0; attempt < 3; ++attempt) {
    auto p = pool.place(s, s.targets[0], "loadlab", attempt);
    EXPECT_EQ(target_of(p), "srv");  // "both" as the target would leave no load agent
    EXPECT_EQ(loads_of(p), (std::vector<std::string>{"both"}));
  }
  auto shared = scenario(R"({"name": "b", "builtin": "hello"})", R"({"share_agents": true})");
  EXPECT_EQ(target_of(pool.place(shared, shared.targets[0], "loadlab", 0)), "both");
}

TEST_F(AgentPoolTest, ALabWithoutAReachableTargetAgentFailsBeforeAnyCell) {
  FakeAgent down{"down"}, cli{"cli"};
  down.describe_status = grpc::Status(grpc::StatusCode::UNAVAILABLE, "connection refused");
  add(down, "down", {"target"});
  add(cli, "cli", {"load"});
  auto s = scenario(R"({"name": "b", "builtin": "hello"})");
  try {
    pool.check(s);
    ADD_FAILURE() << "no target agent answered";
  } catch (const EnvironmentError& e) {
    EXPECT_STREQ(
        e.what(),
        "no reachable agent with role target; cannot reach agent down at fake:down: connection refused");
  }
}

}  // namespace
}  // namespace loadlab::controller
