#pragma once
// Flame graphs of CPU profiles (folded stacks: loadlab/shared/folded_stacks.hpp) as inline SVG
// for report.html, drawn as Brendan Gregg's flamegraph.pl draws them: the root ("all") at the
// bottom, each frame above its caller, as wide as its samples, siblings in name order; a frame
// too narrow to see is left out with what it calls. Each frame's <title> gives its function,
// samples and share, so no script is needed. The differential graph draws the new profile's
// frames coloured by how their share changed against the base (red grew, blue shrank).
#include <cstdint>
#include <string>
#include <vector>

#include "loadlab/shared/folded_stacks.hpp"

namespace loadlab::controller {

// One frame of the merged call tree: a function at one call path, and the samples of the
// stacks through it.
struct FlameFrame {
  std::string name;
  uint64_t samples = 0;
  std::vector<FlameFrame> children;  // by name
};

// The call tree of `stacks` under a root named "all" holding every sample.
FlameFrame flame_tree(const FoldedStacks& stacks);

struct FlameGraph {
  std::string panel;  // data-panel attribute, e.g. the cell's key and side
  std::string title;  // accessible name
  FoldedStacks stacks;
  // Differential: the base the frames' colours compare with (their share of its samples at
  // the same call path); empty for a plain graph.
  FoldedStacks base;
};
std::string svg_flame_graph(const FlameGraph& graph);

// A function's share of the samples: `self` in the function itself (it was the leaf), `total`
// with what it calls (each stack through it counted once, however deep it recurses).
struct FunctionShare {
  std::string name;
  double self_pct = 0;
  double total_pct = 0;
};
// The `top` functions by self share (`by_self`) or by total share, largest first (ties by name).
std::vector<FunctionShare> top_functions(const FoldedStacks& stacks, size_t top, bool by_self);

}  // namespace loadlab::controller
