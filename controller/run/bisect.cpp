#include "run/bisect.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "judge/verdict_kind.hpp"
#include "loadlab/shared/environment_error.hpp"
#include "loadlab/shared/exit_status.hpp"
#include "loadlab/shared/format.hpp"
#include "loadlab/shared/input_error.hpp"
#include "loadlab/shared/json_input.hpp"
#include "loadlab/shared/logging.hpp"
#include "report/report_html.hpp"
#include "run/bisect_search.hpp"
#include "scenario/plan.hpp"

namespace loadlab::controller {

namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

constexpr const char* kGood = "good";  // the A/B's target names in a step's scenario
constexpr const char* kTest = "test";
constexpr uint32_t kMinPairs = 5;

// The cell `key` names: its target and the value of each matrix axis it takes.
struct CellAt {
  size_t target = 0;
  std::vector<size_t> digits;
};

CellAt find_cell(const Scenario& s, const std::string& key) {
  std::optional<CellAt> found;
  std::string known;
  for_each_cell(s, [&](const Cell& c, const std::vector<size_t>& digits) {
    if (c.key() == key) found = CellAt{c.target_index, digits};
    if (known.size() < 400) known += (known.empty() ? "" : ", ") + c.key();
  });
  if (!found) throw InputError("--cell", "no cell \"" + key + "\" in the scenario; its cells: " + known);
  const auto& t = s.targets[found->target];
  if (t.commit.empty())
    throw InputError("--cell", "the target \"" + t.name + "\" of cell " + key +
                                   " is not built from a commit (it names no \"commit\")");
  if (s.search) throw InputError("--cell", "a capacity search cannot be bisected (its steps are no A/B)");
  return *found;
}

ojson commit_json(const v1::Commit& c) {
  return {{"sha", c.sha()}, {"subject", c.subject()}, {"time_unix", c.time_unix()}};
}

std::string short_sha(const ojson& commit) { return commit.value("sha", std::string()).substr(0, 12); }

// A step's scenario: the bisected cell alone, its target twice (the good commit as A, the step's
// as B), interleaved for `pairs` pairs.
ojson step_scenario(const ojson& base, const Scenario& s, const CellAt& at, const std::string& good,
                    const std::string& test, uint32_t pairs) {
  ojson out = base;
  ojson a = base.at("targets").at(at.target), b = a;
  a["name"] = kGood;
  a["commit"] = good;
  b["name"] = kTest;
  b["commit"] = test;
  out["targets"] = ojson::array({a, b});
  for (size_t i = 0; i < s.matrix.size(); ++i) {
    auto& axis = out.at("matrix").at(s.matrix[i].name);
    if (!axis.is_array())
      throw InputError("/matrix/" + s.matrix[i].name, "a bisect needs the axis as a list");
    axis = ojson::array({axis.at(at.digits[i])});
  }
  out["ab"] = {{"a", kGood}, {"b", kTest}};
  // A nightly's scenario (a run folder's, with --bisect) may pair its last good build: a step
  // is an A/B of its own.
  if (out.contains("regression") && out["regression"].is_object()) out["regression"].erase("ab_last_good");
  out["repetitions"] = pairs;
  return out;
}

struct StepResult {
  StepOutcome outcome = StepOutcome::kSkip;
  bool inconclusive = false;  // measure again with more pairs
  std::string verdict, why;
  std::optional<double> change_pct;
  nlohmann::json grew;  // the metric instructions: what grew (CellVerdict.grew)
};

// What a step's run says of the step's commit: its A/B verdict, or why it cannot be judged.
StepResult judge_step(const nlohmann::json& result) {
  StepResult r;
  // The step's commit first: when it fails, its A/B partner (the good commit) fails with it.
  for (const char* side : {kTest, kGood})
    for (auto& c : result.value("cells", nlohmann::json::array())) {
      const std::string key = c.value("/cell/key"_json_pointer, std::string());
      const std::string error = c.value("error", std::string());
      if (c.value("ok", false) || error.empty() || key.rfind(std::string(side) + "/", 0) != 0) continue;
      if (side == kGood)
        throw EnvironmentError("the good commit's cell failed, so no step can be judged against it: " +
                               error);
      r.verdict = "failed";
      r.why = (error.rfind("build: ", 0) == 0 ? "does not build: " : "failed: ") + error.substr(0, 300);
      return r;
    }
  const auto cells = result.value("/ab/cells"_json_pointer, nlohmann::json::array());
  if (cells.empty()) {
    r.inconclusive = true;
    r.why = "the run gave no A/B verdict";
    return r;
  }
  const auto& v = cells.front();
  r.verdict = v.value("verdict", std::string());
  if (v.contains("change_pct")) r.change_pct = v["change_pct"].get<double>();
  r.why = v.value("reason", std::string());
  r.grew = v.value("grew", nlohmann::json::array());
  const auto kind = verdict_named(r.verdict);
  if (kind == Verdict::kRegression) {
    r.outcome = StepOutcome::kBad;
  } else if (kind == Verdict::kSame || kind == Verdict::kImprovement) {
    r.outcome = StepOutcome::kGood;
  } else {
    r.inconclusive = true;
  }
  return r;
}

const char* outcome_name(StepOutcome o) {
  return o == StepOutcome::kGood ? "good" : o == StepOutcome::kBad ? "bad" : "skip";
}

std::string text_of(const ojson& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

// report.html of the bisect's folder: the range, each step with its figures and its run's
// report, and the commit named; self-contained, like a run's report.
void write_bisect_report(const fs::path& dir, const ojson& j) {
  std::ofstream o(dir / "report.html");
  const std::string cell = html_escape(text_of(j, "cell"));
  o << "<!doctype html><html><head><meta charset=\"utf-8\"><title>bisect " << cell
    << "</title><style>body{font:14px sans-serif;margin:2em}table{border-collapse:collapse}"
       "td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}.bad{color:#b00}.good{color:#070}"
       "dt{font-weight:bold;float:left;width:9em}dd{margin-left:10em}</style></head><body><h1>bisect "
    << cell << "</h1><dl>";
  auto row = [&](const char* name, const std::string& value) {
    o << "<dt>" << name << "</dt><dd>" << html_escape(value) << "</dd>";
  };
  auto commit = [](const ojson& c) { return text_of(c, "sha").substr(0, 12) + " " + text_of(c, "subject"); };
  row("scenario", text_of(j, "scenario_path"));
  row("target", text_of(j, "target"));
  row("metric",
      text_of(j, "metric") + ", threshold " + fmt::format("{}", j.value("threshold_pct", 0.0)) + " %");
  row("good", commit(j["good"]));
  row("bad", commit(j["bad"]));
  row("commits", std::to_string(j["candidates"].size()) + " after the good one, first parents");
  if (j.contains("first_bad") && j["first_bad"].is_object())
    row("first bad commit", text_of(j["first_bad"], "sha") + " " + text_of(j["first_bad"], "subject"));
  else
    row("first bad commit", "not named: " + std::to_string(j.value("range", ojson::array()).size()) +
                                " commits could not be told apart");
  o << "</dl>";
  if (j.contains("grew") && !j["grew"].empty()) {
    o << "<h2>What grew at the first bad commit</h2><table><tr><th>function</th><th>self, good</th><th>self, "
         "bad</th><th>incl., good</th><th>incl., bad</th></tr>";
    for (auto& g : j["grew"])
      o << "<tr><td>" << html_escape(text_of(g, "function")) << "</td><td>"
        << fmt::format("{:.1f}</td><td>{:.1f}</td><td>{:.1f}</td><td>{:.1f}", g.value("self_a", 0.0),
                       g.value("self_b", 0.0), g.value("inclusive_a", 0.0), g.value("inclusive_b", 0.0))
        << "</td></tr>";
    o << "</table>";
  }
  o << "<h2>Steps</h2><table><tr><th>step</th><th>commit</th><th>round</th><th>pairs</th><th>verdict</"
       "th>"
       "<th>change</th><th>outcome</th><th>why</th><th>run</th></tr>";
  size_t n = 0;
  for (auto& s : j["steps"]) {
    const std::string outcome = text_of(s, "outcome");
    o << "<tr><td>" << ++n << "</td><td>" << html_escape(commit(s)) << "</td><td>" << s.value("round", 0)
      << "</td><td>" << s.value("pairs", 0) << "</td><td>" << html_escape(text_of(s, "verdict"))
      << "</td><td>"
      << (s.contains("change_pct") ? fmt::format("{:+.1f} %", s["change_pct"].get<double>()) : "")
      << "</td><td class=\"" << outcome << "\">" << (outcome.empty() ? "more pairs" : outcome) << "</td><td>"
      << html_escape(text_of(s, "why")) << "</td><td><a href=\"" << html_escape(text_of(s, "run"))
      << "/report.html\">report</a></td></tr>";
  }
  o << "</table></body></html>\n";
}

void write_atomically(const fs::path& file, const std::string& text) {
  const fs::path tmp = file.string() + ".tmp";
  std::ofstream(tmp) << text;
  fs::rename(tmp, file);
}

// One bisect: its journal (the folder's result.json), the agents that resolve its range, and the
// steps, each a run of its own.
class Bisect {
 public:
  Bisect(const BisectOptions& o, std::ostream& out) : o_(o), out_(out) {}

  int run() {
    open();
    BisectSearch search(j_["candidates"].size());
    for (auto& step : j_["steps"])
      if (step.contains("outcome"))
        search.record(step["candidate"].get<size_t>(), outcome_of(step["outcome"]));
    while (auto next = search.next()) {
      if (o_.run.stop && o_.run.stop->load()) return stopped();
      auto step = measure(*next);
      if (!step) return stopped();
      search.record(*next, *step);
    }
    return finish(search);
  }

 private:
  static StepOutcome outcome_of(const ojson& name) {
    return name == "good" ? StepOutcome::kGood : name == "bad" ? StepOutcome::kBad : StepOutcome::kSkip;
  }

  // A new bisect resolves its range; a resumed one reads its journal.
  void open() {
    if (!o_.resume_dir.empty()) {
      dir_ = o_.resume_dir;
      std::ifstream in(dir_ / "result.json");
      j_ = ojson::parse(in, nullptr, false);
      if (!j_.is_object() || !j_.contains("candidates"))
        throw InputError("--resume", dir_.string() + " holds no bisect (result.json)");
      scenario_ = load_scenario_file((dir_ / "scenario.json").string());
      at_ = find_cell(scenario_, j_["cell"]);
      return;
    }
    scenario_ = load_scenario_file(o_.run.scenario_path, o_.run.overrides, o_.run.include_root);
    at_ = find_cell(scenario_, o_.cell);
    dir_ = o_.out_dir.empty() ? fs::path("bisects") / (scenario_.name + "-" + utc_now("%Y%m%dT%H%M%SZ"))
                              : fs::path(o_.out_dir);
    if (fs::exists(dir_) && !fs::is_empty(dir_))
      throw InputError("--out",
                       dir_.string() + " already exists and is not empty; continue there with --resume");
    resolve_range();
  }

  void resolve_range() {
    AgentPool pool(o_.run.agent_stubs ? o_.run.agent_stubs : StubFactory(grpc_stub));
    auto embedded = connect_agents(o_.run, o_.run.lab_path, pool);
    pool.check(scenario_);
    pool.resolve_commit(scenario_, at_.target, o_.good, "", "--good");  // a bad one named as --good's
    const auto r = pool.resolve_commit(scenario_, at_.target, o_.bad, o_.good, "--bad");
    const uint32_t pairs = std::max(o_.pairs ? o_.pairs : scenario_.repetitions, o_.pairs ? 1u : kMinPairs);
    j_ = {{"kind", "bisect"},
          {"scenario_path", o_.run.scenario_path},
          {"cell", o_.cell},
          {"target", scenario_.targets[at_.target].name},
          {"lab_path", o_.run.lab_path},
          {"metric", scenario_.regression.metric},
          {"threshold_pct", scenario_.regression.threshold_pct},
          {"pairs", pairs},
          {"started_at", utc_now("%Y-%m-%dT%H:%M:%SZ")},
          {"good", commit_json(r.since())},
          {"bad", commit_json(r.commit())},
          {"candidates", ojson::array()},
          {"steps", ojson::array()},
          {"status", "searching"}};
    for (auto& c : r.between()) j_["candidates"].push_back(commit_json(c));
    j_["candidates"].push_back(commit_json(r.commit()));
    if (embedded) embedded->shutdown();
    // The folder once the range is known: a bad ref or an unreachable agent leaves none.
    fs::create_directories(dir_ / "steps");
    write_atomically(dir_ / "scenario.json", scenario_.source_text);
    save();
    out_ << "bisect " << o_.cell << ": " << j_["candidates"].size() - 1 << " commits between "
         << short_sha(j_["good"]) << " (good) and " << short_sha(j_["bad"]) << " (bad), at most "
         << BisectSearch(j_["candidates"].size()).worst_steps() << " steps of " << pairs << " pairs\n";
  }

  // The candidate's steps, more pairs each round while its A/B is inconclusive; none when the
  // bisect was stopped.
  std::optional<StepOutcome> measure(size_t index) {
    const ojson& commit = j_["candidates"][index];
    uint32_t pairs = j_["pairs"].get<uint32_t>();
    for (uint32_t round = 1; round <= kMaxBisectRounds; ++round, pairs *= 2) {
      ojson* done = recorded(index, round);
      if (!done) {
        auto r = run_step(commit, round, pairs);
        if (!r) return std::nullopt;
        done = r;
      }
      if (done->contains("outcome")) return outcome_of((*done)["outcome"]);
    }
    return StepOutcome::kSkip;  // unreachable: the last round always decides
  }

  ojson* recorded(size_t index, uint32_t round) {
    for (auto& s : j_["steps"])
      if (s["candidate"] == index && s["round"] == round && s.contains("verdict")) return &s;
    return nullptr;
  }

  ojson* run_step(const ojson& commit, uint32_t round, uint32_t pairs);
  int stopped();
  int finish(const BisectSearch& search);
  void save() { write_atomically(dir_ / "result.json", j_.dump(2) + "\n"); }

  const BisectOptions& o_;
  std::ostream& out_;
  fs::path dir_;
  ojson j_;
  Scenario scenario_;
  CellAt at_;
};

}  // namespace

ojson* Bisect::run_step(const ojson& commit, uint32_t round, uint32_t pairs) {
  const size_t index = static_cast<size_t>(&commit - &j_["candidates"][0]);
  const std::string name = fmt::format("{:02}-{}-r{}", j_["steps"].size() + 1, short_sha(commit), round);
  const fs::path step_dir = dir_ / "steps" / name;
  fs::create_directories(step_dir);
  const ojson base = ojson::parse(scenario_.source_text);
  write_atomically(
      step_dir / "scenario.json",
      step_scenario(base, scenario_, at_, j_["good"]["sha"], commit["sha"], pairs).dump(2) + "\n");
  RunOptions r = o_.run;
  r.overrides.clear();
  r.include_root.clear();
  r.baseline.clear();
  r.history.clear();
  r.lab_path = j_.value("lab_path", std::string());
  // A step killed before its run saved anything starts again; one killed later resumes its run.
  const bool resume = fs::exists(step_dir / "run" / "result.json");
  if (!resume) fs::remove_all(step_dir / "run");
  r.scenario_path = resume ? "" : (step_dir / "scenario.json").string();
  r.resume_dir = resume ? (step_dir / "run").string() : "";
  r.out_dir = resume ? "" : (step_dir / "run").string();
  r.quiet = true;
  std::ostringstream table;
  const int status = run_scenario(r, table);
  if (status >= exit_status::kSignalBase) return nullptr;
  const auto result = read_json_file((step_dir / "run" / "result.json").string());
  StepResult judged = judge_step(result);
  if (judged.inconclusive && round == kMaxBisectRounds)
    judged.why = "inconclusive after " + std::to_string(round) + " rounds: " + judged.why;
  ojson step = {{"candidate", index},
                {"sha", commit["sha"]},
                {"subject", commit["subject"]},
                {"round", round},
                {"pairs", pairs},
                {"verdict", judged.verdict},
                {"why", judged.why},
                {"run", ("steps/" + name + "/run")}};
  if (judged.change_pct) step["change_pct"] = *judged.change_pct;
  if (!judged.grew.empty()) step["grew"] = ojson::parse(judged.grew.dump());
  if (!judged.inconclusive || round == kMaxBisectRounds) step["outcome"] = outcome_name(judged.outcome);
  j_["steps"].push_back(step);
  save();
  out_ << fmt::format(
      "step {}: {} {}: {}{} ({} pairs){}\n", j_["steps"].size(), short_sha(commit),
      commit.value("subject", std::string()), judged.verdict.empty() ? "no verdict" : judged.verdict,
      judged.change_pct ? fmt::format(" {:+.1f} %", *judged.change_pct) : std::string(), pairs,
      step.contains("outcome") ? std::string(": ") + outcome_name(judged.outcome)
                               : std::string(": more pairs"));
  return &j_["steps"].back();
}

int Bisect::stopped() {
  j_["status"] = "stopped";
  save();
  out_ << "bisect stopped; continue with: loadlab bisect --resume " << dir_.string() << "\n";
  return exit_status::kSignalBase + (o_.run.stop ? o_.run.stop->load() : 0);
}

int Bisect::finish(const BisectSearch& search) {
  j_["finished_at"] = utc_now("%Y-%m-%dT%H:%M:%SZ");
  j_["range"] = ojson::array();
  for (size_t i : search.range()) j_["range"].push_back(j_["candidates"][i]);
  const auto first = search.first_bad();
  j_["status"] = first ? "found" : "range";
  j_["first_bad"] = first ? j_["candidates"][*first] : ojson();
  for (auto& s : j_["steps"])  // what grew at the first bad commit, when its step says
    if (first && s["candidate"] == *first && s.contains("grew")) j_["grew"] = s["grew"];
  save();
  write_bisect_report(dir_, j_);
  if (first) {
    out_ << "first bad commit: " << j_["first_bad"]["sha"].get<std::string>() << " "
         << j_["first_bad"]["subject"].get<std::string>() << "\n";
    for (auto& g : j_.value("grew", ojson::array()))
      out_ << fmt::format("  grew: {} {:+.1f} instructions per request (self)\n", text_of(g, "function"),
                          g.value("self_b", 0.0) - g.value("self_a", 0.0));
  } else {
    out_ << "the first bad commit is one of " << j_["range"].size() << " (the others could not be judged):";
    for (auto& c : j_["range"]) out_ << " " << short_sha(c);
    out_ << "\n";
  }
  out_ << "result: " << (dir_ / "result.json").string() << ", report.html\n";
  return first ? exit_status::kOk : exit_status::kCellsFailed;
}

int run_bisect(const BisectOptions& o, std::ostream& out) { return Bisect(o, out).run(); }

}  // namespace loadlab::controller
