#include "report/reporters.hpp"

#include <algorithm>
#include <sstream>

#include "judge/ab_verdicts.hpp"
#include "judge/compare.hpp"
#include "judge/verdict.hpp"
#include "loadlab/proto/protocols.hpp"
#include "loadlab/shared/format.hpp"
#include "report/matrix_pivot.hpp"
#include "report/report_html.hpp"
#include "results/cell_metrics.hpp"
#include "results/quality_flags.hpp"

namespace loadlab::controller {

const std::vector<std::pair<std::string, std::string>>& axes_of(const std::vector<CellResult>& cells) {
  static const std::vector<std::pair<std::string, std::string>> none;
  return cells.empty() ? none : cells.front().cell.axes;  // every cell has the same axes
}

namespace {
std::string ms(double us) { return fixed_text(us / 1000.0, 2); }
bool unavailable(const v1::Repetition& r, const char* figure) {
  return std::find(r.unavailable().begin(), r.unavailable().end(), figure) != r.unavailable().end();
}
// A latency figure in ms, or "n/a" (table) / "" (CSV) where the client cannot give it.
std::string latency_ms(const v1::Repetition& r, const char* figure, double us) {
  return unavailable(r, figure) ? "n/a" : ms(us);
}
std::string mb(uint64_t kb) { return fixed_text(static_cast<double>(kb) / 1024.0, 1); }
// "ok", or the saturation flags that make the row suspect.
std::string flags_text(const std::vector<std::string>& flags) {
  if (flags.empty()) return "ok";
  std::string out = "ok, but";
  for (auto& f : summarized_flags(flags)) out += " " + f;
  return out;
}

// A latency figure in µs for CSV; empty where the client cannot give it.
std::string csv_us(const v1::Repetition& r, const char* figure, double us) {
  if (unavailable(r, figure)) return "";
  std::ostringstream o;
  o << us;
  return o.str();
}

// The CPUs the repetition's target and load ran on, as their Usage read them back: the
// server's, then each load agent's different set ("0/1", "0-3/4-7+4-7"); "" from agents that
// do not say.
std::pair<std::string, std::string> cpu_sets(const v1::Repetition& r) {
  std::string client;
  std::vector<std::string> seen;
  for (auto& p : r.load_parts()) {
    const auto& c = p.client().cpus();
    if (c.empty() || std::find(seen.begin(), seen.end(), c) != seen.end()) continue;
    seen.push_back(c);
    client += (client.empty() ? "" : "+") + c;
  }
  return {r.server().cpus(), client};
}

std::string cpus_text(const v1::Repetition& r) {
  auto [server, client] = cpu_sets(r);
  if (server.empty() && client.empty()) return "-";
  return (server.empty() ? "?" : server) + "/" + (client.empty() ? "?" : client);
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}
}  // namespace

std::string failed_status(const std::string& error) {
  std::string out = "FAILED: ";
  auto end = error.find_last_not_of(" \r\n");
  for (char ch : error.substr(0, end == std::string::npos ? 0 : end + 1)) {
    if (ch == '\r') continue;
    if (ch != '\n') {
      out += ch;
      continue;
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += out.back() == ':' ? " " : " | ";
  }
  return out;
}

namespace {
bool connections_is_axis(const std::vector<std::pair<std::string, std::string>>& axes) {
  for (auto& [name, text] : axes)
    if (name == "connections") return true;
  return false;
}

// The fixed settings (not axes) that change what every cell measures, as columns when they
// are not the default: a protocol other than http1, its TLS version, HTTP/2 streams, Poisson
// arrivals, a pacing granularity. The
// same for every cell of a run (a TLS version only when the protocol is fixed too).
std::vector<std::pair<std::string, std::string>> fixed_settings(const Cell& c) {
  auto axis = [&](const char* name) {
    return std::any_of(c.axes.begin(), c.axes.end(), [&](auto& a) { return a.first == name; });
  };
  std::vector<std::pair<std::string, std::string>> v;
  if (!axis("protocol") && c.protocol != "http1") v.emplace_back("protocol", c.protocol);
  if (!axis("protocol") && !axis("tls_version") && !c.tls_version.empty())
    v.emplace_back("tls_version", c.tls_version);
  if (!axis("streams") && c.streams > 1) v.emplace_back("streams", std::to_string(c.streams));
  if (!axis("arrivals") && c.rate > 0 && c.arrivals != proto::kUniformArrivals)
    v.emplace_back("arrivals", c.arrivals);
  if (!axis("pace_granularity_us") && c.rate > 0 && c.pace_granularity_us > 0)
    v.emplace_back("pace_granularity_us", std::to_string(c.pace_granularity_us));
  return v;
}
}  // namespace

std::vector<std::string> cell_header(const std::vector<CellResult>& cells, bool human) {
  std::vector<std::string> h{"target"};
  for (auto& [name, text] : axes_of(cells)) h.push_back(human ? find_knob(name)->column : name);
  if (!cells.empty())
    for (auto& [name, text] : fixed_settings(cells.front().cell))
      h.push_back(human ? find_knob(name)->column : name);
  if (!connections_is_axis(axes_of(cells))) h.push_back(human ? "conns" : "connections");
  return h;
}

std::vector<std::string> cell_values(const Cell& c, bool human) {
  std::vector<std::string> v{c.target};
  for (auto& [name, text] : c.axes) {
    if (name == "keep_alive")
      v.push_back(human ? (text == "1" ? "yes" : "no") : (text == "1" ? "true" : "false"));
    else if (name == "rate" && text == "0" && human)
      v.push_back("closed");
    else
      v.push_back(text);
  }
  for (auto& [name, text] : fixed_settings(c)) v.push_back(text);
  if (!connections_is_axis(c.axes)) v.push_back(std::to_string(c.connections));
  return v;
}

namespace {
// "31200 (30400..31600)": the median search's capacity and the spread of the repetitions'.
std::string capacity_text(const CellResult& c) {
  if (c.searches.empty()) return "-";
  std::string t = fixed_text(c.capacity(), 0);
  if (c.searches.size() > 1)
    t += " (" + fixed_text(c.capacity_min(), 0) + ".." + fixed_text(c.capacity_max(), 0) + ")";
  return t;
}

// The cell's instructions per request, "n/a" where they could not be counted, "-" where the
// cell does not count them.
std::string instructions_text(const CellResult& c) {
  if (!c.cell.instructions) return "-";
  auto v = c.instructions();
  return v ? fixed_text(*v, 0) : "n/a";
}

// How the median search ended: "found", "broken-at-min", ...
std::string search_end(const CellResult& c) { return c.searches.empty() ? "" : c.median_search().end(); }
}  // namespace

std::vector<std::string> summary_header(const std::vector<CellResult>& cells) {
  auto h = cell_header(cells, true);
  if (any_searched(cells)) h.insert(h.end(), {"capacity", "search"});
  h.insert(h.end(), {"qps", "p50 ms", "p90 ms", "p99 ms", "max ms", "errors", "srv cpu%", "srv MB",
                     "cli cpu%", "cli MB"});
  if (any_counted(cells)) h.push_back("instr/req");
  h.insert(h.end(), {"cpus", "status"});
  return h;
}

std::vector<std::vector<std::string>> summary_rows(const std::vector<CellResult>& cells) {
  std::vector<std::vector<std::string>> rows;
  for (auto& c : cells) {
    std::vector<std::string> row = cell_values(c.cell, true);
    if (any_searched(cells)) row.insert(row.end(), {capacity_text(c), search_end(c)});
    if (c.ok()) {
      const auto& m = c.median();
      row.insert(row.end(),
                 {fixed_text(m.qps(), 0), latency_ms(m, "latency.p50_us", m.latency().p50_us()),
                  latency_ms(m, "latency.p90_us", m.latency().p90_us()),
                  latency_ms(m, "latency.p99_us", m.latency().p99_us()),
                  latency_ms(m, "latency.max_us", m.latency().max_us()), std::to_string(m.errors()),
                  fixed_text(m.server().cpu_pct(), 1), mb(m.server().rss_kb_peak()),
                  fixed_text(m.client().cpu_pct(), 1), mb(m.client().rss_kb_peak())});
      if (any_counted(cells)) row.push_back(instructions_text(c));
      row.insert(row.end(), {cpus_text(m), flags_text(c.flags())});
    } else {
      for (int i = 0, n = any_counted(cells) ? 12 : 11; i < n; ++i) row.push_back("-");
      row.push_back(failed_status(c.error));
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

void write_table(std::ostream& out, const std::vector<CellResult>& cells) {
  auto header = summary_header(cells);
  auto rows = summary_rows(cells);
  std::vector<size_t> width(header.size());
  for (size_t i = 0; i < header.size(); ++i) width[i] = header[i].size();
  for (auto& r : rows)
    for (size_t i = 0; i + 1 < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  auto line = [&](const std::vector<std::string>& r) {
    std::string s;
    for (size_t i = 0; i < r.size(); ++i) {
      bool last = i + 1 == r.size();
      if (i == 0)
        s += r[i] + std::string(width[i] - std::min(width[i], r[i].size()), ' ');
      else if (last)
        s += "  " + r[i];
      else
        s += "  " + std::string(width[i] - std::min(width[i], r[i].size()), ' ') + r[i];
    }
    out << s << "\n";
  };
  line(header);
  for (auto& r : rows) line(r);
}

namespace {
std::string markdown_cell(const std::string& f) {
  std::string esc;
  for (char ch : f)
    esc += ch == '|' ? std::string("\\|") : ch == '\n' ? std::string(" ") : std::string(1, ch);
  return esc;
}

void markdown_row(std::ostream& out, const std::vector<std::string>& fields) {
  out << "|";
  for (auto& f : fields) out << " " << markdown_cell(f) << " |";
  out << "\n";
}

// One metric as the seed articles lay it out: rows target × the other axes, columns the
// column axis's values.
void markdown_pivot(std::ostream& out, const CellMetric& metric, const Pivot& p) {
  out << "## " << metric.title << " by " << p.column_title << "\n\n";
  auto header = p.label_header;
  for (auto& c : p.columns)
    header.push_back(p.columns.size() == 1 && c == "all" ? metric.title : p.column_title + " " + c);
  markdown_row(out, header);
  out << "|";
  for (size_t i = 0; i < header.size(); ++i) out << (i < p.label_header.size() ? " --- |" : " ---: |");
  out << "\n";
  for (auto& r : p.rows) {
    auto fields = r.labels;
    for (auto* c : r.cells) fields.push_back(c ? metric_text(metric, *c) : "");
    markdown_row(out, fields);
  }
  out << "\n";
}
}  // namespace

void write_markdown(std::ostream& out, const std::string& title, const std::vector<CellResult>& cells) {
  out << "# " << markdown_cell(title) << "\n\n";
  const Pivot p = pivot(cells, column_axis(cells));
  if (any_searched(cells)) markdown_pivot(out, cell_metric("capacity"), p);
  for (const char* id : {"qps", "p99_ms", "server_cpu_pct", "server_mb", "client_cpu_pct"})
    markdown_pivot(out, cell_metric(id), p);
  if (any_counted(cells)) markdown_pivot(out, cell_metric("instructions"), p);
  out << "## All figures\n\n";
  auto header = summary_header(cells);
  const size_t cell_columns = cell_header(cells, true).size();
  markdown_row(out, header);
  out << "|";
  for (size_t i = 0; i < header.size(); ++i) {
    const bool text = i == 0 || i + 1 == header.size() || header[i] == "search" ||
                      (i < cell_columns && (header[i] == "client" || header[i] == "protocol"));
    out << (text ? " --- |" : " ---: |");
  }
  out << "\n";
  for (auto& r : summary_rows(cells)) markdown_row(out, r);
  if (any_searched(cells))
    out << "\ncapacity: the highest rate (req/s) each cell held within the search's objectives, found by an "
           "exponential ramp, bisection and a validation run (the median search; in brackets the spread over "
           "the "
           "repetitions); search: how it ended; the other figures are its last passing step's (the "
           "validation run, when it found one).\n";
  out << "\nqps: requests per second over the measured window (median repetition); latencies from the "
         "client's histogram; cpu% = 100 per core; MB = peak RSS; cpus: the CPUs the server / the client ran "
         "on; FAILED: the cell failed (see All figures); "
         "n/a: the client cannot give the figure.\n";
}

void write_csv(std::ostream& out, const std::vector<CellResult>& cells) {
  std::string header;
  for (auto& h : cell_header(cells, false)) header += h + ",";
  const bool search = any_searched(cells);
  if (search) header += "capacity,capacity_min,capacity_max,search,";
  const bool counted = any_counted(cells);
  if (counted) header += "instructions_per_request,instructions_unavailable,";
  out << header
      << "requests,errors,duration_s,qps,qps_min,qps_max,p50_us,p90_us,p99_us,p999_us,max_us,mean_us,"
         "server_cpu_pct,server_rss_kb_mean,server_rss_kb_peak,client_cpu_pct,client_rss_kb_mean,"
         "client_rss_kb_peak,server_cpus,client_cpus,repetitions,flags,error\n";
  for (auto& c : cells) {
    for (auto& v : cell_values(c.cell, false)) out << csv_field(v) << ",";
    if (search) {
      if (c.searches.empty())
        out << ",,,,";
      else
        out << fixed_text(c.capacity(), 2) << "," << fixed_text(c.capacity_min(), 2) << ","
            << fixed_text(c.capacity_max(), 2) << "," << csv_field(search_end(c)) << ",";
    }
    if (counted) {
      auto v = c.instructions();
      out << (v ? fixed_text(*v, 1) : "") << "," << csv_field(c.instructions_unavailable()) << ",";
    }
    if (c.ok()) {
      const auto& m = c.median();
      out << m.requests() << "," << m.errors() << "," << fixed_text(m.duration_s(), 4) << ","
          << fixed_text(m.qps(), 2) << "," << fixed_text(c.qps_min(), 2) << "," << fixed_text(c.qps_max(), 2)
          << "," << csv_us(m, "latency.p50_us", m.latency().p50_us()) << ","
          << csv_us(m, "latency.p90_us", m.latency().p90_us()) << ","
          << csv_us(m, "latency.p99_us", m.latency().p99_us()) << ","
          << csv_us(m, "latency.p999_us", m.latency().p999_us()) << ","
          << csv_us(m, "latency.max_us", m.latency().max_us()) << "," << fixed_text(m.latency().mean_us(), 1)
          << "," << fixed_text(m.server().cpu_pct(), 2) << "," << m.server().rss_kb_mean() << ","
          << m.server().rss_kb_peak() << "," << fixed_text(m.client().cpu_pct(), 2) << ","
          << m.client().rss_kb_mean() << "," << m.client().rss_kb_peak() << ",";
      auto [server_cpus, client_cpus] = cpu_sets(m);
      out << csv_field(server_cpus) << "," << csv_field(client_cpus) << "," << c.reps.size() << ",";
    } else {
      out << ",,,,,,,,,,,,,,,,,,,," << c.reps.size() << ",";
    }
    std::string flags;
    for (auto& f : summarized_flags(c.flags())) flags += (flags.empty() ? "" : " ") + f;
    out << csv_field(flags) << ",";
    out << csv_field(c.error) << "\n";
  }
}

namespace {
void markdown_verdicts(std::ostream& out, const std::string& heading, const v1::Verdicts& v) {
  out << "\n## " << heading << "\n\n"
      << markdown_cell(v.metric() + " against " + v.baseline() + " (" + v.method() + ")") << "\n\n";
  markdown_row(out, {"cell", "verdict", "change", "base", "new", "mdc", "nights", "why"});
  out << "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |\n";
  auto num = [](bool has, double x) { return has ? fixed_text(x, 2) : std::string(); };
  for (auto& c : v.cells())
    markdown_row(out, {c.key(), c.verdict(), c.has_change_pct() ? pct_text(c.change_pct()) : "",
                       num(c.has_baseline(), c.baseline()), num(c.has_value(), c.value()),
                       c.has_mdc_pct() ? pct_text(c.mdc_pct(), false) : "", std::to_string(c.nights()),
                       c.reason() + (c.has_by_history() ? " " + history_beside(c) : "")});
  for (auto& c : v.cells()) {
    if (c.pairs().empty() || c.has_by_history()) continue;  // a nightly A/B's pairs: in its own section
    out << "\n" << markdown_cell(c.key() + " against " + c.a_key()) << ":\n\n";
    markdown_row(out, {"pair", "order", "A", "B", "B/A"});
    out << "| ---: | --- | ---: | ---: | ---: |\n";
    auto rows = [&](const google::protobuf::RepeatedPtrField<v1::ABPair>& pairs, const std::string& label) {
      for (int i = 0; i < pairs.size(); ++i) {
        const auto& p = pairs[i];
        const auto change = pair_change_pct(p);
        markdown_row(out, {label + std::to_string(i + 1), pair_order(p), pair_figure_text(p, false),
                           pair_figure_text(p, true), change ? pct_text(*change) : ""});
      }
    };
    rows(c.pairs(), "");
    rows(c.confirm_pairs(), "confirm ");
  }
  if (!v.note().empty()) out << "\n" << markdown_cell(v.note()) << "\n";
}
}  // namespace

void write_markdown_verdicts(std::ostream& out, const ReportSections& sections) {
  if (sections.verdicts) markdown_verdicts(out, "Against the baseline", *sections.verdicts);
  if (sections.ab) markdown_verdicts(out, "A/B", *sections.ab);
}

}  // namespace loadlab::controller
