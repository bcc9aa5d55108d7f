// What grew, from callgrind outputs written as callgrind writes them: compressed names, calls
// with their inclusive costs, several positions; and the functions that grew most between two.
#include "results/callgrind_profile.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace loadlab::controller {
namespace {

// main (5 self) calls work (cost 100 inclusive) and parse (20); work is 100 self, parse 12 self
// and calls memchr (8).
std::string profile(int work) {
  return "# callgrind format\nversion: 1\npositions: line\nevents: Ir\nsummary: 1\n\n"
         "ob=(1) /srv/server\nfl=(1) server.c\nfn=(1) main\n10 2\n+1 3\n"
         "cfl=(1)\ncfn=(2) work\ncalls=1 20\n12 " +
         std::to_string(work) +
         "\ncfn=(3) parse\ncalls=2 30\n13 20\n\n"
         "fn=(2)\n20 " +
         std::to_string(work) +
         "\n\nfn=(3)\n30 7\n* 5\n"
         "cob=(2) /lib/libc.so.6\ncfi=(2) memchr.S\ncfn=(4) memchr\ncalls=4 0\n31 8\n\n"
         "ob=(2)\nfl=(2)\nfn=(4)\n0 8\n";
}

TEST(CallgrindProfile, SelfAndInclusiveCountsOfEachFunction) {
  std::istringstream in(profile(100));
  auto costs = read_callgrind(in);
  ASSERT_EQ(costs.size(), 4u);
  EXPECT_EQ(costs["main"].self, 5);
  EXPECT_EQ(costs["main"].inclusive, 125);
  EXPECT_EQ(costs["work"].self, 100);
  EXPECT_EQ(costs["parse"].self, 12);
  EXPECT_EQ(costs["parse"].inclusive, 20);
  EXPECT_EQ(costs["memchr"].self, 8);
}

TEST(CallgrindProfile, WhatGrewIsTheFunctionsWhoseSelfCountGrewMost) {
  std::istringstream a_in(profile(100)), b_in(profile(160));
  auto a = read_callgrind(a_in), b = read_callgrind(b_in);
  b["parse"].self += 4;            // grew less
  b["memchr"].self -= 2;           // shrank: not listed
  auto grew = what_grew(a, b, 2);  // per request of 2
  ASSERT_EQ(grew.size(), 2u);
  EXPECT_EQ(grew[0].function(), "work");
  EXPECT_EQ(grew[0].self_a(), 50);
  EXPECT_EQ(grew[0].self_b(), 80);
  EXPECT_EQ(grew[0].inclusive_b(), 80);
  EXPECT_EQ(grew[1].function(), "parse");
  EXPECT_EQ(grew[0].unit(), "instructions");
  EXPECT_EQ(grew_text(grew), "grew most (instructions per request, self): work +30, parse +2");
  EXPECT_EQ(what_grew(a, b, 2, 1).size(), 1u);
  EXPECT_TRUE(what_grew(b, b, 2).empty());
}

// perf's samples of a profiled server as CPU µs per request: 1000 Hz over 100 requests makes
// each sample 10 µs a request; with the window's CPU time, the samples share that instead. A
// recursive function counts once a stack in its inclusive cost.
TEST(CallgrindProfile, PerfSamplesAreCpuPerRequestAndWhatGrewIsInThatUnit) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("loadlab-perf-costs-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir / "profiles");
  std::ofstream(dir / "profiles/c.1.server.folded") << "t;main;a 30\nt;main;b 70\nt;main;a;a 10\n";
  v1::Repetition r;
  r.set_requests(100);
  r.mutable_server()->mutable_profile()->set_file("profiles/c.1.server.folded");
  r.mutable_server()->mutable_profile()->set_frequency_hz(1000);
  const auto costs = perf_costs(dir, r);
  ASSERT_TRUE(costs.has_value());
  EXPECT_DOUBLE_EQ(costs->at("a").self, 400);
  EXPECT_DOUBLE_EQ(costs->at("a").inclusive, 400);
  EXPECT_DOUBLE_EQ(costs->at("b").self, 700);
  EXPECT_DOUBLE_EQ(costs->at("main").self, 0);
  EXPECT_DOUBLE_EQ(costs->at("main").inclusive, 1100);
  v1::Repetition timed = r;  // 110 samples, 0.22 s of CPU: 2 ms a sample, 20 µs a request
  timed.mutable_server()->set_cpu_pct(5.5);
  timed.mutable_server()->set_window_s(4);
  EXPECT_DOUBLE_EQ(perf_costs(dir, timed)->at("b").self, 1400);
  v1::Repetition none = r;
  none.mutable_server()->mutable_profile()->set_file("profiles/missing.folded");
  EXPECT_FALSE(perf_costs(dir, none).has_value());
  // The mean of the repetitions that have one.
  EXPECT_DOUBLE_EQ(mean_perf_costs(dir, std::vector<v1::Repetition>{r, none, r}).at("b").self, 700);
  std::filesystem::remove_all(dir);

  // In CPU µs a growth under 1 % of B's whole CPU per request is the samples' noise.
  FunctionCosts a = {{"f", {500, 500}}, {"g", {400, 400}}},
                b = {{"f", {511, 511}}, {"g", {409, 409}}, {"h", {80, 80}}};
  auto grew = what_grew(a, b, 1, 10, kCpuUsUnit);  // B's whole: 1000 µs; 1 %: 10
  ASSERT_EQ(grew.size(), 2u);
  EXPECT_EQ(grew[0].function(), "h");
  EXPECT_EQ(grew[0].unit(), "cpu_us");
  EXPECT_EQ(grew[1].function(), "f");
  EXPECT_EQ(grew_text(grew), "grew most (CPU µs per request, self, from perf's samples): h +80.00, f +11.00");
}

TEST(CallgrindProfile, TheMeanOfTheFilesThatCanBeRead) {
  EXPECT_TRUE(mean_callgrind({"/nonexistent/a.out"}).empty());
  char tmpl[] = "/tmp/loadlab-callgrind-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::filesystem::path dir = tmpl;
  const std::string a = (dir / "a.callgrind.out").string(), b = (dir / "b.callgrind.out").string();
  std::ofstream(a) << profile(100);
  std::ofstream(b) << profile(300);
  // The missing file is left out: the mean is over the two that exist, not three.
  auto costs = mean_callgrind({a, (dir / "missing.callgrind.out").string(), b});
  std::filesystem::remove_all(dir);
  ASSERT_EQ(costs.size(), 4u);
  EXPECT_DOUBLE_EQ(costs["work"].self, 200);
  EXPECT_DOUBLE_EQ(costs["work"].inclusive, 200);
  EXPECT_DOUBLE_EQ(costs["parse"].self, 12);  // the same in both
}

}  // namespace
}  // namespace loadlab::controller
