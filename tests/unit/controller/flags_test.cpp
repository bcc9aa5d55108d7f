#include "loadlab/controller/flags.hpp"

#include <gtest/gtest.h>

#include "load_result_fixture.hpp"
#include "loadlab/controller/result_merge.hpp"

namespace loadlab::controller {
namespace {

TEST(SaturationFlags, FlagAClientNearItsCoresAndABusyMachine) {
  v1::Repetition r;
  r.set_target_agent("srv");
  r.mutable_server()->set_cpu_pct(80);
  r.mutable_server()->set_machine_cpu_pct(85);
  auto* p = r.add_load_parts();
  p->set_agent("cli");
  p->mutable_client()->set_cpu_pct(190);
  p->mutable_client()->set_machine_cpu_pct(195);
  EXPECT_EQ(saturation_flags(r, {{"srv", 4}, {"cli", 2}}), (std::vector<std::string>{"client-saturated"}));
  p->mutable_client()->set_cpu_pct(50);
  p->mutable_client()->set_machine_cpu_pct(60);
  r.mutable_server()->set_machine_cpu_pct(200);  // 120 % of someone else's work on the server's machine
  EXPECT_EQ(saturation_flags(r, {{"srv", 4}, {"cli", 2}}), (std::vector<std::string>{"busy-machine:srv"}));
  r.mutable_server()->set_machine_cpu_pct(90);
  EXPECT_TRUE(saturation_flags(r, {{"srv", 4}, {"cli", 2}}).empty());
}

TEST(SaturationFlags, AnOpenLoopThatFellBehindOnOneLoadAgentFlagsTheRepetition) {
  v1::LoadResult held = part({100}, 1000), behind = part({100}, 400);
  held.set_rate(1000);
  held.set_achieved_rate(1000);
  behind.set_rate(1000);
  behind.set_achieved_rate(400);
  behind.set_rate_not_held(true);
  v1::Repetition r = merge_load_results({held, behind});
  EXPECT_DOUBLE_EQ(r.achieved_rate(), 1400);
  EXPECT_TRUE(r.rate_not_held());
  EXPECT_EQ(saturation_flags(r, {}), (std::vector<std::string>{"rate-not-held"}));
  EXPECT_TRUE(saturation_flags(merge_load_results({held, held}), {}).empty());
}

}  // namespace
}  // namespace loadlab::controller
