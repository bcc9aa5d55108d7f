#include "report/flame_graph.hpp"

#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

namespace loadlab::controller {
namespace flame_graph_test {

// A drawn frame: its title and its rectangle.
struct Drawn {
  std::string title;
  double x, y, width;
  std::string fill;
};

std::vector<Drawn> frames_of(const std::string& svg) {
  static const std::regex frame(
      R"re(<g class="frame"><title>([^<]*)</title><rect x="([0-9.]+)" y="([0-9.]+)" width="([0-9.]+)" height="[0-9.]+" fill="([^"]+)")re");
  std::vector<Drawn> out;
  for (std::sregex_iterator it(svg.begin(), svg.end(), frame), end; it != end; ++it)
    out.push_back({(*it)[1], std::stod((*it)[2]), std::stod((*it)[3]), std::stod((*it)[4]), (*it)[5]});
  return out;
}

TEST(FlameGraph, TheTreeMergesStacksByCallPath) {
  const FlameFrame root = flame_tree({{"main;a;x", 50}, {"main;a", 20}, {"main;b;x", 30}});
  EXPECT_EQ(root.name, "all");
  EXPECT_EQ(root.samples, 100u);
  ASSERT_EQ(root.children.size(), 1u);
  const FlameFrame& main = root.children[0];
  ASSERT_EQ(main.children.size(), 2u);
  EXPECT_EQ(main.children[0].name, "a");
  EXPECT_EQ(main.children[0].samples, 70u);  // 20 of its own, 50 in x
  EXPECT_EQ(main.children[1].samples, 30u);
  EXPECT_EQ(main.children[0].children[0].samples, 50u);
}

// Each frame as wide as its samples (1200 units for all), siblings left to right by name, each
// level 16 units above its caller, the titles giving the function, samples and share.
TEST(FlameGraph, FramesAreAsWideAsTheirSamplesWithTitles) {
  const std::string svg =
      svg_flame_graph({"beast/d0 server", "server <CPU>", {{"main;hot", 70}, {"main;cold", 30}}, {}});
  EXPECT_NE(svg.find(R"(aria-label="server &lt;CPU&gt;")"), std::string::npos);
  EXPECT_NE(svg.find(R"(viewBox="0 0 1200 56")"), std::string::npos);  // three levels and the padding
  const auto drawn = frames_of(svg);
  ASSERT_EQ(drawn.size(), 4u) << svg;
  EXPECT_EQ(drawn[0].title, "all (100 samples, 100.00 %)");
  EXPECT_EQ(drawn[1].title, "main (100 samples, 100.00 %)");
  EXPECT_EQ(drawn[2].title, "cold (30 samples, 30.00 %)");
  EXPECT_EQ(drawn[3].title, "hot (70 samples, 70.00 %)");
  EXPECT_DOUBLE_EQ(drawn[0].width, 1200);
  EXPECT_DOUBLE_EQ(drawn[2].width, 360);
  EXPECT_DOUBLE_EQ(drawn[2].x, 0);
  EXPECT_DOUBLE_EQ(drawn[3].width, 840);
  EXPECT_DOUBLE_EQ(drawn[3].x, 360);
  EXPECT_DOUBLE_EQ(drawn[0].y - drawn[1].y, 16);  // the root at the bottom
  EXPECT_DOUBLE_EQ(drawn[1].y - drawn[3].y, 16);
  EXPECT_NE(svg.find(">hot</text>"), std::string::npos);
  const auto other = frames_of(svg_flame_graph({"", "", {{"x;hot", 1}}, {}}));
  ASSERT_EQ(other.size(), 3u);
  EXPECT_EQ(other[2].fill, drawn[3].fill);  // a function has its colour in every graph
  EXPECT_NE(drawn[2].fill, drawn[3].fill);
}

// A frame narrower than half a unit is left out with what it calls; a name too long for its
// frame is cut, and every text is escaped.
TEST(FlameGraph, NarrowFramesAreLeftOutAndLongNamesCut) {
  const auto svg = svg_flame_graph({"", "", {{"main;wide<T>", 10000}, {"main;tiny;deeper", 1}}, {}});
  const auto drawn = frames_of(svg);
  ASSERT_EQ(drawn.size(), 3u) << svg;
  EXPECT_EQ(drawn[2].title, "wide&lt;T&gt; (10000 samples, 99.99 %)");
  EXPECT_EQ(svg.find("tiny"), std::string::npos);
  // 10 % is 120 units: 17 characters of 6.6 units after 6 units of margin.
  const auto cut = svg_flame_graph({"", "", {{"main;a_function_with_a_long_name", 10}, {"main;b", 90}}, {}});
  EXPECT_NE(cut.find(">a_function_with..</text>"), std::string::npos) << cut;
  EXPECT_NE(cut.find("<title>a_function_with_a_long_name (10 samples"), std::string::npos);  // whole
}

// The differential graph: the new profile's frames, red where the share grew, blue where it
// shrank, the deepest colour for the largest change, and the change in each title.
TEST(FlameGraph, TheDifferenceColoursEachFrameByItsChangeOfShare) {
  const auto svg =
      svg_flame_graph({"", "", {{"main;a", 50}, {"main;b", 50}}, {{"main;a", 70}, {"main;b", 30}}});
  const auto drawn = frames_of(svg);
  ASSERT_EQ(drawn.size(), 4u) << svg;
  EXPECT_EQ(drawn[2].title, "a (50 samples, 50.00 %; -20.00 points against the base)");
  EXPECT_EQ(drawn[2].fill, "rgb(55,55,255)");
  EXPECT_EQ(drawn[3].title, "b (50 samples, 50.00 %; +20.00 points against the base)");
  EXPECT_EQ(drawn[3].fill, "rgb(255,55,55)");
  EXPECT_EQ(drawn[1].fill, "rgb(255,255,255)");  // main: 100 % on both sides
  // A call path the base never had grew from nothing.
  const auto added =
      frames_of(svg_flame_graph({"", "", {{"main;a", 90}, {"main;new", 10}}, {{"main;a", 1}}}));
  ASSERT_EQ(added.size(), 4u);
  EXPECT_EQ(added[3].title, "new (10 samples, 10.00 %; +10.00 points against the base)");
}

TEST(FlameGraph, TopFunctionsBySelfAndByTotal) {
  const FoldedStacks stacks = {{"main;f;g", 40}, {"main;f", 10}, {"main;g", 30}, {"main;f;f", 20}};
  const auto self = top_functions(stacks, 2, true);
  ASSERT_EQ(self.size(), 2u);
  EXPECT_EQ(self[0].name, "g");
  EXPECT_DOUBLE_EQ(self[0].self_pct, 70);
  EXPECT_DOUBLE_EQ(self[0].total_pct, 70);
  EXPECT_EQ(self[1].name, "f");
  EXPECT_DOUBLE_EQ(self[1].self_pct, 30);
  EXPECT_DOUBLE_EQ(self[1].total_pct, 70);  // the recursive stack counted once
  const auto total = top_functions(stacks, 10, false);
  ASSERT_EQ(total.size(), 3u);
  EXPECT_EQ(total[0].name, "main");
  EXPECT_DOUBLE_EQ(total[0].total_pct, 100);
  EXPECT_DOUBLE_EQ(total[0].self_pct, 0);
  EXPECT_EQ(top_functions({}, 5, true).size(), 0u);
  EXPECT_EQ(svg_flame_graph({"", "", {}, {}}).find("<g"), std::string::npos);  // no samples, no frames
}

}  // namespace flame_graph_test
}  // namespace loadlab::controller
