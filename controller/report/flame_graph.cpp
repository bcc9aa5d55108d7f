#include "report/flame_graph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "report/report_html.hpp"

namespace loadlab::controller {

// A named namespace: the report's files are compiled as one unit (a unity build).
namespace flame {

// The graph's frame in viewBox units; frames narrower than kMinWidth are left out.
constexpr double kWidth = 1200, kFrameHeight = 16, kPad = 4, kMinWidth = 0.5, kCharWidth = 6.6;

std::vector<std::string> split_stack(const std::string& stack) {
  std::vector<std::string> frames;
  size_t start = 0;
  while (start <= stack.size()) {
    const auto end = std::min(stack.find(';', start), stack.size());
    frames.push_back(stack.substr(start, end - start));
    start = end + 1;
  }
  return frames;
}

FlameFrame* child_named(FlameFrame& parent, const std::string& name) {
  auto it = std::lower_bound(parent.children.begin(), parent.children.end(), name,
                             [](const FlameFrame& f, const std::string& n) { return f.name < n; });
  if (it == parent.children.end() || it->name != name)
    it = parent.children.insert(it, FlameFrame{name, 0, {}});
  return &*it;
}

const FlameFrame* find_child(const FlameFrame* parent, const std::string& name) {
  if (!parent) return nullptr;
  for (const auto& c : parent->children)
    if (c.name == name) return &c;
  return nullptr;
}

// A warm colour of its own for each function name (flamegraph.pl's "hot" palette), so the
// same function has the same colour in every graph.
std::string hot_colour(const std::string& name) {
  uint32_t h = 2166136261u;
  for (unsigned char c : name) h = (h ^ c) * 16777619u;
  const double v1 = (h & 0xff) / 255.0, v2 = ((h >> 8) & 0xff) / 255.0, v3 = ((h >> 16) & 0xff) / 255.0;
  return fmt::format("rgb({},{},{})", 205 + static_cast<int>(50 * v3), static_cast<int>(230 * v1),
                     static_cast<int>(55 * v2));
}

// Differential: red as the share grew, blue as it shrank, white when it did not move;
// `change` as a fraction of the largest change in the graph.
std::string diff_colour(double change) {
  const int fade = 255 - static_cast<int>(std::round(200 * std::min(1.0, std::fabs(change))));
  return change >= 0 ? fmt::format("rgb(255,{0},{0})", fade) : fmt::format("rgb({0},{0},255)", fade);
}

class Painter {
 public:
  Painter(const FlameGraph& g, const FlameFrame& root, const FlameFrame* base_root)
      : root_(root), base_root_(base_root), diff_(!g.base.empty()) {
    scale_ = root.samples ? kWidth / static_cast<double>(root.samples) : 0;
    base_total_ = base_root ? static_cast<double>(base_root->samples) : 0;
    if (diff_) largest_change_ = largest_change(root, base_root);
    height_ = (depth(root) + 1) * kFrameHeight + 2 * kPad;
  }
  double height() const { return height_; }
  void draw(std::string& svg) const { draw(svg, root_, base_root_, 0, 0); }

 private:
  double share(const FlameFrame& f) const { return static_cast<double>(f.samples) / root_.samples; }
  double base_share(const FlameFrame* b) const { return b && base_total_ > 0 ? b->samples / base_total_ : 0; }

  bool visible(const FlameFrame& f) const { return f.samples * scale_ >= kMinWidth; }
  int depth(const FlameFrame& f) const {
    int deepest = 0;
    for (const auto& c : f.children)
      if (visible(c)) deepest = std::max(deepest, 1 + depth(c));
    return deepest;
  }
  double largest_change(const FlameFrame& f, const FlameFrame* b) const {
    double most = std::fabs(share(f) - base_share(b));
    for (const auto& c : f.children)
      if (visible(c)) most = std::max(most, largest_change(c, find_child(b, c.name)));
    return most;
  }
  void draw(std::string& svg, const FlameFrame& f, const FlameFrame* b, double x, int level) const;

  const FlameFrame& root_;
  const FlameFrame* base_root_;
  bool diff_;
  double scale_ = 0, base_total_ = 0, largest_change_ = 0, height_ = 0;
};

void Painter::draw(std::string& svg, const FlameFrame& f, const FlameFrame* b, double x, int level) const {
  const double width = f.samples * scale_;
  const double y = height_ - kPad - (level + 1) * kFrameHeight;
  std::string title = fmt::format("{} ({} samples, {:.2f} %", f.name, f.samples, 100 * share(f));
  std::string fill = hot_colour(f.name);
  if (diff_) {
    const double change = share(f) - base_share(b);
    title += fmt::format("; {:+.2f} points against the base", 100 * change);
    fill = diff_colour(largest_change_ > 0 ? change / largest_change_ : 0);
  }
  title += ")";
  svg += fmt::format(
      "<g class=\"frame\"><title>{}</title><rect x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" "
      "height=\"{:.1f}\" "
      "fill=\"{}\" rx=\"1\"/>",
      html_escape(title), x, y, width, kFrameHeight - 1, fill);
  const auto fits = static_cast<size_t>(std::max(0.0, (width - 6) / kCharWidth));
  if (fits >= 3) {
    const std::string label = f.name.size() <= fits ? f.name : f.name.substr(0, fits - 2) + "..";
    svg += fmt::format("<text x=\"{:.2f}\" y=\"{:.1f}\">{}</text>", x + 3, y + kFrameHeight - 4.5,
                       html_escape(label));
  }
  svg += "</g>\n";
  for (const auto& c : f.children) {
    if (visible(c)) draw(svg, c, find_child(b, c.name), x, level + 1);
    x += c.samples * scale_;
  }
}

}  // namespace flame

FlameFrame flame_tree(const FoldedStacks& stacks) {
  FlameFrame root{"all", 0, {}};
  for (const auto& [stack, count] : stacks) {
    root.samples += count;
    FlameFrame* at = &root;
    for (const auto& name : flame::split_stack(stack)) {
      at = flame::child_named(*at, name);
      at->samples += count;
    }
  }
  return root;
}

std::string svg_flame_graph(const FlameGraph& graph) {
  const FlameFrame root = flame_tree(graph.stacks);
  const FlameFrame base = flame_tree(graph.base);
  const flame::Painter painter(graph, root, graph.base.empty() ? nullptr : &base);
  std::string svg = fmt::format(
      "<svg class=\"flame\" data-panel=\"{}\" viewBox=\"0 0 {:.0f} {:.0f}\" role=\"img\" aria-label=\"{}\" "
      "xmlns=\"http://www.w3.org/2000/svg\" font-family=\"sans-serif\" font-size=\"11\">\n",
      html_escape(graph.panel), flame::kWidth, painter.height(), html_escape(graph.title));
  if (root.samples > 0) painter.draw(svg);
  return svg + "</svg>";
}

std::vector<FunctionShare> top_functions(const FoldedStacks& stacks, size_t top, bool by_self) {
  const double all = static_cast<double>(total_samples(stacks));
  std::vector<FunctionShare> out;
  for (const auto& [name, c] : function_samples(stacks))
    out.push_back({name, all > 0 ? 100 * static_cast<double>(c.self) / all : 0,
                   all > 0 ? 100 * static_cast<double>(c.total) / all : 0});
  std::stable_sort(out.begin(), out.end(), [by_self](const FunctionShare& a, const FunctionShare& b) {
    return by_self ? a.self_pct > b.self_pct : a.total_pct > b.total_pct;
  });
  if (out.size() > top) out.resize(top);
  return out;
}

}  // namespace loadlab::controller
