#include "cli/history_cli.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <map>

#include "core/stats.hpp"
#include "history/history.hpp"
#include "history/night_verdicts.hpp"
#include "judge/change_points.hpp"
#include "judge/compare.hpp"
#include "loadlab/shared/flag_ranges.hpp"
#include "loadlab/shared/format.hpp"
#include "loadlab/shared/input_error.hpp"
#include "loadlab/shared/limits.hpp"

namespace loadlab::controller {

namespace {

// "2024-05-16T02:00:00Z" → "2024-05-16 02:00" (UTC).
std::string when(const std::string& utc) {
  std::string s = utc.substr(0, 16);
  std::replace(s.begin(), s.end(), 'T', ' ');
  return s;
}

std::string commit(const std::string& sha, bool dirty) {
  if (sha.empty()) return "-";
  return sha.substr(0, 10) + (dirty ? "+dirty" : "");
}

std::string number(double v) { return std::isfinite(v) ? fixed_text(v, 2) : "-"; }
std::string number(std::optional<double> v) { return v ? number(*v) : "-"; }

std::string joined(const std::vector<std::string>& items, size_t at_most = 12) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < at_most; ++i) out += (i ? ", " : "") + items[i];
  if (items.size() > at_most) out += ", … (" + std::to_string(items.size()) + " in all)";
  return out;
}

// The (scenario, cell) series the flags select; InputError naming the flag otherwise.
std::vector<std::pair<std::string, std::string>> selected_cells(const History& h,
                                                                const HistoryCliOptions& o) {
  auto all = h.cells();
  std::vector<std::pair<std::string, std::string>> out;
  std::vector<std::string> scenarios, keys;
  for (auto& [scenario, key] : all) {
    if (std::find(scenarios.begin(), scenarios.end(), scenario) == scenarios.end())
      scenarios.push_back(scenario);
    if (!o.scenario.empty() && scenario != o.scenario) continue;
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
    if (o.cell.empty() || key == o.cell) out.emplace_back(scenario, key);
  }
  if (!o.scenario.empty() && std::find(scenarios.begin(), scenarios.end(), o.scenario) == scenarios.end())
    throw InputError("--scenario", "no runs of scenario \"" + o.scenario + "\" in the history; known: " +
                                       (scenarios.empty() ? "none" : joined(scenarios)));
  if (!o.cell.empty() && out.empty())
    throw InputError("--cell", "no cell \"" + o.cell + "\" in the history" +
                                   (o.scenario.empty() ? "" : " of scenario " + o.scenario) +
                                   "; known: " + (keys.empty() ? "none" : joined(keys)));
  return out;
}

// The newest `last` points (all when 0).
std::vector<CellPoint> newest(std::vector<CellPoint> points, size_t last) {
  if (last && points.size() > last) points.erase(points.begin(), points.end() - static_cast<long>(last));
  return points;
}

void list_runs(const History& h, const HistoryCliOptions& o, std::ostream& out) {
  if (!o.scenario.empty()) selected_cells(h, o);  // an unknown --scenario is an error
  auto runs = h.runs(o.scenario);
  out << fmt::format("{:>5}  {:<16}  {:<24}  {:<16}  {:>6}  {:>6}  {}\n", "id", "started (UTC)", "scenario",
                     "commit", "ok", "failed", "result");
  for (auto& r : runs)
    out << fmt::format("{:5}  {:<16}  {:<24}  {:<16}  {:6}  {:6}  {}{}\n", r.id, when(r.started_at),
                       r.scenario, commit(r.git_commit, r.git_dirty), r.cells_ok, r.cells_failed,
                       r.result_path, r.finished_at.empty() ? "  (unfinished)" : "");
  out << runs.size() << " run" << (runs.size() == 1 ? "" : "s") << " in " << h.path() << "\n";
}

void trend(const History& h, const HistoryCliOptions& o, std::ostream& out) {
  const HistoryMetric& m = history_metric(o.metric.empty() ? "qps" : o.metric);
  for (auto& [scenario, key] : selected_cells(h, o)) {
    out << scenario << "  " << key << "  " << m.name << " (" << (m.higher_is_better ? "higher" : "lower")
        << " is better; median and range over repetitions)\n";
    // The range column padded by bytes, as printf did: its "–" is 3 bytes, 1 column.
    out << fmt::format("  {:<16}  {:<16}  {:>12}  {}\n", "started (UTC)", "commit", "median",
                       pad_left("min – max", 25));
    for (auto& p : newest(h.series(scenario, key, m), o.last)) {
      std::string range = "-", median = p.ok ? "n/a" : "FAILED";
      if (p.ok && !p.values.empty()) {
        auto [lo, hi] = std::minmax_element(p.values.begin(), p.values.end());
        range = number(*lo) + " – " + number(*hi);
        median = number(p.median());
      }
      out << fmt::format("  {:<16}  {:<16}  {:>12}  {}\n", when(p.started_at),
                         commit(p.git_commit, p.git_dirty), median, pad_left(range, 25));
    }
  }
}

