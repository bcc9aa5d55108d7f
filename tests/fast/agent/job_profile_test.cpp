// A job's profile (agent/job_profile.hpp) on its paths that need no perf: the spec's checks,
// the folded text held to its limit, and the reasons a profile is not there.
#include "job_profile.hpp"

#include <gtest/gtest.h>

namespace loadlab::agent {
namespace {

v1::ProfileSpec spec(uint32_t hz, const std::string& call_graph) {
  v1::ProfileSpec s;
  s.set_frequency_hz(hz);
  s.set_call_graph(call_graph);
  return s;
}

TEST(JobProfile, TheSpecIsCheckedNamingItsField) {
  EXPECT_TRUE(check_profile_spec(v1::ProfileSpec(), "profile").ok());  // not profiled
  EXPECT_TRUE(check_profile_spec(spec(999, "fp"), "profile").ok());
  EXPECT_TRUE(check_profile_spec(spec(10'000, "dwarf"), "profile").ok());
  const auto too_fast = check_profile_spec(spec(10'001, "fp"), "profile");
  EXPECT_EQ(too_fast.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(too_fast.error_message(),
            "profile.frequency_hz: must be in 0...10000 samples a second (0: not profiled), got 10001");
  EXPECT_EQ(check_profile_spec(spec(999, "lbr"), "profile").error_message(),
            "profile.call_graph: must be \"auto\", \"fp\" or \"dwarf\", got \"lbr\"");
  EXPECT_TRUE(check_profile_spec(spec(999, "auto"), "profile").ok());
  EXPECT_EQ(check_profile_spec(spec(999, ""), "profile").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

// Beyond the limit the rarest stacks are left out, their samples counted as dropped; the
// samples and the rooted share are of every stack.
TEST(JobProfile, FoldedTextKeepsTheCommonestStacksWithinItsLimit) {
  const FoldedStacks stacks = {{"t;_start;main;a", 50}, {"t;b", 30}, {"t;c", 20}};
  auto whole = cpu_profile(stacks, 1000);
  EXPECT_EQ(whole.folded(), folded_text(stacks));
  EXPECT_EQ(whole.samples(), 100u);
  EXPECT_DOUBLE_EQ(whole.rooted_pct(), 50);
  EXPECT_EQ(whole.dropped_samples(), 0u);
  // "t;_start;main;a 50\n" is 19 bytes, "t;b 30\n" 7: room for those two, not for the third.
  auto held = cpu_profile(stacks, 26);
  EXPECT_EQ(held.folded(), "t;_start;main;a 50\nt;b 30\n");
  EXPECT_EQ(held.samples(), 100u);
  EXPECT_EQ(held.dropped_samples(), 20u);
}

// auto's choice: fp when nine in ten of the probe's stacks reach their thread's start, dwarf
// below that or on too few samples to judge; the reason says which and why.
TEST(JobProfile, AutoChoosesFramePointersWhenTheirStacksAreWhole) {
  auto [fp, why_fp] = choose_call_graph({{"t;_start;main;a", 90}, {"t;a", 10}}, 0.25);
  EXPECT_EQ(fp, "fp");
  EXPECT_EQ(why_fp, "fp: 90 % of the 100 frame-pointer stacks of a 0.25 s probe reach their thread's start");
  auto [dwarf, why_dwarf] = choose_call_graph({{"t;_start;main;a", 89}, {"t;a", 11}}, 0.25);
  EXPECT_EQ(dwarf, "dwarf");
  EXPECT_EQ(why_dwarf,
            "dwarf: only 89 % of the 100 frame-pointer stacks of a 0.25 s probe reach their thread's start "
            "(fp needs 90 %)");
  auto [few, why_few] = choose_call_graph({{"t;_start;main;a", 19}}, 0.25);
  EXPECT_EQ(few, "dwarf");
  EXPECT_EQ(why_few, "dwarf: a 0.25 s probe saw 19 samples, too few to judge frame pointers");
  EXPECT_EQ(choose_call_graph({{"t;start_thread;a", 20}}, 0.25).first, "fp");
}

TEST(JobProfile, WithoutAProfileItSaysWhy) {
  v1::ProfilingSupport none;
  none.set_reason("perf is not installed (Debian's linux-perf)");
  JobProfile unasked(v1::ProfileSpec(), none, "perf");
  unasked.start({1});
  EXPECT_FALSE(unasked.finish().has_value());

  JobProfile cannot(spec(999, "fp"), none, "perf");
  cannot.start({1});
  cannot.end_window();
  auto p = cannot.finish();
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->unavailable(), "perf is not installed (Debian's linux-perf)");
  EXPECT_EQ(p->frequency_hz(), 999u);
  EXPECT_TRUE(p->folded().empty());

  v1::ProfilingSupport able;
  able.set_available(true);
  JobProfile never_opened(spec(999, "fp"), able, "perf");
  EXPECT_EQ(never_opened.finish()->unavailable(), "the measured window never opened");

  JobProfile missing(spec(999, "fp"), able, "/nonexistent/perf");
  missing.start({getpid()});
  EXPECT_EQ(missing.finish()->unavailable(), "/nonexistent/perf is not installed (Debian's linux-perf)");
}

}  // namespace
}  // namespace loadlab::agent
