#include "results/quality_flags.hpp"

#include <gtest/gtest.h>

#include "load_result_fixture.hpp"
#include "results/result_merge.hpp"

namespace loadlab::controller {
namespace {

// 41 load agents each flagged busy-machine: one readable word in a table, the list in
// result.json; two agents' flags stay as they are.
TEST(SummarizedFlags, AFlagOnManyAgentsIsCountedAndOnFewListed) {
  std::vector<std::string> flags{"client-saturated", "busy-machine:srv", "stalled:l1"};
  for (int i = 1; i <= 40; ++i) flags.push_back("busy-machine:l" + std::to_string(i));
  flags.push_back("stalled:l2");
  flags.push_back("window-skew");
  EXPECT_EQ(summarized_flags(flags), (std::vector<std::string>{"client-saturated", "busy-machine: 41 agents",
                                                               "stalled:l1", "stalled:l2", "window-skew"}));
  EXPECT_TRUE(summarized_flags({}).empty());
}

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

// A stop of the CPUs (Usage.stalls) on either side's machine flags the repetition with that
// agent's name, whatever the other work.
TEST(SaturationFlags, StalledCpusFlagTheAgentWhoseCpusStopped) {
  v1::Repetition r;
  r.set_target_agent("srv");
  auto* p = r.add_load_parts();
  p->set_agent("cli");
  EXPECT_TRUE(saturation_flags(r, {}).empty());
  EXPECT_FALSE(stalled(r));
  p->mutable_client()->set_stalls(1);
  p->mutable_client()->set_stall_max_ms(21);
  EXPECT_EQ(saturation_flags(r, {}), (std::vector<std::string>{"stalled:cli"}));
  r.mutable_server()->set_stalls(2);
  EXPECT_EQ(saturation_flags(r, {}), (std::vector<std::string>{"stalled:srv", "stalled:cli"}));
  r.add_flags("stalled:srv");
  EXPECT_TRUE(stalled(r));
  EXPECT_FALSE(busy_machine(r));
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

// Target on CPU 0 and load on CPU 1 of one 4-CPU machine: what else ran on CPUs 2 and 3
// is not the cell's business; what ran on its own two CPUs is.
TEST(SaturationFlags, BusyMachineLooksAtTheCpusTheCellWasPinnedTo) {
  v1::Repetition r;
  r.set_target_agent("one");
  auto busy = [](v1::Usage& u, std::map<uint32_t, double> pct) {
    u.clear_cpu_busy();
    for (auto& [cpu, v] : pct) {
      auto* b = u.add_cpu_busy();
      b->set_cpu(cpu);
      b->set_busy_pct(v);
    }
  };
  auto* server = r.mutable_server();
  server->set_cpu_pct(60);
  server->set_cpus("0");
  server->set_machine_cpu_pct(330);
  auto* p = r.add_load_parts();
  p->set_agent("one");
  p->mutable_client()->set_cpu_pct(70);
  p->mutable_client()->set_cpus("1");
  p->mutable_client()->set_machine_cpu_pct(330);
  busy(*server, {{0, 65}, {1, 75}, {2, 100}, {3, 90}});
  busy(*p->mutable_client(), {{0, 65}, {1, 75}, {2, 100}, {3, 90}});
  EXPECT_TRUE(saturation_flags(r, {{"one", 4}}).empty()) << "CPUs 2-3 were busy with something else: fine";
  busy(*server, {{0, 100}, {1, 95}, {2, 10}, {3, 10}});  // 65 % of the cell's CPUs went elsewhere
  EXPECT_EQ(saturation_flags(r, {{"one", 4}}), (std::vector<std::string>{"busy-machine:one"}));
  // An agent without per-CPU figures: the machine as before (330 - 130 >= 50).
  server->clear_cpu_busy();
  p->mutable_client()->clear_cpu_busy();
  EXPECT_EQ(saturation_flags(r, {{"one", 4}}), (std::vector<std::string>{"busy-machine:one"}));
}

// Target and load on one CPU with a `yes` beside them (figures of a real repetition): the
// neighbour's 43 % is flagged; the same cell alone is not, though its processes' CPU adds up to
// more than the CPU's busy share (they are read from different counters).
TEST(SaturationFlags, ANeighbourTakingAThirdOfTheCellsOneCpuIsFlagged) {
  v1::Repetition r;
  r.set_target_agent("one");
  auto* server = r.mutable_server();
  auto* client = r.add_load_parts();
  client->set_agent("one");
  for (v1::Usage* u : {server, client->mutable_client()}) {
    u->set_cpus("1");
    auto* b = u->add_cpu_busy();
    b->set_cpu(1);
    b->set_busy_pct(98.0);
  }
  server->set_cpu_pct(31.0);
  client->mutable_client()->set_cpu_pct(23.0);
  EXPECT_EQ(saturation_flags(r, {{"one", 2}}), (std::vector<std::string>{"busy-machine:one"}));
  server->set_cpu_pct(57.0);
  client->mutable_client()->set_cpu_pct(42.5);
  server->mutable_cpu_busy(0)->set_busy_pct(92.0);
  client->mutable_client()->mutable_cpu_busy(0)->set_busy_pct(92.0);
  EXPECT_TRUE(saturation_flags(r, {{"one", 2}}).empty());
  // A fifth of a core on one or two CPUs; a tenth of each CPU of a larger set.
  EXPECT_EQ(busy_machine_threshold_pct(0), 20.0);
  EXPECT_EQ(busy_machine_threshold_pct(2), 20.0);
  EXPECT_EQ(busy_machine_threshold_pct(8), 80.0);
}

// A delay-0 cell on one CPU whose processes' CPU reads above the CPU's busy time (other work
// -16 to -20 %, as such cells read here): a neighbour in one repetition lifts it to +10 %, under
// the absolute threshold but 28 above the cell's median, so it is flagged; the quiet ones are not.
TEST(SaturationFlags, ARepetitionWhoseOtherWorkStandsOutFromItsCellsIsFlagged) {
  auto rep = [](double busy, double own) {
    v1::Repetition r;
    r.set_target_agent("one");
    auto* server = r.mutable_server();
    server->set_cpus("1");
    server->set_cpu_pct(own / 2);
    auto* b = server->add_cpu_busy();
    b->set_cpu(1);
    b->set_busy_pct(busy);
    auto* client = r.add_load_parts();
    client->set_agent("one");
    client->mutable_client()->set_cpus("1");
    client->mutable_client()->set_cpu_pct(own / 2);
    *client->mutable_client()->mutable_cpu_busy() = server->cpu_busy();
    return r;
  };
  std::vector<v1::Repetition> reps;
  for (int i = 0; i < 11; ++i) reps.push_back(rep(80 + (i % 5), 100));  // -20 .. -16
  reps.push_back(rep(93, 83));                                          // +10: a neighbour, unseen alone
  EXPECT_TRUE(saturation_flags(reps.back(), {{"one", 2}}).empty()) << "below the absolute threshold";
  std::vector<v1::Repetition*> all;
  for (auto& r : reps) all.push_back(&r);
  flag_busy_outliers(all, {{"one", 2}});
  for (size_t i = 0; i + 1 < reps.size(); ++i) EXPECT_FALSE(busy_machine(reps[i])) << i;
  EXPECT_EQ(std::vector<std::string>(reps.back().flags().begin(), reps.back().flags().end()),
            std::vector<std::string>{"busy-machine:one"});
  flag_busy_outliers(all, {{"one", 2}});  // once only
  EXPECT_EQ(reps.back().flags_size(), 1);
  // Fewer repetitions than a median can be trusted on: nothing is flagged.
  v1::Repetition few_quiet = rep(80, 100), few_busy = rep(93, 83);
  flag_busy_outliers({&few_quiet, &few_busy}, {{"one", 2}});
  EXPECT_FALSE(busy_machine(few_busy));
}

TEST(SaturationFlags, APinnedClientSaturatesAtItsOwnCpus) {
  v1::Repetition r;
  r.set_target_agent("srv");
  auto* p = r.add_load_parts();
  p->set_agent("cli");
  p->mutable_client()->set_cpu_pct(95);  // 95 % of one core, on an 8-core machine
  EXPECT_TRUE(saturation_flags(r, {{"cli", 8}}).empty());
  p->mutable_client()->set_cpus("3");
  EXPECT_EQ(saturation_flags(r, {{"cli", 8}}), (std::vector<std::string>{"client-saturated"}));
  p->mutable_client()->set_cpus("2-3");
  EXPECT_TRUE(saturation_flags(r, {{"cli", 8}}).empty());
  // One load thread uses one core at most, whatever it may run on.
  p->set_threads(1);
  EXPECT_EQ(saturation_flags(r, {{"cli", 8}}), (std::vector<std::string>{"client-saturated"}));
  p->set_threads(2);
  EXPECT_TRUE(saturation_flags(r, {{"cli", 8}}).empty());
}

// Each kind of flag is spelt once; a written flag, with or without its agent, reads back as its
// kind, and another word as none.
TEST(SaturationFlags, EachKindIsSpeltOnceAndAWrittenFlagReadsBackAsItsKind) {
  const std::pair<QualityFlag, const char*> kinds[] = {{QualityFlag::kClientSaturated, "client-saturated"},
                                                       {QualityFlag::kRateNotHeld, "rate-not-held"},
                                                       {QualityFlag::kBusyMachine, "busy-machine"},
                                                       {QualityFlag::kStalled, "stalled"},
                                                       {QualityFlag::kWindowSkew, "window-skew"}};
  for (auto [kind, name] : kinds) {
    EXPECT_EQ(flag_name(kind), name);
    EXPECT_EQ(flag_kind(name), kind) << name;
    EXPECT_EQ(flag_kind(flag_text(kind, "l1")), kind) << name;
  }
  EXPECT_EQ(flag_text(QualityFlag::kBusyMachine, "l1"), "busy-machine:l1");
  EXPECT_FALSE(flag_kind("busy"));
  EXPECT_FALSE(flag_kind(""));
  v1::Repetition r;
  r.add_flags("stalled:srv");
  EXPECT_TRUE(stalled(r));
  EXPECT_FALSE(busy_machine(r));
  EXPECT_TRUE(has_flag(r, QualityFlag::kStalled));
}

}  // namespace
}  // namespace loadlab::controller
