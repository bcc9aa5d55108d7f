#include "report/report_html.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "capacity/capacity_search.hpp"
#include "judge/ab_verdicts.hpp"
#include "judge/compare.hpp"
#include "judge/verdict.hpp"
#include "loadlab/proto/json.hpp"
#include "loadlab/shared/format.hpp"
#include "loadlab/shared/input_error.hpp"
#include "report/matrix_pivot.hpp"
#include "report/reporters.hpp"
#include "report/svg_chart.hpp"
#include "results/callgrind_profile.hpp"
#include "results/cell_metrics.hpp"

namespace loadlab::controller {

namespace {

using nlohmann::json;

// Phone first: tables scroll sideways inside their box, charts take the width they get and
// sit side by side where there is room.
constexpr const char* kStyle = R"(
:root{--fg:#1d2733;--muted:#5b6773;--line:#d8dee4;--bg:#fff;--head:#f3f5f7;--bad:#b3261e;--warn:#8a5a00;--good:#1e7a34}
*{box-sizing:border-box}
body{margin:0;padding:12px;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
main{max-width:1600px;margin:0 auto}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.2em;margin:1.4em 0 .5em;border-bottom:1px solid var(--line);padding-bottom:.2em}
h3{font-size:1em;margin:1em 0 .4em;color:var(--muted)}
nav{margin:.8em 0}nav a{margin-right:1em}
.desc{color:var(--muted);margin:.2em 0 .8em}
dl.run{display:grid;grid-template-columns:max-content 1fr;gap:.2em 1em;margin:.5em 0}
dl.run dt{color:var(--muted)}dl.run dd{margin:0;overflow-wrap:anywhere}
.scroll{overflow-x:auto;-webkit-overflow-scrolling:touch;border:1px solid var(--line);border-radius:4px}
table{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums}
th,td{padding:4px 8px;border-bottom:1px solid var(--line);white-space:nowrap;text-align:left}
th{background:var(--head);position:sticky;top:0}
td.num,th.num{text-align:right}
td.status{white-space:normal;min-width:28ch;max-width:60ch}
tr.failed td.status{color:var(--bad)}tr.flagged td.status{color:var(--warn)}
.regression{color:var(--bad);font-weight:600}.improvement{color:var(--good);font-weight:600}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,420px),1fr));gap:12px}
figure{margin:0;border:1px solid var(--line);border-radius:4px;padding:6px}
figcaption{font-weight:600;margin-bottom:2px}
svg.chart{width:100%;height:auto;display:block}
svg.chart .grid{stroke:#e6eaee;stroke-width:1}svg.chart .axis{stroke:#8c959f;stroke-width:1}
svg.chart text{font:11px system-ui,sans-serif;fill:#57606a}svg.chart .axis-title{font-size:12px;fill:#24292f}
svg.flame{width:100%;height:auto;display:block}svg.flame text{pointer-events:none}
figure.profile{margin:0 0 12px}.tops{display:flex;flex-wrap:wrap;gap:12px}.tops table{width:auto;font-size:.85em}
.tops td.fn{max-width:60ch;overflow:hidden;text-overflow:ellipsis}
svg.sparkline{width:160px;height:36px;display:block}
svg.band{width:220px;height:48px;display:block}
table.pairs{font-size:.8em;margin-top:4px}
td.why{min-width:18em;font-size:.85em}
ul.legend{list-style:none;margin:4px 0 0;padding:0;display:flex;flex-wrap:wrap;gap:2px 12px;font-size:12px}
ul.legend span{display:inline-block;width:14px;height:3px;margin-right:4px;vertical-align:middle}
.note{color:var(--muted);font-size:12px}
footer{margin-top:2em;color:var(--muted);font-size:12px}
)";

// A field of result.json's header by a path of object keys, as text: strings as they are,
// numbers and booleans as JSON prints them, anything else (missing, null, objects) as "".
std::string text_at(const json& j, std::initializer_list<const char*> path) {
  const json* at = &j;
  for (const char* key : path) {
    if (!at->is_object() || !at->contains(key)) return "";
    at = &(*at)[key];
  }
  if (at->is_string()) return at->get<std::string>();
  if (at->is_number() || at->is_boolean()) return at->dump();
  return "";
}

void row(std::ostream& o, const std::string& name, const std::string& value) {
  if (!value.empty()) o << "<dt>" << html_escape(name) << "</dt><dd>" << html_escape(value) << "</dd>";
}

std::string scenario_source(const json& h) {
  std::string s = text_at(h, {"scenario_path"});
  const std::string commit = text_at(h, {"scenario_file", "git", "commit"});
  if (!commit.empty()) s += " @ " + commit.substr(0, 12);
  if (text_at(h, {"scenario_file", "git", "dirty"}) == "true") s += " (modified)";
  return s;
}

void write_agents(std::ostream& o, const json& h) {
  if (!h.contains("agents") || !h["agents"].is_array() || h["agents"].empty()) return;
  o << "<h2 id=\"agents\">Agents</h2><div class=\"scroll\"><table class=\"agents\"><thead><tr><th>name</th>"
       "<th>address</th><th>roles</th><th>host</th><th class=\"num\">cores</th><th class=\"num\">memory "
       "GiB</th>"
       "<th>kernel</th><th>version</th><th>state</th></tr></thead><tbody>";
  for (auto& a : h["agents"]) {
    std::string roles;
    if (a.is_object() && a.contains("roles") && a["roles"].is_array())
      for (auto& r : a["roles"])
        roles += (roles.empty() ? "" : ", ") + (r.is_string() ? r.get<std::string>() : r.dump());
    const std::string memory = text_at(a, {"describe", "memory_bytes"});
    const std::string error = text_at(a, {"error"});
    o << "<tr><td>" << html_escape(text_at(a, {"name"})) << "</td><td>"
      << html_escape(text_at(a, {"address"})) << "</td><td>" << html_escape(roles) << "</td><td>"
      << html_escape(text_at(a, {"describe", "hostname"})) << "</td><td class=\"num\">"
      << html_escape(text_at(a, {"describe", "cores"})) << "</td><td class=\"num\">"
      << (memory.empty() ? "" : fixed_text(std::strtod(memory.c_str(), nullptr) / (1 << 30), 1))
      << "</td><td>" << html_escape(text_at(a, {"describe", "kernel"})) << "</td><td>"
      << html_escape(text_at(a, {"describe", "version"})) << "</td><td class=\"status\">"
      << html_escape(error.empty() ? "reachable" : "unreachable: " + error) << "</td></tr>";
  }
  o << "</tbody></table></div>";
}

void write_run_header(std::ostream& o, const json& h, const std::string& title, size_t cells) {
  o << "<header><h1>" << html_escape(title) << "</h1>";
  const std::string description = text_at(h, {"scenario", "description"});
  if (!description.empty()) o << "<p class=\"desc\">" << html_escape(description) << "</p>";
  o << "<dl class=\"run\">";
  row(o, "started", text_at(h, {"started_at"}));
  const std::string finished = text_at(h, {"finished_at"});
  row(o, "finished",
      finished.empty() ? "not finished (" + std::to_string(cells) + " cells so far)" : finished);
  if (h.contains("resumed_at") && h["resumed_at"].is_array() && !h["resumed_at"].empty())
    row(o, "resumed", std::to_string(h["resumed_at"].size()) + " times");
  row(o, "scenario", scenario_source(h));
  row(o, "commit", text_at(h, {"scenario_file", "git", "commit"}));
  // Targets built from a commit: which commit each measured.
  if (h.contains("target_commits") && h["target_commits"].is_array())
    for (auto& t : h["target_commits"])
      if (t.is_object())
        row(o, "target " + t.value("target", ""),
            t.value("ref", "") + " = " + t.value("sha", "").substr(0, 12) + " " + t.value("subject", ""));
  if (h.contains("overrides") && h["overrides"].is_array() && !h["overrides"].empty()) {
    std::string overrides;
    for (auto& v : h["overrides"])
      overrides += (overrides.empty() ? "" : " ") + (v.is_string() ? v.get<std::string>() : v.dump());
    row(o, "--set", overrides);
  }
  row(o, "lab", text_at(h, {"lab_path"}).empty() ? "embedded agent" : text_at(h, {"lab_path"}));
  row(o, "loadlab", text_at(h, {"loadlab_version"}));
  o << "</dl>";
  write_agents(o, h);
  o << "</header>";
}

// The style of a verdict's cell: a regression or a cell without a figure red, an improvement
// green.
std::string verdict_class(const std::string& verdict) {
  const auto v = verdict_named(verdict);
  if (v == Verdict::kRegression || (v && is_failure(*v))) return "regression";
  if (v == Verdict::kImprovement) return "improvement";
  return "";
}

const v1::CellVerdict* verdict_of(const v1::Verdicts& v, const std::string& key) {
  for (auto& c : v.cells())
    if (c.key() == key) return &c;
  return nullptr;
}

std::string signed_pct(double v) { return pct_text(v); }

std::string verdict_text(const v1::CellVerdict& v) {
  return v.verdict() + (v.has_change_pct() ? " " + signed_pct(v.change_pct()) : "");
}

std::string figure(bool has, double v) { return has ? fixed_text(v, 2) : ""; }

// The cell's earlier nights, its band and tonight, as a small chart.
std::string band_chart(const v1::CellVerdict& v) {
  BandChart c;
  for (auto& n : v.history()) {
    c.nights.push_back(n.value());
    c.night_titles.push_back(n.started_at() + " (run " + std::to_string(n.run_id()) +
                             "): " + fixed_text(n.value(), 2));
  }
  if (v.has_band_low()) c.band_low = v.band_low();
  if (v.has_band_high()) c.band_high = v.band_high();
  if (v.has_value()) {
    c.tonight = v.value();
    c.tonight_title = "tonight: " + fixed_text(v.value(), 2) +
                      (v.has_change_pct() ? " (" + signed_pct(v.change_pct()) + ")" : "");
  }
  if (v.has_confirm_value()) {
    c.confirmation = v.confirm_value();
    c.confirmation_title = "measured again: " + fixed_text(v.confirm_value(), 2);
  }
  c.tonight_class = verdict_class(v.verdict());
  return svg_band_chart(c);
}

// An A/B cell's pairs: A's and B's figure of each, in the order they ran, then the
// confirmation's ("confirm 1", ...).
std::string pairs_table(const v1::CellVerdict& c) {
  if (c.pairs().empty()) return "";
  std::string t =
      "<table class=\"pairs\"><thead><tr><th>pair</th><th>order</th><th class=\"num\">A</th>"
      "<th class=\"num\">B</th><th class=\"num\">B/A</th></tr></thead><tbody>";
  auto rows = [&](const google::protobuf::RepeatedPtrField<v1::ABPair>& pairs, const std::string& label) {
    for (int i = 0; i < pairs.size(); ++i) {
      const auto& p = pairs[i];
      const auto change = pair_change_pct(p);
      t += "<tr><td>" + label + std::to_string(i + 1) + "</td><td>" + pair_order(p) +
           "</td><td class=\"num\">" + pair_figure_text(p, false) + "</td><td class=\"num\">" +
           pair_figure_text(p, true) + "</td><td class=\"num\">" + (change ? signed_pct(*change) : "") +
           "</td></tr>";
    }
  };
  rows(c.pairs(), "");
  rows(c.confirm_pairs(), "confirm ");
  return t + "</tbody></table>";
}

// A regression's functions that grew most (CellVerdict.grew), per request, in their unit.
std::string grew_table(const v1::CellVerdict& c) {
  if (c.grew().empty()) return "";
  const bool us = c.grew(0).unit() == kCpuUsUnit;
  const int digits = us ? 2 : 1;
  std::string t = std::string("<table class=\"grew\"><thead><tr><th>what grew (") +
                  (us ? "CPU µs" : "instructions") +
                  " per request)</th><th class=\"num\">self A</th><th "
                  "class=\"num\">self B</th><th class=\"num\">B − A</th><th class=\"num\">incl. A</th><th "
                  "class=\"num\">incl. B</th></tr></thead><tbody>";
  for (auto& g : c.grew())
    t += "<tr><td>" + html_escape(g.function()) + "</td><td class=\"num\">" + fixed_text(g.self_a(), digits) +
         "</td><td class=\"num\">" + fixed_text(g.self_b(), digits) + "</td><td class=\"num\">" +
         fixed_text(g.self_b() - g.self_a(), digits) + "</td><td class=\"num\">" +
         fixed_text(g.inclusive_a(), digits) + "</td><td class=\"num\">" +
         fixed_text(g.inclusive_b(), digits) + "</td></tr>";
  return t + "</tbody></table>";
}

void write_verdicts_section(std::ostream& o, const v1::Verdicts& v, const std::vector<CellResult>& cells,
                            const char* id = "verdicts", const char* heading = "Against the baseline") {
  const std::string level = fmt::format("{:.2g}", v.cell_level());
  o << "<section id=\"" << id << "\"><h2>" << heading << "</h2><p class=\"note\">" << html_escape(v.metric())
    << " compared with " << html_escape(v.baseline()) << " (" << html_escape(v.method())
    << "): a regression is worse "
    << "by more than " << fixed_text(v.threshold_pct(), 1)
    << " % and outside the band a night of unchanged code falls in; "
    << "at most " << fixed_text(v.false_alarm_pct(), 2) << " % of such nights alarm (" << level
    << " a cell). "
    << "mdc: the smallest change the cell could show 95 % of the time.";
  if (!v.note().empty()) o << " " << html_escape(v.note()) << ".";
  o << "</p><div class=\"scroll\"><table class=\"verdicts\"><thead><tr><th>cell</th><th>verdict</th>"
       "<th class=\"num\">change</th><th class=\"num\">base</th><th class=\"num\">new</th>"
       "<th class=\"num\">again</th><th class=\"num\">band</th><th class=\"num\">mdc</th>"
       "<th class=\"num\">nights</th><th>nights, band, tonight</th><th>why</th></tr></thead><tbody>";
  auto line = [&](const v1::CellVerdict& c) {
    o << "<tr class=\"verdict\" data-key=\"" << html_escape(c.key()) << "\"><td>" << html_escape(c.key())
      << "</td><td class=\"" << verdict_class(c.verdict()) << "\">" << html_escape(c.verdict())
      << "</td><td class=\"num\">" << (c.has_change_pct() ? signed_pct(c.change_pct()) : "")
      << "</td><td class=\"num\">" << figure(c.has_baseline(), c.baseline()) << "</td><td class=\"num\">"
      << figure(c.has_value(), c.value()) << "</td><td class=\"num\">"
      << figure(c.has_confirm_value(), c.confirm_value()) << "</td><td class=\"num\">"
      << (c.has_band_low() && c.has_band_high()
              ? fixed_text(c.band_low(), 2) + " .. " + fixed_text(c.band_high(), 2)
              : "")
      << "</td><td class=\"num\">" << (c.has_mdc_pct() ? fixed_text(c.mdc_pct(), 1) + " %" : "")
      << "</td><td class=\"num\">" << c.nights() << "</td><td>" << band_chart(c)
      << (c.has_by_history() ? "" : pairs_table(c)) << grew_table(c)  // a nightly A/B's pairs: in its section
      << (c.has_by_history() ? band_chart(c.by_history()) : "") << "</td><td class=\"why\">"
      << html_escape(c.reason())
      << (c.has_by_history()
              ? "<br>" + html_escape(history_beside(c)) + ": " + html_escape(c.by_history().reason())
              : "")
      << "</td></tr>";
  };
  std::vector<std::string> shown;
  for (auto& c : cells)  // the matrix's order first, then keys only the baseline has
    if (auto* cv = verdict_of(v, c.cell.key())) {
      line(*cv);
      shown.push_back(cv->key());
    }
  for (auto& cv : v.cells())
    if (std::find(shown.begin(), shown.end(), cv.key()) == shown.end()) line(cv);
  o << "</tbody></table></div></section>";
}

void write_matrix(std::ostream& o, const std::vector<CellResult>& cells, const ReportSections& sections) {
  o << "<section id=\"matrix\"><h2>Matrix</h2>";
  if (cells.empty()) {
    o << "<p>No cell has finished yet.</p></section>";
    return;
  }
  const auto header = summary_header(cells);
  auto numeric = [&](size_t i) {
    return i > 0 && i + 1 < header.size() && header[i] != "client" && header[i] != "keep-alive";
  };
  o << "<div class=\"scroll\"><table id=\"matrix-table\"><thead><tr>";
  for (size_t i = 0; i < header.size(); ++i)
    o << "<th" << (numeric(i) ? " class=\"num\"" : "") << ">" << html_escape(header[i]) << "</th>";
  if (sections.verdicts) o << "<th>vs baseline</th>";
  o << "</tr></thead><tbody>";
  const auto rows = summary_rows(cells);
  for (size_t r = 0; r < rows.size(); ++r) {
    const auto& c = cells[r];
    const char* state = !c.ok() ? "failed" : c.flags().empty() ? "ok" : "flagged";
    o << "<tr class=\"cell " << state << "\" data-key=\"" << html_escape(c.cell.key()) << "\">";
    for (size_t i = 0; i < rows[r].size(); ++i) {
      const bool last = i + 1 == rows[r].size();
      o << "<td"
        << (last         ? " class=\"status\""
            : numeric(i) ? " class=\"num\""
                         : "")
        << ">" << html_escape(rows[r][i]) << "</td>";
    }
    if (sections.verdicts) {
      if (auto* cv = verdict_of(*sections.verdicts, c.cell.key()))
        o << "<td class=\"" << verdict_class(cv->verdict()) << "\">" << html_escape(verdict_text(*cv))
          << "</td>";
      else
        o << "<td></td>";
    }
    o << "</tr>";
  }
  o << "</tbody></table></div><p class=\"note\">Figures of each cell's median-QPS repetition. qps: requests "
       "per "
       "second over the measured window; latencies from the client's histogram; cpu% = 100 per core; MB = "
       "peak "
       "RSS; n/a: the load client cannot give the figure.</p></section>";
}

// How charts lay the matrix out: x = the `threads` axis, else the last numeric axis (else
// the last axis, as categories); one panel per `delay_ms` value; one line per target × the
// other axes.
struct ChartLayout {
  Pivot pivot;
  std::optional<std::vector<double>> x_values;
  std::vector<std::string> panels;              // panel label of each group, "" when one panel
  std::vector<std::vector<size_t>> panel_rows;  // pivot rows of each panel
  std::vector<std::string> series_names;        // per pivot row
};

ChartLayout chart_layout(const std::vector<CellResult>& cells) {
  ChartLayout l;
  auto numeric_x = numeric_column_axis(cells);
  auto x = numeric_x ? numeric_x : column_axis(cells);
  l.pivot = pivot(cells, x);
  if (numeric_x) {
    l.x_values.emplace();
    for (auto& c : l.pivot.columns) l.x_values->push_back(std::strtod(c.c_str(), nullptr));
  }
  const auto& axes = cells.front().cell.axes;
  std::optional<size_t> panel_label;  // index into pivot labels
  for (size_t i = 0, label = 1; i < axes.size(); ++i) {
    if (x && i == *x) continue;
    if (axes[i].first == "delay_ms") panel_label = label;
    ++label;
  }
  for (size_t r = 0; r < l.pivot.rows.size(); ++r) {
    const auto& labels = l.pivot.rows[r].labels;
    std::string panel = panel_label ? l.pivot.label_header[*panel_label] + " " + labels[*panel_label] : "";
    auto it = std::find(l.panels.begin(), l.panels.end(), panel);
    if (it == l.panels.end()) {
      l.panels.push_back(panel);
      l.panel_rows.emplace_back();
      it = l.panels.end() - 1;
    }
    l.panel_rows[static_cast<size_t>(it - l.panels.begin())].push_back(r);
    std::string name = labels[0];
    for (size_t i = 1; i < labels.size(); ++i)
      if (!panel_label || i != *panel_label) name += " · " + l.pivot.label_header[i] + " " + labels[i];
    l.series_names.push_back(name);
  }
  return l;
}

void write_chart(std::ostream& o, const ChartLayout& l, size_t panel, const CellMetric& m) {
  LineChart c;
  c.metric = m.id;
  c.panel = l.panels[panel];
  c.title = std::string(m.title) + (c.panel.empty() ? "" : ", " + c.panel);
  c.x_title = l.pivot.column_title;
  c.y_title = m.title;
  c.x_labels = l.pivot.columns;
  c.x_values = l.x_values;
  for (size_t r : l.panel_rows[panel]) {
    ChartSeries s{l.series_names[r], {}};
    for (auto* cell : l.pivot.rows[r].cells) s.y.push_back(cell ? m.value(*cell) : std::nullopt);
    c.series.push_back(std::move(s));
  }
  o << "<figure><figcaption>" << html_escape(c.title) << "</figcaption>" << svg_line_chart(c)
    << "<ul class=\"legend\">";
  for (size_t i = 0; i < c.series.size(); ++i)
    o << "<li><span style=\"background:" << series_colour(i) << "\"></span>" << html_escape(c.series[i].name)
      << "</li>";
  o << "</ul></figure>";
}

// The objective the curves show: the first latency figure the search held (p99 before p999 ...),
// else the error rate.
std::string curve_figure(const v1::SearchResult& s) {
  for (const char* f : {"p99_ms", "p999_ms", "p90_ms", "p50_ms", "max_ms", "errors_pct"})
    if (s.slo().count(f)) return f;
  return "p99_ms";
}

// Capacity under the objectives: per target one chart of every cell's steps (latency against
// the rate asked), the objective's line and each capacity found.
void write_capacity(std::ostream& o, const std::vector<CellResult>& cells) {
  o << "<section id=\"search\"><h2>Capacity searches</h2><p class=\"note\">Each line is one cell's median "
       "search: the latency each counted step measured (from the intended send times) against the rate it "
       "asked; the dashed line is the objective, the ring the capacity found.</p><div class=\"charts\">";
  std::vector<std::string> targets;
  for (auto& c : cells)
    if (!c.searches.empty() && std::find(targets.begin(), targets.end(), c.cell.target) == targets.end())
      targets.push_back(c.cell.target);
  for (const auto& target : targets) {
    CapacityChart chart;
    chart.panel = target;
    for (auto& c : cells) {
      if (c.cell.target != target || c.searches.empty()) continue;
      const auto& s = c.median_search();
      const std::string figure = curve_figure(s);
      chart.y_title = figure == "errors_pct" ? "errors %" : figure.substr(0, figure.size() - 3) + " ms";
      if (s.slo().count(figure)) chart.limit = s.slo().at(figure);
      CapacityChart::Series series;
      const std::string key = c.cell.key();
      series.name = key.size() > target.size() + 1 ? key.substr(target.size() + 1) : key;
      for (const auto& step : s.steps()) {
        if (!step.counted() || !step.has_repetition()) continue;
        const auto y = slo_value(step.repetition(), figure);
        if (!y) continue;  // no request measured: no point
        series.points.emplace_back(step.rate(), *y);
        if (s.capacity() > 0 && step.rate() == s.capacity() && step.verdict() == "pass")
          series.found = {step.rate(), *y};
      }
      chart.series.push_back(std::move(series));
    }
    chart.title = "capacity searches of " + target;
    o << "<figure><figcaption>" << html_escape(target) << "</figcaption>" << svg_capacity_chart(chart)
      << "<ul class=\"legend\">";
    for (size_t i = 0; i < chart.series.size(); ++i)
      o << "<li><span style=\"background:" << series_colour(i) << "\"></span>"
        << html_escape(chart.series[i].name) << "</li>";
    o << "</ul></figure>";
  }
  o << "</div></section>";
}

void write_chart_section(std::ostream& o, const ChartLayout& l, const char* id, const char* heading,
                         std::initializer_list<const char*> metrics) {
  o << "<section id=\"" << id << "\"><h2>" << heading << "</h2><div class=\"charts\">";
  for (size_t p = 0; p < l.panels.size(); ++p)
    for (const char* m : metrics) write_chart(o, l, p, cell_metric(m));
  o << "</div></section>";
}

void write_trends(std::ostream& o, const TrendSection& t) {
  o << "<section id=\"trends\"><h2>Trends</h2><p class=\"note\">" << html_escape(t.metric)
    << " of each cell over earlier runs, oldest first</p><div class=\"scroll\"><table "
       "class=\"trends\"><thead><tr>"
       "<th>cell</th><th>runs</th><th>trend</th><th class=\"num\">first</th><th class=\"num\">last</th>"
       "<th class=\"num\">change</th><th>last commit</th></tr></thead><tbody>";
  for (auto& [key, points] : t.by_key) {
    std::vector<double> values;
    std::vector<std::string> titles;
    for (auto& p : points) {
      values.push_back(p.value);
      titles.push_back(p.date + " " + p.commit.substr(0, 12) + ": " + fixed_text(p.value, 2));
    }
    std::string change;
    if (values.size() > 1 && values.front() != 0)
      change = signed_pct((values.back() / values.front() - 1) * 100);
    o << "<tr class=\"trend\" data-key=\"" << html_escape(key) << "\"><td>" << html_escape(key)
      << "</td><td class=\"num\">" << points.size() << "</td><td>" << svg_sparkline(values, titles)
      << "</td><td class=\"num\">" << (values.empty() ? "" : fixed_text(values.front(), 2))
      << "</td><td class=\"num\">" << (values.empty() ? "" : fixed_text(values.back(), 2))
      << "</td><td class=\"num\">" << change << "</td><td>"
      << html_escape(points.empty() ? "" : points.back().commit.substr(0, 12)) << "</td></tr>";
  }
  o << "</tbody></table></div></section>";
}

}  // namespace

