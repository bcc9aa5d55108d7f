#include "report/profile_section.hpp"

#include <fmt/format.h>

#include <algorithm>

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
  o << fmt::format(" · {} samples at {} Hz, {} stacks", s.profile.samples(), s.profile.frequency_hz(),
                   html_escape(s.profile.call_graph()));
  if (const auto& why = s.profile.call_graph_probe(); !why.empty()) {  // "fp: 97 % of ...": after "fp: "
    const auto colon = why.find(": ");
    o << " (auto: " << html_escape(colon == std::string::npos ? why : why.substr(colon + 2)) << ")";
  }
  o << fmt::format(", {:.0f} % whole", s.profile.rooted_pct());
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

void write_diff(std::ostream& o, const ProfileDiff& d) {
  o << "<figure class=\"profile\"><figcaption>" << html_escape(d.key);
  if (d.after.empty() || d.before.empty()) {
    o << " · server: no differential graph: " << html_escape(d.none) << "</figcaption></figure>";
    return;
  }
  o << " · server against " << html_escape(d.against)
    << ": red grew, blue shrank (share of the samples)</figcaption>"
    << svg_flame_graph({d.key + " server diff", d.key + " server against " + d.against, d.after, d.before})
    << "</figure>";
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

FoldedStacks summed_server_stacks(const std::filesystem::path& dir, const CellResult& c) {
  FoldedStacks sum;
  for (const auto* reps : {&c.reps, &c.confirmations})
    for (const auto& r : *reps)
      for (auto& [stack, count] : profile_section::read_side(dir, "server", r.server().profile()).stacks)
        sum[stack] += count;
  return sum;
}

std::vector<ProfileDiff> profile_diffs(const std::filesystem::path& dir, const std::vector<CellResult>& cells,
                                       const std::vector<CellProfiles>& profiles,
                                       const std::vector<const v1::Verdicts*>& verdicts) {
  std::vector<ProfileDiff> out;
  // A cell against one base once (a nightly's A/B pair is in both its `ab` and its verdicts).
  auto add = [&](ProfileDiff d) {
    if (std::none_of(out.begin(), out.end(),
                     [&](const ProfileDiff& o) { return o.key == d.key && o.against == d.against; }))
      out.push_back(std::move(d));
  };
  for (const v1::Verdicts* vs : verdicts)
    for (const auto& v : vs ? vs->cells() : google::protobuf::RepeatedPtrField<v1::CellVerdict>()) {
      const ProfileSide* a = profile_section::side_of(profiles, v.a_key(), "server");
      const ProfileSide* b = profile_section::side_of(profiles, v.key(), "server");
      if (!v.a_key().empty() && a && b) add({v.key(), v.a_key(), b->stacks, a->stacks, {}});
      if (!v.a_key().empty() || v.profile_base_from().empty()) continue;
      ProfileDiff d{v.key(), v.profile_base_from(), {}, {}, v.profile_base_from()};
      if (!v.profile_base().empty()) {
        v1::CpuProfile base;
        base.set_file(v.profile_base());
        d.before = profile_section::read_side(dir, "server", base).stacks;
        for (const auto& c : cells)
          if (c.cell.key() == v.key()) d.after = summed_server_stacks(dir, c);
        if (d.before.empty() || d.after.empty())
          d.none = v.profile_base() + " or tonight's profiles could not be read";
      }
      add(std::move(d));
    }
  return out;
}

void write_profiles_section(std::ostream& o, const std::vector<CellProfiles>& profiles,
                            const std::vector<ProfileDiff>& diffs) {
  if (profiles.empty()) return;
  o << "<section id=\"profiles\"><h2>Profiles</h2><p>Where each profiled cell's CPU went over its "
       "median repetition's window: each frame as wide as its samples, above its caller; hover a "
       "frame for its function and share.</p>";
  for (const auto& d : diffs) profile_section::write_diff(o, d);
  for (const auto& cell : profiles)
    for (const auto& side : cell.sides) profile_section::write_side(o, cell.key, side);
  o << "</section>";
}

}  // namespace loadlab::controller
