// A profiled repetition's profiles into the run folder (run/cpu_profiles.hpp), and the load
// agents' profiles merged into the cell's client (results.hpp).
#include "run/cpu_profiles.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "loadlab/shared/folded_stacks.hpp"
#include "loadlab/shared/json_input.hpp"
#include "pprof_reader.hpp"
#include "report/profile_section.hpp"
#include "results/results.hpp"

namespace loadlab::controller {
namespace {

namespace fs = std::filesystem;

v1::CpuProfile profile(const FoldedStacks& stacks, double rooted_pct) {
  v1::CpuProfile p;
  p.set_folded(folded_text(stacks));
  p.set_samples(total_samples(stacks));
  p.set_rooted_pct(rooted_pct);
  p.set_frequency_hz(999);
  p.set_kernel(true);
  return p;
}

TEST(CpuProfiles, TheLoadAgentsProfilesAddUp) {
  v1::Usage a, b;
  *a.mutable_profile() = profile({{"load;run;send", 60}, {"load;run;read", 40}}, 100);
  *b.mutable_profile() = profile({{"load;run;send", 20}}, 0);
  add_usage(a, b);
  EXPECT_EQ(parse_folded(a.profile().folded()), (FoldedStacks{{"load;run;send", 80}, {"load;run;read", 40}}));
  EXPECT_EQ(a.profile().samples(), 120u);
  EXPECT_NEAR(a.profile().rooted_pct(), 100.0 * 100 / 120, 1e-9);
  EXPECT_TRUE(a.profile().unavailable().empty());
  v1::Usage c;
  c.mutable_profile()->set_unavailable("perf record failed");
  add_usage(a, c);  // its reason is kept, the samples stay
  EXPECT_EQ(a.profile().unavailable(), "perf record failed");
  EXPECT_EQ(a.profile().samples(), 120u);
  v1::Usage plain, unprofiled;
  add_usage(plain, unprofiled);
  EXPECT_FALSE(plain.has_profile());
}

TEST(CpuProfiles, AProfiledRepetitionKeepsItsStacksInFilesAndIsFlagged) {
  const fs::path dir = fs::temp_directory_path() / ("loadlab-cpu-profiles-" + std::to_string(getpid()));
  fs::remove_all(dir);
  Cell cell;
  cell.target = "beast";
  cell.axes = {{"threads", "1"}};
  v1::Repetition r;
  *r.mutable_server()->mutable_profile() = profile({{"srv;serve", 7}}, 0);
  *r.mutable_client()->mutable_profile() = profile({{"load;send", 3}}, 0);
  *r.add_load_parts()->mutable_client()->mutable_profile() = profile({{"load;send", 3}}, 0);
  v1::Repetition unprofiled = r;
  keep_cpu_profiles(cell, (dir / "profiles").string(), unprofiled);
  EXPECT_FALSE(fs::exists(dir / "profiles")) << "a cell not profiled keeps nothing";

  cell.profile = ProfileSetting{999, "fp"};
  v1::Repetition again = r;
  keep_cpu_profiles(cell, (dir / "profiles").string(), r);
  keep_cpu_profiles(cell, (dir / "profiles").string(), again);
  EXPECT_EQ(r.server().profile().file(), "profiles/beast_t1.1.server.folded");
  EXPECT_EQ(r.client().profile().file(), "profiles/beast_t1.1.client.folded");
  EXPECT_EQ(again.server().profile().file(), "profiles/beast_t1.2.server.folded");
  EXPECT_EQ(read_text_file((dir / r.server().profile().file()).string()), "srv;serve 7\n");
  EXPECT_EQ(read_text_file((dir / r.client().profile().file()).string()), "load;send 3\n");
  EXPECT_TRUE(r.server().profile().folded().empty());
  EXPECT_TRUE(r.client().profile().folded().empty());
  EXPECT_TRUE(r.load_parts(0).client().profile().folded().empty());
  EXPECT_EQ(r.server().profile().samples(), 7u);
  EXPECT_EQ(std::vector<std::string>(r.flags().begin(), r.flags().end()),
            std::vector<std::string>{"profiled"});
  fs::remove_all(dir);
}

// Beside each folded file, the same stacks as a pprof profile: gzip, pprof's profile.proto, ""
// first in its string table, each stack a sample leaf first, its samples and its share of the
// CPU time the agent measured (50 % of a core over 2 s shared among 7 + 3 samples).
TEST(CpuProfiles, EachProfileIsAlsoAPprofProfileWorthTheMeasuredCpuTime) {
  const fs::path dir = fs::temp_directory_path() / ("loadlab-pprof-" + std::to_string(getpid()));
  fs::remove_all(dir);
  Cell cell;
  cell.target = "beast";
  cell.axes = {{"threads", "1"}};
  cell.profile = ProfileSetting{999, "fp"};
  v1::Repetition r;
  *r.mutable_server()->mutable_profile() = profile({{"srv;main;serve;hot", 7}, {"srv;main;cold", 3}}, 100);
  r.mutable_server()->set_cpu_pct(50);
  r.mutable_server()->set_window_s(2);
  keep_cpu_profiles(cell, (dir / "profiles").string(), r);
  perftools::profiles::Profile p;
  const auto samples =
      testing::pprof_samples(read_text_file((dir / "profiles/beast_t1.1.server.pb.gz").string()), p);
  ASSERT_EQ(samples.size(), 2u) << "not a gzipped pprof profile";
  EXPECT_EQ(p.string_table(0), "");
  EXPECT_EQ(p.string_table(p.sample_type(1).type()), "cpu");
  EXPECT_EQ(p.string_table(p.sample_type(1).unit()), "nanoseconds");
  EXPECT_EQ(p.duration_nanos(), 2'000'000'000);
  int64_t cpu_ns = 0;
  for (const auto& s : samples) {
    cpu_ns += s.cpu_ns;
    if (s.samples == 7) EXPECT_EQ(s.frames, (std::vector<std::string>{"hot", "serve", "main", "srv"}));
    if (s.samples == 3) EXPECT_EQ(s.frames, (std::vector<std::string>{"cold", "main", "srv"}));
  }
  EXPECT_NEAR(static_cast<double>(cpu_ns), 1e9, 10) << "the window's CPU time, shared";
  fs::remove_all(dir);
}

// report.html's Profiles section: the median repetition's server flame graph and tables from
// its file in the run folder, and the client's reason where it has none.
TEST(CpuProfiles, TheReportDrawsEachProfiledCellsSidesFromTheRunFolder) {
  const fs::path dir = fs::temp_directory_path() / ("loadlab-report-profiles-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "profiles");
  std::ofstream(dir / "profiles/beast_t1.1.server.folded")
      << "srv;main;serve;hot 70\nsrv;main;serve;cold 30\n";
  CellResult c;
  c.cell.target = "beast";
  c.cell.axes = {{"threads", "1"}};
  c.cell.profile = ProfileSetting{999, "fp"};
  v1::Repetition r;
  r.set_qps(100);
  r.mutable_server()->mutable_profile()->set_file("profiles/beast_t1.1.server.folded");
  r.mutable_server()->mutable_profile()->set_samples(100);
  r.mutable_server()->mutable_profile()->set_frequency_hz(999);
  r.mutable_server()->mutable_profile()->set_call_graph("fp");
  r.mutable_client()->mutable_profile()->set_unavailable("perf record failed");
  c.reps = {r};
  CellResult unprofiled = c;
  unprofiled.cell.profile.reset();
  const auto profiles = read_cell_profiles(dir, {c, unprofiled});
  ASSERT_EQ(profiles.size(), 1u);
  ASSERT_EQ(profiles[0].sides.size(), 2u);
  EXPECT_EQ(total_samples(profiles[0].sides[0].stacks), 100u);
  std::ostringstream html;
  write_profiles_section(html, profiles);
  const std::string page = html.str();
  EXPECT_NE(page.find("<section id=\"profiles\">"), std::string::npos);
  EXPECT_NE(page.find("data-panel=\"beast/t1 server\""), std::string::npos);
  EXPECT_NE(page.find("<title>hot"), std::string::npos) << "a frame's title names its function";
  EXPECT_NE(
      page.find(
          "<td class=\"fn\" title=\"hot\">hot</td><td class=\"num\">70.0</td><td class=\"num\">70.0</td>"),
      std::string::npos);
  EXPECT_NE(page.find("<td class=\"fn\" title=\"serve\">serve</td><td class=\"num\">0.0</td><td "
                      "class=\"num\">100.0</td>"),
            std::string::npos);
  EXPECT_NE(page.find("beast/t1 · client: profile unavailable: perf record failed"), std::string::npos);
  std::ostringstream none;
  write_profiles_section(none, {});
  EXPECT_EQ(none.str(), "");
  // An A/B pair whose cells were both profiled: B's server drawn against A's.
  auto pair = profiles;
  pair.push_back(pair[0]);
  pair[1].key = "beast2/t1";
  pair[1].sides[0].stacks = {{"srv;main;serve;hot", 50}, {"srv;main;serve;cold", 50}};
  v1::Verdicts ab;
  ab.add_cells()->set_key("beast2/t1");
  ab.mutable_cells(0)->set_a_key("beast/t1");
  std::ostringstream diff;
  write_profiles_section(diff, pair, profile_diffs(dir, {}, pair, {&ab, &ab}));
  const std::string d = diff.str();
  EXPECT_NE(d.find("beast2/t1 · server against beast/t1: red grew, blue shrank"), std::string::npos);
  EXPECT_EQ(d.find("beast2/t1 · server against", d.find("beast2/t1 · server against") + 1), std::string::npos)
      << "a pair drawn once";
  EXPECT_NE(d.find("data-panel=\"beast2/t1 server diff\""), std::string::npos);
  EXPECT_NE(d.find("<title>cold (50 samples, 50.00 %; +20.00 points against the base)</title>"),
            std::string::npos)
      << d.substr(0, 3000);
  fs::remove_all(dir);
}

// A night's regression against the history: tonight's repetitions summed, drawn against the
// base night's profile kept in the run folder (profile_base), captioned with which night that
// is; where there was none, the reason instead of a graph.
TEST(CpuProfiles, ANightsRegressionIsDrawnAgainstItsBaseNightsProfile) {
  const fs::path dir = fs::temp_directory_path() / ("loadlab-report-base-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "profiles");
  std::ofstream(dir / "profiles/beast_t1.1.server.folded") << "srv;main;hot 30\nsrv;main;cold 20\n";
  std::ofstream(dir / "profiles/beast_t1.2.server.folded") << "srv;main;hot 20\nsrv;main;cold 30\n";
  std::ofstream(dir / "profiles/beast_t1.base.server.folded") << "srv;main;hot 70\nsrv;main;cold 30\n";
  CellResult c;
  c.cell.target = "beast";
  c.cell.axes = {{"threads", "1"}};
  c.cell.profile = ProfileSetting{999, "auto"};
  for (int n : {1, 2}) {
    v1::Repetition r;
    r.mutable_server()->mutable_profile()->set_file("profiles/beast_t1." + std::to_string(n) +
                                                    ".server.folded");
    c.reps.push_back(r);
  }
  v1::Verdicts night;
  auto* v = night.add_cells();
  v->set_key("beast/t1");
  v->set_profile_base("profiles/beast_t1.base.server.folded");
  v->set_profile_base_from(
      "the night of 2026-12-06T03:00:00Z, the newest of the band (2 repetitions summed)");
  auto* none = night.add_cells();
  none->set_key("beast/t2");
  none->set_profile_base_from("the night of 2026-12-05T03:00:00Z left no server profile to draw against");
  const auto diffs = profile_diffs(dir, {c}, read_cell_profiles(dir, {c}), {nullptr, &night});
  ASSERT_EQ(diffs.size(), 2u);
  EXPECT_EQ(total_samples(diffs[0].after), 100u) << "both repetitions";
  std::ostringstream html;
  write_profiles_section(html, read_cell_profiles(dir, {c}), diffs);
  const std::string page = html.str();
  EXPECT_NE(
      page.find("beast/t1 · server against the night of 2026-12-06T03:00:00Z, the newest of the band (2 "
                "repetitions summed): red grew"),
      std::string::npos)
      << page.substr(0, 2000);
  EXPECT_NE(page.find("<title>cold (50 samples, 50.00 %; +20.00 points against the base)</title>"),
            std::string::npos);
  EXPECT_NE(
      page.find("beast/t2 · server: no differential graph: the night of 2026-12-05T03:00:00Z left no server "
                "profile to draw against"),
      std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace loadlab::controller