const char* report_style() { return kStyle; }

std::string html_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += ch;
    }
  return out;
}

void write_html_report(std::ostream& o, const json& header, const std::string& title,
                       const std::vector<CellResult>& cells, const ReportSections& sections) {
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
    << "<title>" << html_escape(title) << " · loadlab report</title><style>" << kStyle
    << "</style></head><body><main>";
  write_run_header(o, header, title, cells.size());
  o << "<nav>";
  if (sections.verdicts) o << "<a href=\"#verdicts\">verdicts</a>";
  if (sections.ab) o << "<a href=\"#ab\">A/B</a>";
  o << "<a href=\"#matrix\">matrix</a>";
  if (any_searched(cells)) o << "<a href=\"#capacity\">capacity</a><a href=\"#search\">searches</a>";
  if (!cells.empty())
    o << "<a href=\"#throughput\">throughput</a><a href=\"#latency\">latency</a><a href=\"#cost\">cost</a>";
  if (sections.trends) o << "<a href=\"#trends\">trends</a>";
  if (!sections.profiles.empty()) o << "<a href=\"#profiles\">profiles</a>";
  o << "</nav>";
  if (sections.verdicts) write_verdicts_section(o, *sections.verdicts, cells);
  if (sections.ab)
    write_verdicts_section(o, *sections.ab, cells, "ab", "A/B: build B against build A, pair by pair");
  write_matrix(o, cells, sections);
  if (!cells.empty()) {
    const ChartLayout layout = chart_layout(cells);
    if (any_searched(cells)) {
      write_chart_section(o, layout, "capacity", "Capacity within the objectives", {"capacity"});
      write_capacity(o, cells);
    }
    write_chart_section(o, layout, "throughput", "Throughput", {"qps"});
    write_chart_section(o, layout, "latency", "Latency", {"p50_ms", "p99_ms"});
    write_chart_section(o, layout, "cost", "Server and client cost",
                        {"server_cpu_pct", "client_cpu_pct", "server_mb", "client_mb"});
  }
  if (sections.trends) write_trends(o, *sections.trends);
  write_profiles_section(o, sections.profiles, sections.profile_diffs);
  o << "<footer>loadlab " << html_escape(text_at(header, {"loadlab_version"}))
    << " · made from result.json (schema " << html_escape(text_at(header, {"schema_version"}))
    << "); rebuild with <code>loadlab report DIR</code></footer></main></body></html>\n";
}

