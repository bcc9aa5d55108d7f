// An agent's own limits: a spec over one is refused naming the field and the flag that set it.
#include "loadlab/agent/agent_limits.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "input_error_of.hpp"

namespace loadlab::agent {
namespace {

using loadlab::testing::input_error_of;
using ::testing::HasSubstr;
using ::testing::StartsWith;

AgentLimits tight() {
  AgentLimits l;
  l.threads = 4;
  l.connections = 40;
  l.duration_s = 30;
  l.rate = 1000;
  l.body_bytes = 1024;
  return l;
}

v1::LoadSpec within() {
  v1::LoadSpec s;
  s.set_threads(4);
  s.set_connections(40);
  s.set_duration_s(30);
  s.set_rate(1000);
  s.set_body(std::string(1024, 'x'));
  return s;
}

TEST(AgentLimits, ASpecAtEveryLimitPasses) {
  EXPECT_EQ(input_error_of([] { check_limits(within(), tight()); }), "");
  v1::TargetSpec t;
  t.set_threads(4);
  t.set_body_size(1024);
  EXPECT_EQ(input_error_of([&] { check_limits(t, tight()); }), "");
  EXPECT_EQ(input_error_of([] { check_limits(within(), AgentLimits{}); }), "");  // the table's defaults
}

TEST(AgentLimits, EachLoadFieldOverItsLimitNamesTheFieldTheLimitAndTheFlag) {
  struct Case {
    std::function<void(v1::LoadSpec&)> change;
    const char* field;
    const char* flag;
  };
  const Case cases[] = {
      {[](auto& s) { s.set_threads(5); }, "threads", "--max-threads"},
      {[](auto& s) { s.set_connections(41); }, "connections", "--max-connections"},
      {[](auto& s) { s.set_duration_s(30.5); }, "duration_s", "--max-duration-s"},
      {[](auto& s) { s.set_rate(1000.5); }, "rate", "--max-rate"},
      {[](auto& s) { s.set_body(std::string(1025, 'x')); }, "body", "--max-body-bytes"},
  };
  for (const auto& c : cases) {
    auto s = within();
    c.change(s);
    auto e = input_error_of([&] { check_limits(s, tight()); });
    EXPECT_THAT(e, StartsWith(std::string(c.field) + ": "));
    EXPECT_THAT(e, HasSubstr(c.flag));
    EXPECT_THAT(e, HasSubstr("over this agent's limit"));
  }
  // Connections default to one per thread: 4 threads and no connections is 4 connections.
  auto s = within();
  s.set_threads(4);
  s.set_connections(0);
  auto l = tight();
  l.connections = 3;
  EXPECT_THAT(input_error_of([&] { check_limits(s, l); }), StartsWith("connections: 4 is over"));
}

// --max-duration-s caps a load's whole run: its warm-up and duration together, and a count
// of requests' warm-up.
TEST(AgentLimits, AWarmUpCountsTowardTheDurationLimit) {
  auto s = within();
  s.set_duration_s(20);
  s.set_warmup_s(10);
  EXPECT_EQ(input_error_of([&] { check_limits(s, tight()); }), "");  // 30 s: at the limit
  s.set_warmup_s(10.5);
  auto e = input_error_of([&] { check_limits(s, tight()); });
  EXPECT_THAT(e, StartsWith("warmup_s + duration_s: 10.5 + 20 = 30.5 is over this agent's limit of 30 "
                            "(loadlab-agent --max-duration-s"));
  s.set_total_requests(100);  // a count: its warm-up alone must fit
  s.set_warmup_s(30);
  EXPECT_EQ(input_error_of([&] { check_limits(s, tight()); }), "");
  s.set_warmup_s(31);
  EXPECT_THAT(input_error_of([&] { check_limits(s, tight()); }),
              StartsWith("warmup_s: 31 is over this agent's limit of 30 (loadlab-agent --max-duration-s"));
}

TEST(AgentLimits, ATargetOverTheThreadOrBodyLimitIsRefused) {
  v1::TargetSpec t;
  t.set_threads(5);
  EXPECT_THAT(input_error_of([&] { check_limits(t, tight()); }), StartsWith("threads: 5 is over"));
  t.set_threads(0);  // the agent's cores: its own choice
  t.set_body_size(2048);
  EXPECT_THAT(input_error_of([&] { check_limits(t, tight()); }), StartsWith("body_size: 2048 is over"));
}

}  // namespace
}  // namespace loadlab::agent