// The median of v[begin, end).
double level(const std::vector<double>& v, size_t begin, size_t end) {
  std::vector<double> part(v.begin() + static_cast<long>(begin), v.begin() + static_cast<long>(end));
  std::sort(part.begin(), part.end());
  return part[(part.size() - 1) / 2];
}

// A target built from a commit: the commits of the last run before a change and the first after
// it ("" when the target is not built from one).
std::string target_commits(const CellPoint& before, const CellPoint& after) {
  if (before.target_commit.empty() && after.target_commit.empty()) return "";
  auto shown = [](const std::string& sha) { return sha.empty() ? std::string("(none)") : sha.substr(0, 12); };
  if (before.target_commit == after.target_commit)
    return "  target " + shown(after.target_commit) + " on both sides";
  return "  target " + shown(before.target_commit) + " → " + shown(after.target_commit);
}

void changes(const History& h, const HistoryCliOptions& o, std::ostream& out) {
  std::vector<const HistoryMetric*> metrics;
  if (!o.metric.empty())
    metrics.push_back(&history_metric(o.metric));
  else
    for (auto& name : metric_names()) metrics.push_back(&history_metric(name));
  ChangePointOptions cpo;
  size_t series_count = 0, change_count = 0, worse_count = 0;
  for (auto& [scenario, key] : selected_cells(h, o))
    for (const HistoryMetric* m : metrics) {
      // Only the runs where the cell finished and gave the figure make the series.
      std::vector<CellPoint> points;
      for (auto& p : newest(h.series(scenario, key, *m), o.last))
        if (p.ok && !p.values.empty()) points.push_back(p);
      if (points.empty()) continue;  // a figure the cell never gave (capacity: not a search)
      std::vector<double> medians;
      for (auto& p : points) medians.push_back(*p.median());  // each has values
      ++series_count;
      auto cps = find_change_points(medians, cpo);
      if (cps.empty()) continue;
      out << scenario << "  " << key << "  " << m->name << ": " << cps.size() << " change"
          << (cps.size() == 1 ? "" : "s") << " in " << medians.size() << " runs\n";
      for (size_t i = 0; i < cps.size(); ++i) {
        size_t begin = i ? cps[i - 1].index : 0, at = cps[i].index;
        size_t end = i + 1 < cps.size() ? cps[i + 1].index : medians.size();
        double before = level(medians, begin, at), after = level(medians, at, end);
        double shift = before != 0 ? (after - before) / before * 100 : 0;
        bool worse = m->higher_is_better ? shift < 0 : shift > 0;
        out << fmt::format("  {:<16}  commit {:<16}  {:>12} → {:<12}  {:>+6.1f} %  {:<6}  (p {:.3f}){}\n",
                           when(points[at].started_at), commit(points[at].git_commit, points[at].git_dirty),
                           number(before), number(after), shift, worse ? "worse" : "better", cps[i].p_value,
                           target_commits(points[at - 1], points[at]));
        ++change_count;
        worse_count += worse;
      }
    }
  out << change_count << " change" << (change_count == 1 ? "" : "s") << " (" << worse_count << " worse) in "
      << series_count << " series; E-divisive means, p < " << cpo.max_p_value << " over " << cpo.permutations
      << " permutations, levels of at least " << cpo.min_segment << " runs\n";
}

// The regression settings a scenario's nights are judged by: those stored with its runs, with
// --metric and --baseline-nights put over them.
RegressionDef replayed_regression(const History& h, const HistoryCliOptions& o, const std::string& scenario) {
  RegressionDef r;
  const auto stored = h.regression(scenario);
  if (stored.is_object() && !stored.empty())
    r = parse_regression(ObjectReader(stored, "/scenario/regression"));
  if (!o.metric.empty()) r.metric = o.metric;
  if (o.baseline_nights) {
    r.baseline_nights = o.baseline_nights;
    r.min_nights = std::min(r.min_nights, r.baseline_nights);
  }
  return r;
}

// What the verdicts of a scenario's cells add up to, night by night and cell by cell.
struct VerdictTally {
  std::map<int64_t, std::string> night_started;
  std::map<int64_t, bool> night_alarmed;
  std::map<std::string, std::map<Verdict, size_t>> counts;  // cell → verdict → nights
  std::map<std::string, std::vector<double>> mdcs;
  size_t judged = 0, inconclusive = 0;
};