ReportSections sections_of(const nlohmann::json& header) {
  ReportSections s;
  auto text = [](const nlohmann::json& j, const char* key) {
    return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
  };
  for (auto [key, out] : {std::pair{"verdicts", &s.verdicts}, std::pair{"ab", &s.ab}}) {
    if (!header.is_object() || !header.contains(key) || !header[key].is_object()) continue;
    v1::Verdicts v;
    try {
      proto::from_json(header[key].dump(), &v);
      *out = v;
    } catch (const InputError&) {  // read leniently: a section that does not parse is left out
    }
  }
  if (header.is_object() && header.contains("trends") && header["trends"].is_object()) {
    const auto& t = header["trends"];
    TrendSection trends;
    trends.metric = text(t, "metric");
    if (t.contains("cells") && t["cells"].is_object())
      for (auto& [key, points] : t["cells"].items()) {
        if (!points.is_array()) continue;
        auto& out = trends.by_key[key];
        for (auto& p : points)
          if (p.is_array() && p.size() == 3 && p[0].is_string() && p[1].is_string() && p[2].is_number())
            out.push_back({p[0].get<std::string>(), p[1].get<std::string>(), p[2].get<double>()});
      }
    s.trends = trends;
  }
  return s;
}

}  // namespace loadlab::controller
