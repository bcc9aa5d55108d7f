#include "loadlab/shared/folded_stacks.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "loadlab/shared/input_error.hpp"

namespace loadlab {
namespace folded_stacks_test {

// Three samples as linux-perf 6.1's `perf script` printed them (perf record -e cpu-clock -g of a
// python3 process on this project's VM), the third repeated: a user stack with symbols, one
// through the kernel ending in a frame perf could not name, one without any symbol.
constexpr const char* kPerfScript = R"(python3  8786 24745.070199:    1001001 cpu-clock: 
	            e4dd _dl_relocate_object+0x8bd (/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2)
	           1de39 dl_main+0x1e79 (/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2)
	           1ab78 _dl_start_user+0x0 (/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2)

python3  8786 24745.071179:    1001001 cpu-clock: 
	ffffffff81583d45 perf_iterate_sb.constprop.0+0xa5 ([kernel.kallsyms])
	ffffffff8223df91 do_syscall_64+0x71 ([kernel.kallsyms])
	          1019b3 __mmap+0x13 (/usr/lib/x86_64-linux-gnu/libc.so.6)
	    d8ec81485355 [unknown] ([unknown])

python3  8786 24745.074184:    1001001 cpu-clock: 
	          13c17f [unknown] (/usr/bin/python3.11)
	          9584a0 [unknown] ([unknown])

python3  8786 24745.075188:    1001001 cpu-clock: 
	          13c17f [unknown] (/usr/bin/python3.11)
	          9584a0 [unknown] ([unknown])
)";

TEST(FoldedStacks, PerfScriptFoldsRootFirstWithoutOffsets) {
  std::istringstream in(kPerfScript);
  const FoldedStacks folded = fold_perf_script(in, true);
  const FoldedStacks expected = {
      {"python3;_dl_start_user;dl_main;_dl_relocate_object", 1},
      {"python3;[unknown];__mmap;do_syscall_64_[k];perf_iterate_sb.constprop.0_[k]", 1},
      {"python3;[unknown];[python3.11]", 2},
  };
  EXPECT_EQ(folded, expected);
  EXPECT_EQ(total_samples(folded), 4u);
  std::istringstream again(kPerfScript);
  EXPECT_EQ(fold_perf_script(again, false).count("_dl_start_user;dl_main;_dl_relocate_object"), 1u);
}

// A C++ symbol holds spaces and parentheses; a separator in a name would split its frame.
TEST(FoldedStacks, ASignatureIsOneFrame) {
  std::istringstream in(
      "srv 1 2.0:  1 cpu-clock: \n"
      "\t  4011 ns::f(std::vector<int, std::allocator<int> > const&) [clone .isra.0]+0x1f (/bin/srv)\n"
      "\t  4022 main+0x10 (/bin/srv)\n\n");
  const FoldedStacks folded = fold_perf_script(in, false);
  ASSERT_EQ(folded.size(), 1u);
  EXPECT_EQ(folded.begin()->first,
            "main;ns::f(std::vector<int, std::allocator<int> > const&) [clone .isra.0]");
}

// A thread's name may hold spaces; with -a a CPU stands between the pid and the time.
TEST(FoldedStacks, TheProcessNameIsWhatComesBeforeThePid) {
  std::istringstream in(
      "Web Content  4242/4250 [001] 9.5:  1 cpu-clock: \n\t  4011 f+0x1 (/bin/w)\n\n"
      "srv 7 9.6:  1 cpu-clock: \n\t  4011 f+0x1 (/bin/w)\n\n"
      "a;b c: 8 9.7:  1 cpu-clock: \n\t  4011 f+0x1 (/bin/w)\n\n");
  const FoldedStacks folded = fold_perf_script(in, true);
  EXPECT_EQ(folded, (FoldedStacks{{"Web_Content;f", 1}, {"srv;f", 1}, {"a:b_c:;f", 1}}));
}

TEST(FoldedStacks, TextRoundTripsAndBadLinesAreNamed) {
  const FoldedStacks stacks = {{"main;a;b", 70}, {"main;c d", 30}};
  EXPECT_EQ(folded_text(stacks), "main;a;b 70\nmain;c d 30\n");
  EXPECT_EQ(parse_folded(folded_text(stacks)), stacks);
  EXPECT_EQ(parse_folded("main;a 1\n\nmain;a 2\r\n"), (FoldedStacks{{"main;a", 3}}));  // summed
  auto error_of = [](const char* text) {
    try {
      parse_folded(text);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error_of("main;a 1\nmain;b\n"), "line 2: must be a stack, a space and a sample count");
  EXPECT_EQ(error_of("main;a x1\n"), "line 1: must be a stack, a space and a sample count");
  EXPECT_EQ(error_of("main;a -1\n"), "line 1: must be a stack, a space and a sample count");
  EXPECT_EQ(error_of(" 5\n"), "line 1: must be a stack, a space and a sample count");
}

// A stack unwound whole reaches its thread's start below the thread's name; one cut short by a
// frame without a frame pointer begins anywhere.
TEST(FoldedStacks, RootedSamplesAreThoseWhoseStacksReachAThreadsStart) {
  const FoldedStacks stacks = {{"srv;_start;__libc_start_main;main;f", 10},
                               {"srv;__GI___clone3;start_thread;run;f", 20},
                               {"srv;f;g", 30},    // cut short
                               {"srv;main;f", 5},  // main without _start: cut short too
                               {"gosrv;runtime.goexit.abi0;net.serve", 7},
                               {"lonely", 100}};  // the thread's name only
  EXPECT_EQ(rooted_samples(stacks), 37u);
  EXPECT_TRUE(is_thread_start("clone3"));
  EXPECT_FALSE(is_thread_start("main"));
  EXPECT_FALSE(is_thread_start("_start2"));
}

// Self: the leaf's samples; total: each stack through the function once, however deep it
// recurses.
TEST(FoldedStacks, AFunctionsSelfAndTotalSamples) {
  const auto f = function_samples({{"t;main;a", 30}, {"t;main;b", 70}, {"t;main;a;a", 10}});
  EXPECT_EQ(f.at("a").self, 40u);
  EXPECT_EQ(f.at("a").total, 40u);
  EXPECT_EQ(f.at("b").self, 70u);
  EXPECT_EQ(f.at("main").self, 0u);
  EXPECT_EQ(f.at("main").total, 110u);
  EXPECT_EQ(f.at("t").total, 110u);
  EXPECT_EQ(f.size(), 4u);
}

}  // namespace folded_stacks_test
}  // namespace loadlab
