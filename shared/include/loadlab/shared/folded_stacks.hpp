#pragma once
// CPU profiles as folded stacks (Brendan Gregg's format, which flame graphs are drawn from): one
// line a distinct call stack, its frames from the root to the leaf joined by ';', then a space
// and the samples that stack had. `perf script`'s output folds into it (the agent's profiles);
// a run folder keeps it; the report draws it (controller/report/flame_graph.hpp).
#include <cstdint>
#include <istream>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace loadlab {

// Samples by stack ("root;caller;leaf"). Ordered, so its text and everything drawn from it
// is the same for the same samples.
using FoldedStacks = std::map<std::string, uint64_t>;

// Folds `perf script`'s default output of a recording with call graphs (a header line a
// sample, "COMM TID [CPU] TIME: PERIOD EVENT:", then its frames leaf first, each a line that
// begins with a tab, "ADDRESS SYMBOL+OFFSET (DSO)", and a blank line). The offsets are dropped; a
// frame without a symbol is named by its DSO's file name in brackets ("[libc.so.6]",
// "[unknown]"); a kernel frame gets "_[k]" (as stackcollapse-perf.pl names them). With
// `process_root`, each stack's root is the sample's thread name (COMM, its spaces as '_').
FoldedStacks fold_perf_script(std::istream& in, bool process_root);

// The same, a line at a time (from a pipe): add() each line without its '\n', then finish().
class PerfScriptFolder {
 public:
  explicit PerfScriptFolder(bool process_root) : process_root_(process_root) {}
  void add(std::string_view line);
  FoldedStacks finish();

 private:
  void end_sample();
  bool process_root_;
  bool in_sample_ = false;
  std::string process_;
  std::vector<std::string> frames_;  // leaf first
  FoldedStacks out_;
};

// Reads folded text: "STACK COUNT" lines (the count after the last space), blank lines
// skipped. A line without a count, or with an empty stack, throws InputError naming the line
// ("line 3").
FoldedStacks parse_folded(std::string_view text);
// The text parse_folded reads, a line a stack in the map's order.
std::string folded_text(const FoldedStacks& stacks);

// All samples.
uint64_t total_samples(const FoldedStacks& stacks);

// A function's samples: those it was the leaf of (self), and those of the stacks through it
// (total: each stack once, however deep it recurses).
struct FunctionSamples {
  uint64_t self = 0;
  uint64_t total = 0;
};
std::map<std::string, FunctionSamples> function_samples(const FoldedStacks& stacks);

// Whether `frame` is where a whole stack begins: a program's or a thread's start (_start,
// __libc_start_main, start_thread, clone3, Go's runtime.goexit, ...).
bool is_thread_start(std::string_view frame);
// The samples of stacks rooted at a thread's name whose next frame is a thread's start: the
// stacks unwound whole. Frames without frame pointers cut the others short.
uint64_t rooted_samples(const FoldedStacks& stacks);

}  // namespace loadlab
