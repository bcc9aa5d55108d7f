#include "run/scenario_run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <vector>

#include "lab/agent_pool.hpp"
#include "lab/lab.hpp"
#include "loadlab/shared/format.hpp"
#include "loadlab/shared/logging.hpp"
#include "report/reporters.hpp"
#include "results/quality_flags.hpp"
#include "run/ab_judge.hpp"
#include "run/baseline_judge.hpp"
#include "run/cell_executor.hpp"
#include "run/history_recorder.hpp"
#include "run/last_good_ab.hpp"
#include "run/measure_again.hpp"
#include "run/progress.hpp"
#include "run/provenance.hpp"
#include "run/result_header.hpp"
#include "run/run_cells.hpp"
#include "run/run_folder.hpp"
#include "run/run_summary.hpp"
#include "scenario/plan.hpp"
#include "scenario/scenario.hpp"

namespace loadlab::controller {

namespace fs = std::filesystem;

std::string utc_now(const char* format) {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

std::unique_ptr<EmbeddedAgent> connect_agents(const RunOptions& o, const std::string& lab_path,
                                              AgentPool& pool) {
  auto log = component_logger("controller");
  if (lab_path.empty()) {
    if (!o.embedded_agent) throw EnvironmentError("no --lab given, and this program embeds no agent");
    auto embedded = o.embedded_agent(o.bin_dir);
    log->debug("embedded agent on {}", embedded->address());
    pool.add({"embedded", embedded->address(), {"target", "load"}, {}, {}}, 10);
    return embedded;
  }
  Lab lab;
  try {
    lab = load_lab_file(lab_path, o.lab_credentials_path);
  } catch (const InputError& e) {
    throw e.in_file(lab_path);
  }
  for (auto& def : lab.agents)
    if (auto& a = pool.add(def, 10); !a.reachable()) log->warn("{}", a.error);
  return nullptr;
}

namespace {

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

// The header of a run starting in `folder`: a resumed run's as it was, or, for a new run (or
// a resumed one that recorded none), what runs, from which files, when; then what every run
// (re)writes: the digest resume() checks, the agents, and a resumed run's time.
ResultHeader start_header(const RunOptions& o, const Scenario& s, const RunFolder& folder,
                          const std::string& lab_path, const AgentPool& pool) {
  ResultHeader h = ResultHeader::from_json(folder.previous_result());
  if (o.resume_dir.empty() || h.started_at.empty()) {
    h.loadlab_version = LOADLAB_VERSION;
    h.scenario_path = o.scenario_path;
    // Every file read, the scenario file first, then what it includes, each with its git
    // commit: all from the repository holding the scenario file, asked once.
    const ScenarioRepository repository(o.scenario_path);
    h.scenario_file = repository.provenance(o.scenario_path);
    h.scenario_files = nlohmann::json::array();
    for (auto& f : s.files) h.scenario_files.push_back(repository.provenance(f));
    h.scenario = s.source;
    h.overrides = s.overrides;
    h.lab_path = lab_path;
    h.started_at = utc_now("%Y-%m-%dT%H:%M:%SZ");
  }
  // Recorded late for a run of a loadlab that did not record it.
  if (h.scenario_digest.empty()) h.scenario_digest = folder.scenario_digest();
  h.agents = pool.to_json();
  if (h.target_commits.empty()) h.target_commits = target_commits_of(s);
  if (!o.resume_dir.empty()) h.resumed_at.push_back(utc_now("%Y-%m-%dT%H:%M:%SZ"));
  return h;
}

// Each target built from a commit gets its commit once: every cell's target is the same commit,
// and a resumed run's the one it started with (its result.json's target_commits).
void resolve_commits(Scenario& s, const AgentPool& pool, const nlohmann::json& previous) {
  if (!previous.is_object() || !apply_target_commits(previous.value("target_commits", nlohmann::json()), s))
    pool.resolve_commits(s);
}

// A resumed run keeps the lab it started with, unless --lab names another.
std::string lab_path(const RunOptions& o, const nlohmann::json& previous) {
  if (o.resume_dir.empty() || !o.lab_path.empty() || !previous.contains("lab_path")) return o.lab_path;
  return previous["lab_path"].get<std::string>();
}

CellOptions cell_options(const RunOptions& options, const Scenario& s, const fs::path& folder) {
  CellOptions o = CellOptions::from(s, options.stop);
  if (options.cancel_calls) o.repetition.cancel = options.cancel_calls;
  o.profile_dir = (folder / "profiles").string();
  return o;
}

// regression.ab_last_good (last_good_ab.hpp), in a new run judged against its history: the
// last good night's build joins `s` as A, its commit checked by a target agent. What it did,
// or why there is no A/B tonight; a resumed run's as it was planned.
std::string plan_nightly_ab(Scenario& s, const std::string& history, const RegressionDef& r,
                            const AgentPool& pool, bool resumed) {
  if (resumed) return planned_ab_note(s);  // as it was planned when the run started
  auto plan = plan_last_good_ab(s, history, r);
  if (!plan.scenario) return plan.note;
  Scenario& with = *plan.scenario;
  pool.check(with);
  for (size_t i = 0; i < with.targets.size(); ++i)
    if (with.targets[i].name == with.ab_a) try {
        const auto at = "/targets/" + std::to_string(i) + "/commit";
        with.targets[i].commit_sha =
            pool.resolve_commit(with, i, with.targets[i].commit, "", at).commit().sha();
      } catch (const std::exception& e) {  // gone from the repository (a force-push): no A/B tonight
        return "no A/B against the last good build: its commit " + with.targets[i].commit.substr(0, 12) +
               " cannot be had: " + e.what();
      }
  s = std::move(with);
  return plan.note;
}

// One `loadlab run`: its agents, its cells in order (the run loop), then its parts: the
// verdicts against the baseline (BaselineJudge) and of the A/B pairs (AbJudge), measuring
// again what is suspect or disturbed (MeasureAgain), the history (record_in_history) and the
// summary (run_summary.hpp); result.json's header typed in ResultHeader.
class ScenarioRun {
 public:
  ScenarioRun(const RunOptions& o, OpenedRun opened)
      : options_(o),
        scenario_(std::move(opened.scenario)),
        folder_(std::move(opened.folder)),
        new_dir_(std::move(opened.new_dir)),
        run_{expand(scenario_), {}},
        lab_path_(lab_path(o, folder_ ? folder_->previous_result() : nlohmann::json())),
        pool_(o.agent_stubs ? o.agent_stubs : StubFactory(grpc_stub)),
        baseline_(o, scenario_),
        ab_(scenario_, run_, pool_) {}

  int run(std::ostream& table_out, std::string* run_folder) {
    // Every input that can be refused is checked before the run's folder is made: the local
    // files first, then what the agents can host. A resumed run's journal is read first.
    if (folder_)
      run_.results = folder().open_journal(run_.cells);  // its finished cells are kept as they were
    baseline_.check();
    check_history_path(options_.history);
    embedded_ = connect_agents(options_, lab_path_, pool_);
    pool_.check(scenario_);
    resolve_commits(scenario_, pool_, folder_ ? folder_->previous_result() : nlohmann::json());
    if (baseline_.judging() && baseline_.against_history())
      ab_note_ =
          plan_nightly_ab(scenario_, options_.history, baseline_.regression(), pool_, folder_.has_value());
    if (!folder_) {
      run_.cells = expand(scenario_);
      ab_.pair_cells();
      // A copy of the file, unless --set, an include or a nightly A/B made the scenario something else.
      const bool as_written = options_.overrides.empty() && scenario_.files.size() <= 1 && !ab_.active();
      folder_.emplace(
          RunFolder::create(new_dir_, options_.scenario_path, as_written ? "" : scenario_.source_text));
      run_.results = folder().open_journal(run_.cells);
    }
    if (run_folder) *run_folder = folder().path().string();
    header_ = start_header(options_, scenario_, folder(), lab_path_, pool_);
    save();
    ProgressReporter progress(run_.cells.size(), ProgressReporter::stderr_is_tty(), options_.quiet);
    progress.set_metrics(options_.metrics);
    if (!ab_note_.empty()) progress.info(ab_note_);
    if (options_.metrics) options_.metrics->run_started(scenario_.name, run_.cells.size());
    const bool complete = measure(progress);
    const int stopped_by = complete || !options_.stop ? 0 : options_.stop->load();
    if (complete)
      header_.finished_at = utc_now("%Y-%m-%dT%H:%M:%SZ");
    else
      ab_.reset();  // the first pairs' verdicts, unconfirmed: --resume judges again
    save(true);
    progress.finish();
    if (embedded_) embedded_->shutdown();
    if (!options_.history.empty() && complete) {
      header_.trends = record_in_history(options_.history, folder().path(), scenario_.name,
                                         baseline_.verdicts() ? &*baseline_.verdicts() : nullptr, run_);
      save(true);
    }
    const int status = write_summary(table_out, scenario_, run_, folder().path(), stopped_by);
    if (!complete) return status;
    return write_verdict_summary(table_out, scenario_,
                                 baseline_.verdicts() ? &*baseline_.verdicts() : nullptr,
                                 ab_.verdicts() ? &*ab_.verdicts() : nullptr, status);
  }

 private:
  RunFolder& folder() { return *folder_; }
  const RunFolder& folder() const { return *folder_; }

  // Every cell not finished yet, then, once all are, the verdicts with what they measure
  // again. False when the run is stopping (a signal after the last cell and its
  // confirmations changes nothing: the run is complete).
  bool measure(ProgressReporter& progress) {
    CellExecutor executor(scenario_, pool_, progress, cell_options(options_, scenario_, folder().path()));
    const MeasureAgain again(scenario_.execution, options_.stop, progress,
                             [this](const MeasureAgain::Unit& unit) {
                               for (size_t i : unit) folder().journal(*run_.results[i]);
                               save();
                             });
    run_cells(executor, again, progress);
    if (!run_.all_finished() || !judge_and_confirm(executor, again, progress) ||
        !ab_.judge_and_confirm(executor, again, progress, folder().path()))
      return false;
    baseline_.finish(folder().path(), ab_.verdicts() ? &*ab_.verdicts() : nullptr, ab_note_);
    return true;
  }

  // The cells not finished yet, each journalled and saved as it finishes, until the last
  // or until the run is stopping. A/B: each cell of build B runs with its partner of build A,
  // pair by pair.
  void run_cells(CellExecutor& executor, const MeasureAgain& again, ProgressReporter& progress) {
    size_t finished = run_.finished().size();
    const std::map<size_t, size_t> partner = ab_.partners();  // A's cell → B's
    const std::set<size_t> paired = ab_.paired_cells();
    bool first = true;
    for (size_t i : run_order(scenario_, run_.cells.size())) {
      if (run_.results[i] || (paired.count(i) && !partner.count(i))) continue;  // B's: with A's
      if (!first && !again.pause(scenario_.execution.cooldown_s)) break;
      first = false;
      std::vector<std::pair<size_t, CellResult>> done;
      if (auto p = partner.find(i); p != partner.end()) {
        auto pair = executor.run_pair(run_.cells[i], run_.cells[p->second], finished);
        if (!pair) break;  // shutting down: both left to --resume
        done.emplace_back(i, std::move(pair->first));
        done.emplace_back(p->second, std::move(pair->second));
      } else {
        auto cell = executor.run(run_.cells[i], finished);
        if (!cell) break;  // shutting down: the cell is left to --resume, not recorded as failed
        done.emplace_back(i, std::move(*cell));
      }
      for (auto& [index, cell] : done) {
        folder().journal(cell);
        run_.results[index] = std::move(cell);
        const CellResult& r = *run_.results[index];
        progress.cell_finished(++finished, run_.cells[index].key(), cell_summary(r));
        if (options_.metrics) options_.metrics->cell_finished(run_.cells[index].key(), r.ok());
      }
      save();  // after every cell: a broken run keeps what it measured
    }
  }

  // The verdicts against the baseline into the header, saved.
  void judge() {
    baseline_.judge(folder().path(), run_);
    save();
  }

  // Judges the run when a baseline is given; measures again, on fresh targets, the cells the
  // history verdict found disturbed (the new measurement becomes the cell's, the one before it
  // kept as `disturbed`) and judges again; then confirms before alarm: the cells the verdict
  // calls suspect (or every cell, with confirm.every_cell) are measured again and judged
  // again. A/B cells are left to AbJudge. False when the run is stopping.
  bool judge_and_confirm(CellExecutor& executor, const MeasureAgain& again, ProgressReporter& progress) {
    if (baseline_.judging()) judge();
    const std::set<size_t> paired = ab_.paired_cells();
    const uint32_t repetitions = scenario_.repetitions;
    if (baseline_.verdicts() && baseline_.against_history()) {
      auto pick = [&](uint32_t attempt) {
        std::vector<MeasureAgain::Unit> which;  // still disturbed, measured again attempt - 1 times
        for (size_t i = 0; i < run_.results.size(); ++i) {
          const auto& r = *run_.results[i];
          if (r.ok() && remeasures(r, repetitions) == attempt - 1 && r.confirmations.empty() &&
              !paired.count(i) && baseline_.disturbed(run_.cells[i].key()))
            which.push_back({i});
        }
        return which;
      };
      auto measure = [&](const MeasureAgain::Unit& unit) {
        progress.info(run_.cells[unit[0]].key() +
                      ": other work ran on its CPUs while it was measured; measuring again (" +
                      std::to_string(repetitions) + " repetitions on fresh targets)");
        return executor.remeasure(*run_.results[unit[0]], run_.cells.size());
      };
      if (!again.rounds(pick, measure, [this] { judge(); })) return false;
    }
    return confirm(executor, again, progress, paired);
  }

  // Confirm before alarm (judge_and_confirm). False when the run is stopping.
  bool confirm(CellExecutor& executor, const MeasureAgain& again, ProgressReporter& progress,
               const std::set<size_t>& paired) {
    const uint32_t count = confirm_count(scenario_);
    std::vector<MeasureAgain::Unit> which;
    for (size_t i = 0; i < run_.results.size(); ++i) {
      const auto& r = *run_.results[i];
      if (!r.ok() || !r.confirmations.empty() || paired.count(i)) continue;
      if (scenario_.execution.confirm_every_cell || baseline_.suspect(run_.cells[i].key()))
        which.push_back({i});
    }
    if (which.empty() || count == 0) return true;
    auto measure = [&](const MeasureAgain::Unit& unit) {
      progress.info(run_.cells[unit[0]].key() + ": measuring again to confirm (" + std::to_string(count) +
                    " repetitions on fresh targets)");
      return executor.confirm(*run_.results[unit[0]], count, run_.cells.size());  // false: stopping, kept
    };
    if (!again.each(which, measure)) return false;
    if (baseline_.judging()) judge();
    return true;
  }

  // result.json and its views; report.html's profiles only when `last` (the run's end, or its
  // stop): drawn after every cell, they would cost the square of the cells.
  void save(bool last = false) {
    if (baseline_.verdicts()) header_.verdicts = baseline_.verdicts();
    header_.ab = ab_.verdicts();
    folder().write_results(header_.to_json(), scenario_.name, run_.finished(), {}, last);
  }

  const RunOptions& options_;
  Scenario scenario_;
  std::optional<RunFolder> folder_;  // made by run() once the inputs are checked
  fs::path new_dir_;
  RunCells run_;
  std::string lab_path_;
  std::unique_ptr<EmbeddedAgent> embedded_;  // before the pool: outlives its channel
  AgentPool pool_;
  ResultHeader header_;
  BaselineJudge baseline_;
  AbJudge ab_;
  std::string ab_note_;  // regression.ab_last_good: the nightly A/B, or why there is none
};

}  // namespace

int run_scenario(const RunOptions& options, std::ostream& table_out, std::string* run_folder) {
  return ScenarioRun(options, open_run(options)).run(table_out, run_folder);
}

}  // namespace loadlab::controller