// One night's verdict on a cell as a CSV line.
void verdict_csv_line(const std::string& scenario, const std::string& key, const Night& n,
                      const NightVerdict& v, std::ostream& out) {
  std::string reason = v.reason;
  std::replace(reason.begin(), reason.end(), '"', '\'');
  out << scenario << "," << n.run_id << "," << n.started_at << "," << key << "," << verdict_name(v.verdict)
      << "," << number(v.value) << "," << number(v.confirm_value) << "," << number(v.baseline) << ","
      << number(v.change_pct) << "," << number(v.mdc_pct) << "," << v.nights << "," << n.target_build << ",\""
      << reason << "\"\n";
}

// Judges every night of one cell and adds the verdicts to the tally (with --csv, writes them too).
void judge_cell_nights(const History& h, const HistoryCliOptions& o, const std::string& scenario,
                       const std::string& key, const RegressionDef& r, const VerdictOptions& vo,
                       VerdictTally& t, std::ostream& out) {
  auto cn = h.nights(scenario, key, history_metric(r.metric));
  auto v = judge_series(cn.nights, vo, cn.accepted);
  for (size_t i = 0; i < v.size(); ++i) {
    const Night& n = cn.nights[i];
    t.night_started[n.run_id] = n.started_at;
    t.night_alarmed[n.run_id] = t.night_alarmed[n.run_id] || v[i].verdict == Verdict::kRegression;
    ++t.counts[key][v[i].verdict];
    if (v[i].verdict != Verdict::kFailed) {
      ++t.judged;
      t.inconclusive += v[i].verdict == Verdict::kInconclusive;
    }
    if (v[i].mdc_pct) t.mdcs[key].push_back(*v[i].mdc_pct);
    if (o.csv) verdict_csv_line(scenario, key, n, v[i], out);
  }
}

// The table of a scenario's verdicts: the settings, a line per cell, and the nights' totals.
void verdict_table(const std::string& scenario, const std::vector<std::string>& keys, const RegressionDef& r,
                   const VerdictOptions& vo, size_t cells, VerdictTally& t, std::ostream& out) {
  size_t alarmed = 0;
  for (auto& [run, a] : t.night_alarmed) alarmed += a;
  out << scenario << ": " << t.night_started.size() << " nights of " << cells << " cells; metric " << r.metric
      << ", threshold " << r.threshold_pct << " %, at most " << r.false_alarm_pct
      << " % of nights may alarm (" << vo.alpha
      << " a cell, for a night and its confirmation both), bands of " << r.baseline_nights
      << " nights (at least " << r.min_nights << ")\n";
  out << fmt::format("  {:<28} {:>6} {:>6} {:>6} {:>12} {:>10} {:>11} {:>6} {:>10}\n", "cell", "nights",
                     "same", "noise", "inconclusive", "regression", "improvement", "failed", "mdc (med)");
  for (auto& key : keys) {
    auto& c = t.counts[key];
    size_t total = 0;
    for (auto& [verdict, n] : c) total += n;
    // The key padded by bytes, as printf did: a target name may hold UTF-8.
    out << fmt::format("  {} {:6} {:6} {:6} {:12} {:10} {:11} {:6} {:>9}%\n", pad_right(key, 28), total,
                       c[Verdict::kSame], c[Verdict::kNoise], c[Verdict::kInconclusive],
                       c[Verdict::kRegression], c[Verdict::kImprovement], c[Verdict::kFailed],
                       t.mdcs[key].empty() ? "-" : number(median(t.mdcs[key])));
  }
  out << fmt::format(
      "  nights with a regression: {} of {} ({:.1f} per 100); inconclusive: {} of {} cell-nights "
      "({:.1f} %)\n",
      alarmed, t.night_started.size(),
      t.night_started.empty() ? 0.0 : 100.0 * alarmed / t.night_started.size(), t.inconclusive, t.judged,
      t.judged ? 100.0 * t.inconclusive / t.judged : 0.0);
}

// The nightly verdict replayed over every night of each scenario's cells, each night against
// the nights before it: what `loadlab run --baseline history` said (or would have said) night
// by night, and what it adds up to.
void verdicts(const History& h, const HistoryCliOptions& o, std::ostream& out) {
  std::map<std::string, std::vector<std::string>> keys_of;
  for (auto& [scenario, key] : selected_cells(h, o)) keys_of[scenario].push_back(key);
  if (o.csv)
    out << "scenario,run_id,started_at,cell,verdict,value,confirm_value,baseline,change_pct,mdc_pct,nights,"
           "target_build,reason\n";
  for (auto& [scenario, keys] : keys_of) {
    const RegressionDef r = replayed_regression(h, o, scenario);
    // Every cell of the scenario counts for its level, also those --cell leaves out.
    size_t cells = 0;
    for (auto& [s, k] : h.cells()) cells += s == scenario;
    const VerdictOptions vo = verdict_options(r, cells);
    VerdictTally t;
    for (auto& key : keys) judge_cell_nights(h, o, scenario, key, r, vo, t, out);
    if (o.csv) continue;
    verdict_table(scenario, keys, r, vo, cells, t, out);
  }
}

