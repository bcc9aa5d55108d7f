#include "run/scenario_run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <vector>

#include "history/history.hpp"
#include "history/night_verdicts.hpp"
#include "judge/ab_verdicts.hpp"
#include "judge/compare.hpp"
#include "lab/agent_pool.hpp"
#include "lab/lab.hpp"
#include "lab/retry.hpp"
#include "loadlab/proto/json.hpp"
#include "loadlab/shared/exit_status.hpp"
#include "loadlab/shared/format.hpp"
#include "loadlab/shared/json_input.hpp"
#include "loadlab/shared/logging.hpp"
#include "report/reporters.hpp"
#include "results/quality_flags.hpp"
#include "run/cell_executor.hpp"
#include "run/progress.hpp"
#include "run/provenance.hpp"
#include "run/run_folder.hpp"
#include "scenario/scenario.hpp"

namespace loadlab::controller {

namespace fs = std::filesystem;

namespace {

std::string utc_now(const char* format) {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

std::string cell_summary(const CellResult& c) {
  if (!c.ok()) return failed_status(c.error);
  const auto& m = c.median();
  auto ms = [&](const char* figure, double us) {
    if (std::find(m.unavailable().begin(), m.unavailable().end(), figure) != m.unavailable().end())
      return std::string("n/a");
    return fmt::format("{:.2f} ms", us / 1000);
  };
  std::string s = rate_text(m.qps()) + ", p50 " + ms("latency.p50_us", m.latency().p50_us()) + ", p99 " +
                  ms("latency.p99_us", m.latency().p99_us()) + ", " + std::to_string(m.errors()) + " errors";
  for (auto& f : summarized_flags(c.flags())) s += " [" + f + "]";
  return s;
}

// The cells' indices in the order they run: the scenario's, or shuffled with its seed.
std::vector<size_t> run_order(const Scenario& s, size_t cells) {
  std::vector<size_t> order(cells);
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (s.execution.shuffle_seed)
    std::shuffle(order.begin(), order.end(), std::mt19937_64(*s.execution.shuffle_seed));
  return order;
}

struct OpenedRun {
  Scenario scenario;
  std::optional<RunFolder> folder;  // a resumed run's; a new run's is made once every input is checked
  fs::path new_dir;                 // a new run's folder, still to be made
};

// The scenario, and the run's folder: the one --resume names (refused when its scenario.json
// changed since the run started), or the path of a new one, checked to be free but not made
// yet: a run that fails its checks leaves no folder behind.
OpenedRun open_run(const RunOptions& o) {
  if (!o.resume_dir.empty()) {
    RunFolder folder = RunFolder::resume(o.resume_dir);
    Scenario s = load_scenario_file(folder.scenario_path());
    return {std::move(s), std::move(folder), {}};
  }
  Scenario s = load_scenario_file(o.scenario_path, o.overrides, o.include_root);
  fs::path dir = o.out_dir.empty() ? RunFolder::new_run_path("runs", s.name, utc_now("%Y%m%dT%H%M%SZ"))
                                   : fs::path(o.out_dir);
  RunFolder::check_free(dir);
  return {std::move(s), std::nullopt, std::move(dir)};
}

// One `loadlab run`: its agents, its cells in order, its files and its summary table.
class ScenarioRun {
 public:
  ScenarioRun(const RunOptions& o, OpenedRun opened)
      : options_(o),
        resuming_(!o.resume_dir.empty()),
        scenario_(std::move(opened.scenario)),
        folder_(std::move(opened.folder)),
        new_dir_(std::move(opened.new_dir)),
        cells_(expand(scenario_)),
        lab_path_(lab_path(o, folder_ ? folder_->previous_result() : nlohmann::json())),
        pool_(o.agent_stubs ? o.agent_stubs : StubFactory(grpc_stub)) {}

  int run(std::ostream& table_out, std::string* run_folder) {
    // Every input that can be refused is checked before the run's folder is made: the local
    // files first, then what the agents can host. A resumed run's journal is read first.
    if (folder_) results_ = folder().open_journal(cells_);  // its finished cells are kept as they were
    check_baseline();
    check_history();
    connect_agents();
    pool_.check(scenario_);
    if (!folder_) {
      // A copy of the file, unless --set or an include made the scenario something else.
      const bool as_written = options_.overrides.empty() && scenario_.files.size() <= 1;
      folder_.emplace(
          RunFolder::create(new_dir_, options_.scenario_path, as_written ? "" : scenario_.source_text));
      results_ = folder().open_journal(cells_);
    }
    if (run_folder) *run_folder = folder().path().string();
    header_ = header();
    save();
    ProgressReporter progress(cells_.size(), ProgressReporter::stderr_is_tty(), options_.quiet);
    progress.set_metrics(options_.metrics);
    if (options_.metrics) options_.metrics->run_started(scenario_.name, cells_.size());
    run_cells(progress);
    // A signal after the last cell (and its confirmations) changes nothing: the run is complete.
    const bool complete = all_finished() && judge_and_confirm(progress) && judge_and_confirm_ab(progress);
    const int stopped_by = complete || !options_.stop ? 0 : options_.stop->load();
    if (complete) {
      header_["finished_at"] = utc_now("%Y-%m-%dT%H:%M:%SZ");
    } else {
      ab_.reset();  // the first pairs' verdicts, unconfirmed: --resume judges again
      header_.erase("ab");
    }
    save();
    progress.finish();
    if (embedded_) embedded_->shutdown();
    if (!options_.history.empty() && complete) record_in_history();
    int status = summarize(table_out, stopped_by);
    if (verdicts_ && complete) {
      table_out << "\nagainst " << (verdicts_->method() == "history" ? "the history " : "")
                << verdicts_->baseline() << ":\n";
      write_verdicts(table_out, *verdicts_);
      if (verdicts_->regressions()) status = exit_status::worst(status, exit_status::kRegression);
    }
    if (ab_ && complete) {
      table_out << "\nA/B: " << scenario_.ab_b << " against " << scenario_.ab_a << ", pair by pair:\n";
      write_verdicts(table_out, *ab_);
      table_out << "\n";
      write_ab_pairs(table_out, *ab_);
      if (ab_->regressions()) status = exit_status::worst(status, exit_status::kRegression);
    }
    return status;
  }

 private:
  // A resumed run keeps the lab it started with, unless --lab names another.
  static std::string lab_path(const RunOptions& o, const nlohmann::json& previous) {
    if (o.resume_dir.empty() || !o.lab_path.empty() || !previous.contains("lab_path")) return o.lab_path;
    return previous["lab_path"].get<std::string>();
  }

  RunFolder& folder() { return *folder_; }
  const RunFolder& folder() const { return *folder_; }

  // --baseline names a run that can be read (history:last-good is looked up at the end).
  void check_baseline() const {
    if (judging() && !history_baseline()) read_baseline(options_.baseline);
  }

  // --history is a loadlab history, or a new file in a folder that exists.
  void check_history() const {
    if (options_.history.empty()) return;
    if (fs::exists(options_.history)) {
      try {
        History::open(options_.history, History::Mode::kExisting);
      } catch (const InputError& e) {
        throw InputError("--history", e.message()).in_file(options_.history);
      }
      return;
    }
    const fs::path parent = fs::absolute(options_.history).parent_path();
    if (!fs::is_directory(parent))
      throw InputError("--history", "cannot create " + options_.history + ": no folder " + parent.string());
  }

  static nlohmann::json read_baseline(std::string path) {
    if (fs::is_directory(path)) path = (fs::path(path) / "result.json").string();
    nlohmann::json base = read_json_file(path);
    if (!base.is_object() || !base.contains("cells") || !base["cells"].is_array())
      throw InputError("/cells", "is required: --baseline names a run folder or its result.json")
          .in_file(path);
    return base;
  }

  // The lab's agents, or one embedded agent reached over the same gRPC path.
  void connect_agents() {
    auto log = component_logger("controller");
    if (lab_path_.empty()) {
      if (!options_.embedded_agent)
        throw EnvironmentError("no --lab given, and this program embeds no agent");
      embedded_ = options_.embedded_agent(options_.bin_dir);
      log->debug("embedded agent on {}", embedded_->address());
      pool_.add({"embedded", embedded_->address(), {"target", "load"}, {}, {}}, 10);
      return;
    }
    Lab lab;
    try {
      lab = load_lab_file(lab_path_, options_.lab_credentials_path);
    } catch (const InputError& e) {
      throw e.in_file(lab_path_);
    }
    for (auto& def : lab.agents)
      if (auto& a = pool_.add(def, 10); !a.reachable()) log->warn("{}", a.error);
  }

  bool judging() const { return !options_.baseline.empty(); }

  CellOptions cell_options() const {
    CellOptions o = CellOptions::from(scenario_, options_.stop);
    if (options_.cancel_calls) o.repetition.cancel = options_.cancel_calls;
    o.profile_dir = (folder().path() / "profiles").string();
    return o;
  }
  bool history_baseline() const { return options_.baseline == kHistory || options_.baseline == kLastGood; }

  // The verdicts of the cells as measured so far (result.json as saved), into the header:
  // against the history (the run is stored in it first, so that tonight is read back as every
  // night is), or against a base run.
  void judge() {
    if (history_baseline()) {
      auto added = append_run_file(options_.history, folder().path().string());
      History h = History::open(options_.history, History::Mode::kExisting);
      std::vector<std::string> keys;
      for (auto& c : cells_) keys.push_back(c.key());
      verdicts_ = judge_run(h, scenario_.name, added.run_id, keys, regression());
      disturbed_now_.clear();
      for (auto& c : verdicts_->cells())
        if (c.disturbed()) disturbed_now_.insert(c.key());
      for (auto& c : *verdicts_->mutable_cells())
        for (auto& r : results_)
          if (r && r->cell.key() == c.key() && !r->disturbed.empty()) {
            const size_t times = remeasures(*r);
            c.set_disturbed(true);
            c.set_reason("measured again" +
                         (times > 1 ? " " + std::to_string(times) + " times" : std::string()) +
                         " at the end of the run (other work ran on its CPUs " +
                         (times > 1 ? "each earlier time" : "the first time") + "): " + c.reason());
          }
    } else {
      std::string path = options_.baseline;
      nlohmann::json base = read_baseline(path);
      if (fs::is_directory(path)) path = (fs::path(path) / "result.json").string();
      auto current = read_json_file((folder().path() / "result.json").string());
      try {
        verdicts_ = compare_results(base, current, regression());
      } catch (const InputError& e) {
        throw e.in_file("--baseline " + options_.baseline);
      }
      verdicts_->set_baseline(path);
    }
    header_["verdicts"] = nlohmann::json::parse(proto::to_json(*verdicts_));
    save();
  }

  // The scenario's regression settings, with --baseline-nights.
  RegressionDef regression() const {
    RegressionDef r = scenario_.regression;
    if (options_.baseline_nights) {
      r.baseline_nights = *options_.baseline_nights;
      r.min_nights = std::min(r.min_nights, r.baseline_nights);
    }
    return r;
  }

  // Confirm before alarm: the cells the first verdict calls a regression (or every cell, with
  // confirm.every_cell) are measured again, then judged again. False when the run is stopping.
  bool judge_and_confirm(ProgressReporter& progress) {
    if (judging()) judge();
    const std::set<size_t> paired = paired_cells();
    if (!remeasure_disturbed(progress, paired)) return false;
    std::vector<size_t> again;
    for (size_t i = 0; i < results_.size(); ++i) {
      const auto& r = *results_[i];
      if (!r.ok() || !r.confirmations.empty() || paired.count(i)) continue;
      if (scenario_.execution.confirm_every_cell || (verdicts_ && suspect(cells_[i].key())))
        again.push_back(i);
    }
    if (!confirm_cells(progress, again)) return false;
    if (judging() && !again.empty()) judge();
    return true;
  }

  // An A/B run's cells: measured, judged and confirmed in pairs (judge_and_confirm_ab).
  std::set<size_t> paired_cells() const {
    std::set<size_t> paired;
    if (!scenario_.ab_a.empty())
      for (auto [a, b] : ab_pairs(cells_, scenario_.ab_a, scenario_.ab_b)) paired.insert({a, b});
    return paired;
  }

  // A cell whose night the history verdict found disturbed (other work on its CPUs) is
  // measured again at the end of the run, on fresh targets: that measurement becomes the
  // cell's (the ones before it are kept as `disturbed`), and the run is judged again
  // (remeasure_rounds). False when the run is stopping.
  bool remeasure_disturbed(ProgressReporter& progress, const std::set<size_t>& paired) {
    if (!verdicts_ || !history_baseline()) return true;
    CellExecutor executor(scenario_, pool_, progress, cell_options());
    auto pick = [&](uint32_t attempt) {
      std::vector<std::vector<size_t>> which;  // still disturbed, measured again attempt - 1 times
      for (size_t i = 0; i < results_.size(); ++i) {
        const auto& r = *results_[i];
        if (r.ok() && remeasures(r) == attempt - 1 && r.confirmations.empty() && !paired.count(i) &&
            disturbed_now_.count(cells_[i].key()))
          which.push_back({i});
      }
      return which;
    };
    auto measure = [&](const std::vector<size_t>& unit) {
      progress.info(cells_[unit[0]].key() +
                    ": other work ran on its CPUs while it was measured; measuring again (" +
                    std::to_string(scenario_.repetitions) + " repetitions on fresh targets)");
      return executor.remeasure(*results_[unit[0]], cells_.size());
    };
    return remeasure_rounds(progress, pick, measure, [this] { judge(); });
  }

  // An A/B cell whose pairs were disturbed (other work on their CPUs during a tenth of them or
  // more: a busy-machine flag on either side) has its pairs measured again in the same order,
  // on fresh targets, before its verdict and confirmation (remeasure_rounds). False when the
  // run is stopping.
  bool remeasure_disturbed_pairs(ProgressReporter& progress) {
    CellExecutor executor(scenario_, pool_, progress, cell_options());
    const auto pairs = ab_pairs(cells_, scenario_.ab_a, scenario_.ab_b);
    auto pick = [&](uint32_t attempt) {
      std::vector<std::vector<size_t>> which;
      for (auto [a, b] : pairs) {
        const auto &ra = results_[a], &rb = results_[b];
        if (ra && rb && ra->ok() && rb->ok() && rb->confirmations.empty() && remeasures(*rb) == attempt - 1 &&
            pairs_disturbed(*ra, *rb))
          which.push_back({a, b});
      }
      return which;
    };
    auto measure = [&](const std::vector<size_t>& unit) {
      progress.info(cells_[unit[1]].key() + " against " + cells_[unit[0]].key() +
                    ": other work ran on their CPUs during their pairs; measuring them again (" +
                    std::to_string(scenario_.repetitions) + " pairs on fresh targets)");
      return executor.remeasure_pair(*results_[unit[0]], *results_[unit[1]], cells_.size());
    };
    return remeasure_rounds(progress, pick, measure, [this] { judge_ab_pairs(); });
  }

  // The repetitions of an A/B pair of cells whose other work stands out from theirs (both sides'
  // first pairs together, and their confirmation pairs together: each set on the same CPUs).
  void flag_pair_outliers(CellResult& a, CellResult& b) {
    for (auto set : {std::pair{&a.reps, &b.reps}, std::pair{&a.confirmations, &b.confirmations}}) {
      std::vector<v1::Repetition*> reps;
      for (auto* side : {set.first, set.second})
        for (auto& r : *side) reps.push_back(&r);
      flag_busy_outliers(reps, pool_.cores());
    }
  }

  // A tenth of the pairs or more (and at least one) with a repetition flagged busy-machine.
  static bool pairs_disturbed(const CellResult& a, const CellResult& b) {
    const size_t n = std::min(a.reps.size(), b.reps.size());
    size_t disturbed = 0;
    for (size_t i = 0; i < n; ++i) disturbed += busy_machine(a.reps[i]) || busy_machine(b.reps[i]);
    return disturbed > 0 && disturbed * 10 >= n;
  }

  // Rounds of measuring disturbed cells (or A/B pairs of cells) again at the end of the run:
  // `pick(attempt)` names what is still disturbed after attempt - 1 rounds, `measure` measures
  // one of them again, `rejudge` judges the run again. At most remeasure_disturbed rounds, the
  // first after the cool-down, the second after remeasure_wait_s and each later one after twice
  // the wait before it (a build beside a nightly takes minutes). False when the run is stopping.
  template <class Pick, class Measure, class Rejudge>
  bool remeasure_rounds(ProgressReporter& progress, Pick pick, Measure measure, Rejudge rejudge) {
    const auto& e = scenario_.execution;
    for (uint32_t attempt = 1; attempt <= e.remeasure_disturbed; ++attempt) {
      const std::vector<std::vector<size_t>> which = pick(attempt);
      if (which.empty()) return true;
      if (attempt > 1) {
        const double wait = e.remeasure_wait_s * std::pow(2.0, attempt - 2);
        progress.info(std::to_string(which.size()) + " still disturbed; waiting " + seconds_text(wait) +
                      " before measuring again");
        if (wait_until_ready(nullptr, wait, options_.stop, WaitClock::real()) == WaitOutcome::kStopped)
          return false;
      }
      for (const auto& unit : which) {
        if (wait_until_ready(nullptr, e.cooldown_s, options_.stop, WaitClock::real()) ==
            WaitOutcome::kStopped)
          return false;
        if (!measure(unit)) return false;  // stopping: kept as measured
        for (size_t i : unit) folder().journal(*results_[i]);
        save();
      }
      rejudge();
    }
    return true;
  }

  // How many times a cell was measured again because it was disturbed.
  size_t remeasures(const CellResult& r) const {
    return scenario_.repetitions ? r.disturbed.size() / scenario_.repetitions : 0;
  }
  const v1::CellVerdict& verdict_of(const std::string& key) const {
    for (auto& c : verdicts_->cells())
      if (c.key() == key) return c;
    return v1::CellVerdict::default_instance();
  }
  bool suspect(const std::string& key) const { return verdict_of(key).suspect(); }

  // The finished run into the history, and each cell's trend (its median QPS over the runs
  // the history holds, this one included) into result.json and report.html.
  void record_in_history() {
    auto added = append_run_file(options_.history, folder().path().string());
    component_logger("controller")->info("run {} in history {}", added.run_id, options_.history);
    auto history = History::open(options_.history, History::Mode::kExisting);
    if (verdicts_) {
      std::vector<std::pair<std::string, NightVerdict>> kept;
      for (auto& c : verdicts_->cells()) {
        NightVerdict v;
        v.verdict = c.verdict();
        v.reason = c.reason();
        v.value = c.has_value() ? c.value() : NAN;
        v.baseline = c.has_baseline() ? c.baseline() : NAN;
        v.change_pct = c.has_change_pct() ? c.change_pct() : NAN;
        v.mdc_pct = c.has_mdc_pct() ? c.mdc_pct() : NAN;
        v.nights = c.nights();
        kept.emplace_back(c.key(), v);
      }
      history.store_verdicts(added.run_id, verdicts_->metric(), kept);
    }
    nlohmann::json trends = {{"metric", "qps"}, {"cells", nlohmann::json::object()}};
    for (auto& r : results_) {
      if (!r) continue;
      const std::string key = r->cell.key();
      auto& points = trends["cells"][key] = nlohmann::json::array();
      for (auto& p : history.series(scenario_.name, key, history_metric("qps")))
        if (std::isfinite(p.median())) points.push_back({p.started_at, p.git_commit, p.median()});
    }
    header_["trends"] = trends;
    save();
  }

  // result.json but its cells: what ran, on which agents, when.
  nlohmann::json header() const {
    const auto& previous = folder().previous_result();
    nlohmann::json h = previous.is_object() ? previous : nlohmann::json::object();
    if (!resuming_ || !h.contains("started_at")) {
      h["loadlab_version"] = LOADLAB_VERSION;
      h["scenario_path"] = options_.scenario_path;
      // Every file read, the scenario file first, then what it includes, each with its git
      // commit: all from the repository holding the scenario file, asked once.
      const ScenarioRepository repository(options_.scenario_path);
      h["scenario_file"] = repository.provenance(options_.scenario_path);
      h["scenario_files"] = nlohmann::json::array();
      for (auto& f : scenario_.files) h["scenario_files"].push_back(repository.provenance(f));
      h["scenario"] = scenario_.source;
      h["overrides"] = scenario_.overrides;  // --set, applied to scenario_file into scenario
      h["lab_path"] = lab_path_;
      h["started_at"] = utc_now("%Y-%m-%dT%H:%M:%SZ");
    }
    // What resume() checks; recorded late for a run of a loadlab that did not record it.
    if (!h.contains(RunFolder::kScenarioDigest)) h[RunFolder::kScenarioDigest] = folder().scenario_digest();
    h["schema_version"] = kResultSchemaVersion;  // docs/result.schema.json
    h["agents"] = pool_.to_json();
    if (resuming_) h["resumed_at"].push_back(utc_now("%Y-%m-%dT%H:%M:%SZ"));
    return h;
  }

  // The cells not finished yet, each journalled and saved as it finishes, until the last
  // or until the run is stopping.
  void run_cells(ProgressReporter& progress) {
    CellExecutor executor(scenario_, pool_, progress, cell_options());
    size_t finished = finished_cells().size();
    // A/B: each cell of build B runs with its partner of build A, pair by pair.
    std::map<size_t, size_t> partner;  // A's cell → B's
    std::set<size_t> with_partner;     // B's cells
    if (!scenario_.ab_a.empty())
      for (auto [a, b] : ab_pairs(cells_, scenario_.ab_a, scenario_.ab_b)) {
        partner[a] = b;
        with_partner.insert(b);
      }
    bool first = true;
    for (size_t i : run_order(scenario_, cells_.size())) {
      if (results_[i] || with_partner.count(i)) continue;
      if (!first && wait_until_ready(nullptr, scenario_.execution.cooldown_s, options_.stop,
                                     WaitClock::real()) == WaitOutcome::kStopped)
        break;
      first = false;
      std::vector<std::pair<size_t, CellResult>> done;
      if (auto p = partner.find(i); p != partner.end()) {
        auto pair = executor.run_pair(cells_[i], cells_[p->second], finished);
        if (!pair) break;  // shutting down: both left to --resume
        done.emplace_back(i, std::move(pair->first));
        done.emplace_back(p->second, std::move(pair->second));
      } else {
        auto cell = executor.run(cells_[i], finished);
        if (!cell) break;  // shutting down: the cell is left to --resume, not recorded as failed
        done.emplace_back(i, std::move(*cell));
      }
      for (auto& [index, cell] : done) {
        folder().journal(cell);
        results_[index] = std::move(cell);
        progress.cell_finished(++finished, cells_[index].key(), cell_summary(*results_[index]));
        if (options_.metrics) options_.metrics->cell_finished(cells_[index].key(), results_[index]->ok());
      }
      save();  // after every cell: a broken run keeps what it measured
    }
  }

  // A/B: build B against build A, pair by pair, into the header's "ab".
  void judge_ab_pairs() {
    if (scenario_.ab_a.empty()) return;
    std::vector<std::pair<const CellResult*, const CellResult*>> pairs;
    for (auto [a, b] : ab_pairs(cells_, scenario_.ab_a, scenario_.ab_b))
      if (results_[a] && results_[b]) {
        flag_pair_outliers(*results_[a], *results_[b]);
        pairs.emplace_back(&*results_[a], &*results_[b]);
      }
    ab_ = judge_ab(pairs, scenario_.regression, pairs.size(), confirm_count() > 0);
    for (size_t k = 0; k < pairs.size() && k < static_cast<size_t>(ab_->cells_size()); ++k)
      if (const size_t times = remeasures(*pairs[k].second); times > 0) {
        auto* c = ab_->mutable_cells(static_cast<int>(k));
        c->set_disturbed(true);
        c->set_reason("pairs measured again" +
                      (times > 1 ? " " + std::to_string(times) + " times" : std::string()) +
                      " (other work ran on their CPUs " +
                      (times > 1 ? "each earlier time" : "the first time") + "): " + c->reason());
      }
    header_["ab"] = nlohmann::json::parse(proto::to_json(*ab_));
  }

  // A/B's confirm before alarm: the pairs of cells the first pairs call a regression (or of
  // every cell, with confirm.every_cell) are measured again, pair by pair on fresh targets, then
  // judged again. False when the run is stopping.
  bool judge_and_confirm_ab(ProgressReporter& progress) {
    judge_ab_pairs();
    if (!ab_) return true;
    if (!remeasure_disturbed_pairs(progress)) return false;
    if (confirm_count() == 0) return true;
    std::vector<std::pair<size_t, size_t>> again;
    const auto pairs = ab_pairs(cells_, scenario_.ab_a, scenario_.ab_b);
    for (int k = 0; k < ab_->cells_size() && k < static_cast<int>(pairs.size()); ++k) {
      auto [a, b] = pairs[static_cast<size_t>(k)];
      if (!results_[a]->ok() || !results_[b]->ok() || !results_[b]->confirmations.empty()) continue;
      if (scenario_.execution.confirm_every_cell || ab_->cells(k).verdict() == kRegression)
        again.emplace_back(a, b);
    }
    if (again.empty()) return true;
    CellExecutor executor(scenario_, pool_, progress, cell_options());
    for (auto [a, b] : again) {
      if (wait_until_ready(nullptr, scenario_.execution.cooldown_s, options_.stop, WaitClock::real()) ==
          WaitOutcome::kStopped)
        return false;
      progress.info(cells_[b].key() + " against " + cells_[a].key() + ": measuring again to confirm (" +
                    std::to_string(confirm_count()) + " pairs on fresh targets)");
      if (!executor.confirm_pair(*results_[a], *results_[b], confirm_count(), cells_.size())) return false;
      folder().journal(*results_[a]);
      folder().journal(*results_[b]);
      save();
    }
    judge_ab_pairs();
    return true;
  }

  // execution.confirm's repetitions (or pairs): the scenario's repetitions, at least 3, unless set.
  uint32_t confirm_count() const {
    return scenario_.execution.confirm.value_or(std::max<uint32_t>(3, scenario_.repetitions));
  }

  bool all_finished() const {
    return std::all_of(results_.begin(), results_.end(), [](auto& r) { return r.has_value(); });
  }
  // Measures `which` again at the end of the run, each journalled again with its
  // confirmations (the journal's last line of a cell is the one --resume keeps). False when
  // the run is stopping.
  bool confirm_cells(ProgressReporter& progress, const std::vector<size_t>& which) {
    const uint32_t count = confirm_count();
    if (which.empty() || count == 0) return true;
    CellExecutor executor(scenario_, pool_, progress, cell_options());
    for (size_t i : which) {
      if (wait_until_ready(nullptr, scenario_.execution.cooldown_s, options_.stop, WaitClock::real()) ==
          WaitOutcome::kStopped)
        return false;
      progress.info(cells_[i].key() + ": measuring again to confirm (" + std::to_string(count) +
                    " repetitions on fresh targets)");
      if (!executor.confirm(*results_[i], count, cells_.size())) return false;  // stopping: kept as measured
      folder().journal(*results_[i]);
      save();
    }
    return true;
  }

  std::vector<CellResult> finished_cells() const {
    std::vector<CellResult> out;
    for (auto& r : results_)
      if (r) out.push_back(*r);
    return out;
  }

  void save() const { folder().write_results(header_, scenario_.name, finished_cells()); }

  // The final table; returns the exit status.
  int summarize(std::ostream& out, int stopped_by) const {
    auto shown = finished_cells();
    auto failed = std::count_if(shown.begin(), shown.end(), [](auto& c) { return !c.ok(); });
    out << "\n"
        << scenario_.name << " (" << cells_.size() << " cells, " << scenario_.repetitions << " repetition"
        << (scenario_.repetitions == 1 ? "" : "s") << " each)\n\n";
    write_table(out, shown);
    out << "\nresults: " << (folder().path() / "result.json").string() << ", matrix.csv, matrix.md\n";
    if (failed) out << failed << " of " << cells_.size() << " cells failed\n";
    if (stopped_by) {
      out << "interrupted by signal " << stopped_by << " after " << shown.size() << " of " << cells_.size()
          << " cells; continue with: loadlab run --resume " << folder().path().string() << "\n";
      return exit_status::kSignalBase + stopped_by;
    }
    return failed ? exit_status::kCellsFailed : exit_status::kOk;
  }

  const RunOptions& options_;
  const bool resuming_;
  Scenario scenario_;
  std::optional<RunFolder> folder_;  // made by run() once the inputs are checked
  fs::path new_dir_;
  std::vector<Cell> cells_;
  std::string lab_path_;
  std::unique_ptr<EmbeddedAgent> embedded_;  // before the pool: outlives its channel
  AgentPool pool_;
  nlohmann::json header_;                 // result.json but its cells
  std::optional<v1::Verdicts> verdicts_;  // against --baseline, once every cell finished
  std::set<std::string> disturbed_now_;   // cells whose measurement, as it stands, the history verdict
                                          // found disturbed
  std::optional<v1::Verdicts> ab_;        // the scenario's "ab", once every cell finished
  std::vector<std::optional<CellResult>> results_;  // in cells_' order; nullopt: not finished
};

}  // namespace

int run_scenario(const RunOptions& options, std::ostream& table_out, std::string* run_folder) {
  return ScenarioRun(options, open_run(options)).run(table_out, run_folder);
}

}  // namespace loadlab::controller
