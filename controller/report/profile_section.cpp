#include "report/profile_section.hpp"

#include <fmt/format.h>

#include "loadlab/shared/input_error.hpp"
#include "loadlab/shared/json_input.hpp"
#include "report/flame_graph.hpp"
#include "report/report_html.hpp"

namespace loadlab::controller {

// A named namespace: the report's files are compiled as one unit (a unity build).
namespace profile_section {

ProfileSide read_side(const std::filesystem::path& dir, const std::string& side, const v1::CpuProfile& p) {
  ProfileSide out{side, {}, p, p.unavailable()};
  out.profile.clear_folded();
  if (p.file().empty()) {
    if (out.unavailable.empty()) out.unavailable = "no profile was kept";
    return out;
  }
  try {
    out.stacks = parse_folded(read_text_file((dir / p.file()).string()));
  } catch (const std::exception& e) {
    out.unavailable = p.file() + ": " + e.what();
  }
  return out;
}

std::string top_table(const FoldedStacks& stacks, bool by_self) {
  std::string t = fmt::format(
      "<table class=\"top\"><thead><tr><th>function (by {})</th><th class=\"num\">self %</th>"
      "<th class=\"num\">total %</th></tr></thead><tbody>",
      by_self ? "self" : "total");
  for (const auto& f : top_functions(stacks, kTopFunctions, by_self))
    t += fmt::format(
        "<tr><td class=\"fn\" title=\"{0}\">{0}</td><td class=\"num\">{1:.1f}</td><td "
        "class=\"num\">{2:.1f}</td></tr>",
        html_escape(f.name), f.self_pct, f.total_pct);
  return t + "</tbody></table>";
}

void write_side(std::ostream& o, const std::string& key, const ProfileSide& s) {
  o << "<figure class=\"profile\"><figcaption>" << html_escape(key) << " · " << s.side;
  if (s.stacks.empty()) {
    o << ": profile unavailable: " << html_escape(s.unavailable) << "</figcaption></figure>";
    return;
  }
  o << fmt::format(" · {} samples at {} Hz, {} stacks, {:.0f} % whole", s.profile.samples(),
                   s.profile.frequency_hz(), html_escape(s.profile.call_graph()), s.profile.rooted_pct());
  if (s.profile.dropped_samples() > 0) o << fmt::format(", {} samples left out", s.profile.dropped_samples());
  if (!s.unavailable.empty()) o << " (in part: " << html_escape(s.unavailable) << ")";  // a load agent's
  o << "</figcaption>"
    << svg_flame_graph({key + " " + s.side, key + " " + s.side + " flame graph", s.stacks, {}})
    << "<div class=\"tops\">" << top_table(s.stacks, true) << top_table(s.stacks, false) << "</div></figure>";
}

const ProfileSide* side_of(const std::vector<CellProfiles>& profiles, const std::string& key,
                           const std::string& side) {
  for (const auto& c : profiles)
    if (c.key == key)
      for (const auto& s : c.sides)
        if (s.side == side && !s.stacks.empty()) return &s;
  return nullptr;
}

// Each A/B pair's server, B drawn against A: its frames coloured by how their share of the
// samples moved from A's.
void write_ab_diffs(std::ostream& o, const std::vector<CellProfiles>& profiles, const v1::Verdicts& ab) {
  for (const auto& v : ab.cells()) {
    const ProfileSide* a = side_of(profiles, v.a_key(), "server");
    const ProfileSide* b = side_of(profiles, v.key(), "server");
    if (!a || !b) continue;
    o << "<figure class=\"profile\"><figcaption>" << html_escape(v.key()) << " · server against "
      << html_escape(v.a_key()) << ": red grew, blue shrank (share of the samples)</figcaption>"
      << svg_flame_graph(
             {v.key() + " server diff", v.key() + " server against " + v.a_key(), b->stacks, a->stacks})
      << "</figure>";
  }
}

}  // namespace profile_section

std::vector<CellProfiles> read_cell_profiles(const std::filesystem::path& dir,
                                             const std::vector<CellResult>& cells) {
  std::vector<CellProfiles> out;
  for (const auto& c : cells) {
    if (!c.cell.profile || !c.ok()) continue;
    const auto& r = c.median();
    out.push_back({c.cell.key(),
                   {profile_section::read_side(dir, "server", r.server().profile()),
                    profile_section::read_side(dir, "client", r.client().profile())}});
  }
  return out;
}

void write_profiles_section(std::ostream& o, const std::vector<CellProfiles>& profiles,
                            const v1::Verdicts* ab) {
  if (profiles.empty()) return;
  o << "<section id=\"profiles\"><h2>Profiles</h2><p>Where each profiled cell's CPU went over its "
       "median repetition's window: each frame as wide as its samples, above its caller; hover a "
       "frame for its function and share.</p>";
  if (ab) profile_section::write_ab_diffs(o, profiles, *ab);
  for (const auto& cell : profiles)
    for (const auto& side : cell.sides) profile_section::write_side(o, cell.key, side);
  o << "</section>";
}

}  // namespace loadlab::controller
