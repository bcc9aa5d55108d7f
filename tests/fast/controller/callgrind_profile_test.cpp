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
  EXPECT_EQ(grew_text(grew), "grew most (instructions per request, self): work +30, parse +2");
  EXPECT_EQ(what_grew(a, b, 2, 1).size(), 1u);
  EXPECT_TRUE(what_grew(b, b, 2).empty());
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
