// `loadlab history` as a user runs it, on a database built from made-up result.json files:
// its listing, a trend, the night a step happened, and exit status 2 with a clear line for
// a wrong file, metric or cell.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <regex>

#include "history/history.hpp"
#include "synthetic_result.hpp"
#include "test_support.hpp"

namespace loadlab {
namespace {

using testing::bin;
using testing::run_command;
using testing::synthetic_result;
using testing::TempDir;

// Twelve nights of scenario "nightly": cell beast/d0/t1 loses 8 % of its QPS from night 7
// (commit c7) on, with ±1 % of deterministic jitter; cell beast/d5/t1 stays flat. The target of
// beast/d0/t1 is built from commit NN000… on night NN.
class HistoryCli : public ::testing::Test {
 protected:
  HistoryCli() : db_((dir_.path() / "history.db").string()) {
    const double jitter[] = {0.4, -0.8, 0.9, -0.3, 0.1, -0.6, 0.7, -0.2, 0.5, -0.9, 0.3, -0.1};
    for (int night = 1; night <= 12; ++night) {
      double level = night >= 7 ? 9200 : 10000, j = jitter[night - 1] / 100;
      char started[32];
      std::snprintf(started, sizeof started, "2024-05-%02dT02:00:00Z", night);
      const std::string target_commit =
          (night < 10 ? "0" : "") + std::to_string(night) + std::string(38, '0');
      auto result = synthetic_result("nightly", started, "c" + std::to_string(night) + "000000000000",
                                     {{"beast/d0/t1",
                                       {level * (1 + j) * 0.99, level * (1 + j), level * (1 + j) * 1.01},
                                       true,
                                       2000,
                                       target_commit},
                                      {"beast/d5/t1", {190 * (1 + j), 191 * (1 + j)}, true, 2000, ""}});
      auto folder = dir_.path() / ("night-" + std::to_string(night));
      std::filesystem::create_directories(folder);
      std::ofstream(folder / "result.json") << result.dump();
      controller::append_run_file(db_, folder.string());
    }
  }
  testing::RunOutput history(std::vector<std::string> args) {
    args.insert(args.begin(), {bin("loadlab"), "history"});
    return run_command(args, std::chrono::seconds(60));
  }
  TempDir dir_;
  std::string db_;
};

TEST_F(HistoryCli, ListsTheRuns) {
  auto r = history({db_});
  EXPECT_EQ(r.code, 0) << r.output_tail;
  EXPECT_NE(r.stdout_text.find("2024-05-07 02:00  nightly"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("c700000000"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("12 runs in " + db_), std::string::npos) << r.stdout_text;
}

TEST_F(HistoryCli, PrintsACellsTrendOneLinePerRun) {
  auto r = history({db_, "--cell", "beast/d0/t1", "--metric", "qps"});
  EXPECT_EQ(r.code, 0) << r.output_tail;
  // Night 1: jitter +0.4 %: median 10040, range 9939.60 – 10140.40.
  EXPECT_TRUE(std::regex_search(r.stdout_text,
                                std::regex("2024-05-01 02:00 +c100000000 +10040.00 +9939.60 – 10140.40")))
      << r.stdout_text;
  size_t lines = 0;
  for (size_t at = 0; (at = r.stdout_text.find("\n  2024-05-", at)) != std::string::npos; ++at) ++lines;
  EXPECT_EQ(lines, 12u) << r.stdout_text;
}

TEST_F(HistoryCli, ChangesNameTheNightAndCommitOfTheStep) {
  auto r = history({db_, "--changes"});
  EXPECT_EQ(r.code, 0) << r.output_tail;
  EXPECT_NE(r.stdout_text.find("nightly  beast/d0/t1  qps: 1 change in 12 runs"), std::string::npos)
      << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("2024-05-07 02:00  commit c700000000"), std::string::npos) << r.stdout_text;
  // The levels are the medians of nights 1-6 (jitter -0.3 %) and 7-12 (-0.1 %).
  EXPECT_TRUE(std::regex_search(r.stdout_text, std::regex("9970.00 → 9190.80 +-7.8 %  worse")))
      << r.stdout_text;
  // The target's commits on both sides: the last night before the step, the first after.
  EXPECT_NE(r.stdout_text.find("target 060000000000 → 070000000000"), std::string::npos) << r.stdout_text;
  EXPECT_EQ(r.stdout_text.find("beast/d5/t1"), std::string::npos) << r.stdout_text;  // flat
  EXPECT_NE(r.stdout_text.find("1 change (1 worse) in 14 series"), std::string::npos) << r.stdout_text;
}

TEST_F(HistoryCli, WrongInputExitsTwoNamingWhatIsAllowed) {
  auto r = history({(dir_.path() / "nope.db").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output_tail.find("nope.db: FILE: no history database here"), std::string::npos)
      << r.output_tail;
  EXPECT_FALSE(std::filesystem::exists(dir_.path() / "nope.db"));

  r = history({db_, "--cell", "beast/d0/t1", "--metric", "speed"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output_tail.find("--metric: unknown metric \"speed\"; allowed: qps, p50_ms, p90_ms, p99_ms, "
                               "server_cpu_pct, server_rss_kb, client_cpu_pct"),
            std::string::npos)
      << r.output_tail;

  r = history({db_, "--cell", "beast/d9/t1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(
      r.output_tail.find("--cell: no cell \"beast/d9/t1\" in the history; known: beast/d0/t1, beast/d5/t1"),
      std::string::npos)
      << r.output_tail;

  r = history({db_, "--scenario", "weekly"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output_tail.find("--scenario: no runs of scenario \"weekly\""), std::string::npos)
      << r.output_tail;
}

}  // namespace
}  // namespace loadlab