// `accept CELL|all --run ID`: a new level.
void accept(History& h, const HistoryCliOptions& o, std::ostream& out) {
  const std::string scenario = h.accept(o.accept_cell, o.accept_run, o.accept_note);
  out << scenario << ": " << (o.accept_cell == "all" ? "every cell" : o.accept_cell)
      << " starts a new level at run " << o.accept_run << "; nights judged from now on compare with it\n";
}

}  // namespace

int run_history(const HistoryCliOptions& o, std::ostream& out) {
  try {
    if (!o.metric.empty()) history_metric(o.metric);  // before any work
    if (!o.metric.empty() && o.cell.empty() && !o.changes && !o.verdicts)
      throw InputError("--metric", "goes with --cell KEY (a trend), --changes or --verdicts");
    if (o.csv && !o.verdicts) throw InputError("--csv", "goes with --verdicts");
    if (o.verdicts && o.changes) throw InputError("--verdicts", "and --changes exclude each other");
    if (!o.add_runs.empty()) {
      for (auto& run : o.add_runs) {
        auto added = append_run_file(o.file, run);
        out << run << ": "
            << (added.outcome == AppendOutcome::kAdded     ? "added"
                : added.outcome == AppendOutcome::kUpdated ? "updated"
                                                           : "already there")
            << " (run " << added.run_id << ")\n";
      }
      return 0;
    }
    History h = History::open(o.file, History::Mode::kExisting);
    if (!o.accept_cell.empty())
      accept(h, o, out);
    else if (o.verdicts)
      verdicts(h, o, out);
    else if (o.changes)
      changes(h, o, out);
    else if (!o.cell.empty())
      trend(h, o, out);
    else
      list_runs(h, o, out);
    return 0;
  } catch (const InputError& e) {
    throw e.file().empty() ? e.in_file(o.file) : e;
  }
}

void HistoryCommand::add_to(CLI::App& app) {
  command_ =
      app.add_subcommand("history", "list the runs of a history database, a cell's trend, or change points");
  command_->add_option("file", options_.file, "history database (SQLite; loadlab run --history FILE)")
      ->required();
  command_->add_option("--cell", options_.cell, "a cell key, e.g. beast/d5/t10: its trend over the runs");
  command_->add_option("--metric", options_.metric,
                       "qps, p50_ms, p90_ms, p99_ms, server_cpu_pct, server_rss_kb, client_cpu_pct, capacity "
                       "(trend default qps; --changes default all)");
  command_->add_option("--scenario", options_.scenario, "only this scenario's runs and cells");
  command_->add_flag("--changes", options_.changes,
                     "the runs where a cell's figure moved to a new level (E-divisive change points)");
  command_->add_option("--last", options_.last, "only the newest N runs of each cell (default all)")
      ->check(number_in(0, static_cast<double>(limits::kMaxHistoryRuns)));
  command_->add_flag("--verdicts", options_.verdicts,
                     "replay the nightly verdict over every night, each against the nights before it: "
                     "counts per cell, false-alarm nights per 100, each cell's minimum detectable change");
  command_->add_flag("--csv", options_.csv, "with --verdicts: one line per night and cell");
  command_
      ->add_option("--baseline-nights", options_.baseline_nights,
                   "with --verdicts: the earlier nights that make a band (default the scenario's, or 10)")
      ->check(number_in(2, static_cast<double>(limits::kMaxBaselineNights)));
  accept_ = command_->add_subcommand(
      "accept",
      "start a new level: CELL (or all) compares with the nights from run ID on (an intended change)");
  accept_->add_option("cell", options_.accept_cell, "a cell key, or all")->required();
  accept_
      ->add_option("--run", options_.accept_run,
                   "the run the new level starts at (loadlab history FILE lists them)")
      ->required()
      ->check(number_in(1, 9e18));
  accept_->add_option("--note", options_.accept_note, "why, kept with the level");
  add_ = command_->add_subcommand("add", "store run folders (or their result.json) in the history, in order");
  add_->add_option("runs", options_.add_runs, "run folders or result.json files")->required();
}

bool HistoryCommand::chosen() const { return command_ && command_->parsed(); }

int HistoryCommand::run(std::ostream& out) const { return run_history(options_, out); }

}  // namespace loadlab::controller
