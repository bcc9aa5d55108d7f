// Placement over fake agents: one eligibility check for the pre-run check and for every
// attempt; retries rotate over the eligible agents.
#include "lab/agent_pool.hpp"

#include <gtest/gtest.h>

#include <set>

#include "core/errors.hpp"
#include "fake_agent.hpp"
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
  auto first = pool.place(s, expand(s)[0], 0), second = pool.place(s, expand(s)[0], 1);
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
    EXPECT_EQ(target_of(pool.place(s, expand(s)[0], attempt)), "beast");
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
    auto p = pool.place(s, expand(s)[0], attempt);
    EXPECT_EQ(target_of(p), "srv");  // "both" as the target would leave no load agent
    EXPECT_EQ(loads_of(p), (std::vector<std::string>{"both"}));
  }
  auto shared = scenario(R"({"name": "b", "builtin": "hello"})", R"({"share_agents": true})");
  EXPECT_EQ(target_of(pool.place(shared, expand(shared)[0], 0)), "both");
}

// Each agent says what its targets serve and its clients speak; a cell goes to agents that
// do, and one no agent serves is refused before anything runs, naming the cell.
TEST_F(AgentPoolTest, ACellGoesToAgentsThatServeItsProtocolAndOneNoneServesIsRefused) {
  FakeAgent plain{"plain"}, tls{"tls"}, cli{"cli"}, old{"old"};
  (*tls.info().mutable_target_protocols())["hello"].add_protocols(v1::PROTOCOL_HTTP1);
  (*tls.info().mutable_target_protocols())["hello"].add_protocols(v1::PROTOCOL_HTTPS);
  (*plain.info().mutable_target_protocols())["hello"].add_protocols(v1::PROTOCOL_HTTP1);
  cli.info().add_clients("loadlab");
  (*cli.info().mutable_client_protocols())["loadlab"].add_protocols(v1::PROTOCOL_HTTP1);
  (*cli.info().mutable_client_protocols())["loadlab"].add_protocols(v1::PROTOCOL_HTTPS);
  add(plain, "plain", {"target"});
  add(tls, "tls", {"target"});
  add(cli, "cli", {"load"});
  auto s =
      parse_scenario(nlohmann::json::parse(R"({"name": "s", "targets": [{"name": "b", "builtin": "hello"}],
      "matrix": {"protocol": ["http1", "https"], "tls_version": ["1.2", "1.3"]}, "load": {"total_requests": 10}})"));
  pool.check(s);
  auto cells = expand(s);
  ASSERT_EQ(cells.size(), 4u);
  EXPECT_EQ(cells[0].key(), "b/http1/tls1.2");
  EXPECT_EQ(cells[0].tls_version, "");  // no TLS: none recorded
  EXPECT_EQ(cells[3].key(), "b/https/tls1.3");
  EXPECT_EQ(cells[3].tls_version, "1.3");
  for (uint32_t attempt = 0; attempt < 3; ++attempt) {
    EXPECT_EQ(target_of(pool.place(s, cells[2], attempt)), "tls");  // https: only tls serves it
    EXPECT_EQ(loads_of(pool.place(s, cells[2], attempt)), (std::vector<std::string>{"cli"}));
  }
  EXPECT_EQ(target_of(pool.place(s, cells[0], 1)), "tls");  // http1: either, rotating
  EXPECT_EQ(target_of(pool.place(s, cells[0], 0)), "plain");
  auto h2 =
      parse_scenario(nlohmann::json::parse(R"({"name": "s", "targets": [{"name": "b", "builtin": "hello"}],
      "matrix": {"threads": [1], "protocol": ["https", "h2"]}, "load": {"total_requests": 10}})"));
  try {
    pool.check(h2);
    ADD_FAILURE() << "no agent serves h2";
  } catch (const InputError& e) {
    EXPECT_EQ(
        std::string(e.what()),
        "/matrix/protocol/1: cell b/h2/t1: no agent serves h2 with the target \"hello\" (plain: http1; tls: "
        "http1, https)");
  }
  // An agent that says nothing of protocols (an older one) serves and speaks http1 only.
  add(old, "old", {"load"});
  std::set<std::string> http1_loads;
  for (uint32_t attempt = 0; attempt < 4; ++attempt) {
    EXPECT_EQ(loads_of(pool.place(s, cells[2], attempt)), (std::vector<std::string>{"cli"}));
    http1_loads.insert(loads_of(pool.place(s, cells[0], attempt)).at(0));
  }
  EXPECT_EQ(http1_loads, (std::set<std::string>{"cli", "old"}));
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
