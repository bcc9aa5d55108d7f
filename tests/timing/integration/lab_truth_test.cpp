// Two load agents of a lab share one cell: their counts add up to the requests asked, and the
// rate of four closed loops on a 2 ms server stays within what they can give.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "lab_fixture.hpp"
#include "test_support.hpp"

namespace loadlab {
namespace {

using namespace lab_fixture;
using testing::bin;
using testing::result_cells;
using testing::run_command;

TEST_F(LabTest, TwoLoadAgentsShareACellAndTheirCountsAdd) {
  auto s = dir.file("s.json",
                    R"({"name": "two", "targets": [{"name": "b", "builtin": "hello", "server_threads": 1}],
      "matrix": {"delay_ms": [2], "threads": [4]},
      "load": {"requests_per_thread": 200},
      "placement": {"load": {"agents": 2}}})");
  auto out = dir.path() / "out";
  auto r = run_command({bin("loadlab"), "run", s, "--lab", lab, "--out", out.string()});
  ASSERT_EQ(r.code, 0) << r.output_tail;
  auto cells = result_cells(out / "result.json");
  ASSERT_EQ(cells.size(), 1u);
  const auto& rep = cells[0].repetitions(0);
  ASSERT_EQ(rep.load_parts_size(), 2);
  uint64_t sum = 0;
  std::set<std::string> names;
  for (auto& p : rep.load_parts()) {
    EXPECT_EQ(p.threads(), 2u);
    sum += p.requests();
    names.insert(p.agent());
  }
  EXPECT_EQ(names, (std::set<std::string>{"cli1", "cli2"}));
  EXPECT_EQ(rep.target_agent(), "srv");
  EXPECT_EQ(rep.requests(), sum);
  EXPECT_EQ(sum, 4u * 200u);
  uint64_t in_buckets = 0;
  for (auto& b : rep.histogram().buckets()) in_buckets += b.count();
  EXPECT_EQ(in_buckets, sum);
  // Both clients measured (each its own process's CPU clock over 200 requests a thread: never
  // zero); the client figure is their sum.
  double cpu = 0;
  for (auto& p : rep.load_parts()) {
    EXPECT_GT(p.client().cpu_pct(), 0) << p.agent();
    cpu += p.client().cpu_pct();
  }
  EXPECT_NEAR(rep.client().cpu_pct(), cpu, 1e-6);
  // Four closed loops on a 2 ms server: at most 4 / 2 ms = 2000 req/s, whatever the split. A
  // server or a client that serialized them would give 500 at best; overlapped loops stay above
  // 650 even when each request also waits 4 ms for a CPU (4 / 6 ms = 667), as on a machine
  // whose other core is busy (986 req/s seen there).
  EXPECT_GT(rep.qps(), 650);
  EXPECT_LT(rep.qps(), 2050);
}

}  // namespace
}  // namespace loadlab
