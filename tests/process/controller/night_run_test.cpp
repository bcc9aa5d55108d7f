// Whole nights through `run_scenario` on a fake agent (gRPC's stub mock, scripted figures):
// against the history, a night that looks like a regression is measured again on fresh
// targets before the verdict; a changed machine is inconclusive and a new build is not; exit
// statuses and their precedence.
#include <gtest/gtest.h>

#include <deque>
#include <filesystem>
#include <fstream>
#include <set>

#include "fake_agent.hpp"
#include "load_result_fixture.hpp"
#include "loadlab/shared/exit_status.hpp"
#include "loadlab/shared/json_input.hpp"
#include "run/scenario_run.hpp"

namespace loadlab::controller {
namespace {

namespace fs = std::filesystem;
using fake::FakeAgent;
using fake::LoadStream;
using fake::TargetStream;

class NightRun : public ::testing::Test {
 protected:
  NightRun() {
    dir_ = fs::temp_directory_path() / ("loadlab-night-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    agent_.info().set_allowed_cpus("0-3");
    set_governor("performance");
    // The target: started (with its build), ready, the window's usage on the final mark.
    agent_.on_host_target = [this](TargetStream& t) {
      fake::host_steady_target(t, 40, [this] { return build_; });
    };
    // The load: the next scripted figure of its cell, or a refusal no retry can fix.
    agent_.on_run_load = [this](LoadStream& l) {
      l.on_write = [this](const v1::LoadCommand& cmd, LoadStream& l) {
        if (!cmd.has_spec()) return;
        if (cmd.spec().endpoint().empty()) return;
        const auto [qps, busy] = next_qps();
        if (qps < 0) {
          l.end(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "threads: refused"));
          return;
        }
        l.send(fake::measure_start());
        l.send(fake::load_result(part({100, 200, 300}, qps)));
        auto usage = fake::load_usage(30);
        // Other work beside the cell: the machine two cores busy, the cell's parts 0.7 of them.
        if (busy) usage.mutable_usage()->set_machine_cpu_pct(270);
        l.send(usage);
        l.end();
      };
    };
  }
  ~NightRun() override { fs::remove_all(dir_); }

  void set_governor(const std::string& g) {
    auto* f = agent_.info().mutable_fingerprint();
    f->set_cpu_model("Fake CPU");
    f->set_cpus(4);
    f->set_threads_per_core(1);
    f->set_governor(g);
    f->set_kernel("6.1");
  }
  // The next repetition's QPS, and whether other work ran beside it.
  std::pair<double, bool> next_qps() {
    std::lock_guard lock(mutex_);
    const bool busy = busy_.count(served_++) > 0;
    if (figures_.empty()) return {1000, busy};
    double q = figures_.front();
    figures_.pop_front();
    return {q, busy};
  }

  // One night: `figures` are the repetitions' QPS in the order they run (confirmations last);
  // returns the exit status.
  // `busy`: the repetitions (0-based, in that order) that other work on the machine disturbed.
  int night(const std::string& name, std::deque<double> figures, const std::string& scenario = kScenario,
            std::set<size_t> busy = {}) {
    {
      std::lock_guard lock(mutex_);
      figures_ = std::move(figures);
      busy_ = std::move(busy);
      served_ = 0;
    }
    std::ofstream(dir_ / "s.json") << scenario;
    std::ofstream(dir_ / "lab.json")
        << R"({"agents": [{"name": "a", "address": "fake:1", "roles": ["target", "load"]}]})";
    RunOptions o;
    o.scenario_path = (dir_ / "s.json").string();
    o.lab_path = (dir_ / "lab.json").string();
    o.out_dir = (dir_ / name).string();
    o.history = (dir_ / "history.db").string();
    o.baseline = kHistory;
    o.quiet = true;
    o.agent_stubs = [this](const AgentDef&) { return AgentStub{nullptr, agent_.stub()}; };
    o.cancel_calls = fake::canceller({&agent_});
    std::ostringstream table;
    targets_before_ = agent_.targets().size();
    int status = run_scenario(o, table, nullptr);
    table_ = table.str();
    return status;
  }
  nlohmann::json verdict(const std::string& name, size_t cell = 0) {
    return read_json_file((dir_ / name / "result.json").string())["verdicts"]["cells"][cell];
  }
  size_t targets_started() const { return agent_.targets().size() - targets_before_; }

  // Two repetitions of one cell, each on a fresh target.
  static constexpr const char* kScenario = R"({"name": "n", "targets": [{"name": "b", "builtin": "hello"}],
      "matrix": {"delay_ms": [0]}, "load": {"requests_per_thread": 10}, "repetitions": 2})";

  fs::path dir_;
  FakeAgent agent_{"a"};
  std::mutex mutex_;
  std::deque<double> figures_;
  std::set<size_t> busy_;
  size_t served_ = 0;
  std::string build_ = "loadlab-target 1 sha256:aaaa";
  size_t targets_before_ = 0;
  std::string table_;
};

// Five nights of 1000 ± 1 % make a band; tonight's repetitions come after them.
void five_good_nights(NightRun& t, std::function<int(const std::string&, std::deque<double>)> night) {
  for (int n = 1; n <= 5; ++n)
    ASSERT_EQ(night("n" + std::to_string(n), {1000.0 + n, 1000.0 - n}), exit_status::kOk) << n;
}

TEST_F(NightRun, ASuspectNightIsMeasuredAgainOnFreshTargetsBeforeTheVerdict) {
  auto night_fn = [this](const std::string& n, std::deque<double> f) { return night(n, std::move(f)); };
  five_good_nights(*this, night_fn);
  // 4 earlier nights, fewer than 5: within the threshold, so `same`, and it says how few.
  EXPECT_EQ(verdict("n5")["verdict"], "same");
  EXPECT_NE(verdict("n5")["reason"].get<std::string>().find("4 nights of history (5 needed)"),
            std::string::npos);
  // Tonight's two repetitions say -30 %; the three confirmations say nothing changed.
  EXPECT_EQ(night("slow-once", {700, 701, 1000, 1001, 999}), exit_status::kOk) << table_;
  auto v = verdict("slow-once");
  EXPECT_EQ(v["verdict"], "noise") << v.dump();
  EXPECT_TRUE(v["suspect"].get<bool>());
  EXPECT_EQ(v["confirm_value"], 1000);
  EXPECT_EQ(targets_started(), 5u) << "2 repetitions + 3 confirmations, each a fresh target";
  auto cells = read_json_file((dir_ / "slow-once" / "result.json").string())["cells"];
  EXPECT_EQ(cells[0]["repetitions"].size(), 2u);
  EXPECT_EQ(cells[0]["confirmations"].size(), 3u);
  // Both measurements hold: a regression, exit status 1.
  EXPECT_EQ(night("slow", {700, 701, 702, 698, 700}), exit_status::kRegression) << table_;
  EXPECT_EQ(verdict("slow")["verdict"], "regression");
  EXPECT_NE(table_.find("REGRESSION"), std::string::npos) << table_;
  // A night that is fine needs no confirmation.
  EXPECT_EQ(night("fine", {1000, 1001}), exit_status::kOk);
  EXPECT_EQ(targets_started(), 2u);
  EXPECT_EQ(verdict("fine")["verdict"], "same");
}

// Other work on the machine while a cell was measured: the cell is measured again at the end
// of the run on fresh targets and judged by that measurement; the first is kept apart. A
// re-measurement that says regression is confirmed as any night's.
TEST_F(NightRun, ADisturbedNightIsMeasuredAgainAndJudgedByThat) {
  auto night_fn = [this](const std::string& n, std::deque<double> f) { return night(n, std::move(f)); };
  five_good_nights(*this, night_fn);
  EXPECT_EQ(night("busy", {600, 610, 1000, 1001}, kScenario, {0, 1}), exit_status::kOk) << table_;
  EXPECT_EQ(targets_started(), 4u) << "2 repetitions + 2 measured again, each a fresh target";
  auto v = verdict("busy");
  EXPECT_EQ(v["verdict"], "same") << v.dump();
  EXPECT_TRUE(v["disturbed"].get<bool>());
  EXPECT_EQ(v["value"], 1000);
  EXPECT_NE(v["reason"].get<std::string>().find("measured again at the end of the run"), std::string::npos)
      << v.dump();
  auto cell = read_json_file((dir_ / "busy" / "result.json").string())["cells"][0];
  ASSERT_EQ(cell["repetitions"].size(), 2u);
  ASSERT_EQ(cell["disturbed"].size(), 2u);
  EXPECT_NEAR(cell["qps_min"].get<double>(), 1000, 0.5);
  EXPECT_NEAR(cell["disturbed"][0]["qps"].get<double>(), 600, 0.5);
  EXPECT_EQ(cell["confirmations"].size(), 0u);
  // Measured again, still slower: confirmed like any night (3 more repetitions), a regression.
  EXPECT_EQ(night("busy-slow", {600, 610, 700, 701, 700, 702, 698}, kScenario, {0, 1}),
            exit_status::kRegression)
      << table_;
  EXPECT_EQ(targets_started(), 7u);
  EXPECT_EQ(verdict("busy-slow")["verdict"], "regression");
  auto scenario = [](const std::string& execution) {
    return R"({"name": "n", "targets": [{"name": "b", "builtin": "hello"}],
      "matrix": {"delay_ms": [0]}, "load": {"requests_per_thread": 10}, "repetitions": 2,
      "execution": )" +
           execution + "}";
  };
  // Still disturbed when measured again: once more after the wait, then judged.
  EXPECT_EQ(night("busy-twice", {600, 610, 600, 610, 1000, 1001}, scenario(R"({"remeasure_wait_s": 0.05})"),
                  {0, 1, 2, 3}),
            exit_status::kOk)
      << table_;
  EXPECT_EQ(targets_started(), 6u);
  v = verdict("busy-twice");
  EXPECT_EQ(v["verdict"], "same") << v.dump();
  EXPECT_NE(v["reason"].get<std::string>().find("measured again 2 times"), std::string::npos) << v.dump();
  EXPECT_EQ(read_json_file((dir_ / "busy-twice" / "result.json").string())["cells"][0]["disturbed"].size(),
            4u);
  // At most remeasure_disturbed times: still disturbed then, inconclusive.
  EXPECT_EQ(
      night("busy-thrice", {600, 610, 600, 610}, scenario(R"({"remeasure_disturbed": 1})"), {0, 1, 2, 3}),
      exit_status::kOk)
      << table_;
  EXPECT_EQ(targets_started(), 4u);
  EXPECT_EQ(verdict("busy-thrice")["verdict"], "inconclusive");
  // Not measured again when the scenario says so: inconclusive, as measured.
  EXPECT_EQ(night("busy-kept", {600, 610}, scenario(R"({"remeasure_disturbed": 0})"), {0, 1}),
            exit_status::kOk)
      << table_;
  EXPECT_EQ(targets_started(), 2u);
  v = verdict("busy-kept");
  EXPECT_EQ(v["verdict"], "inconclusive") << v.dump();
  EXPECT_TRUE(v["disturbed"].get<bool>());
  EXPECT_NE(v["reason"].get<std::string>().find("the machine was busy"), std::string::npos) << v.dump();
}

TEST_F(NightRun, AChangedMachineIsInconclusiveButANewBuildIsJudged) {
  auto night_fn = [this](const std::string& n, std::deque<double> f) { return night(n, std::move(f)); };
  five_good_nights(*this, night_fn);
  set_governor("powersave");
  EXPECT_EQ(night("governor", {700, 700, 700, 700, 700}), exit_status::kOk) << table_;
  auto v = verdict("governor");
  EXPECT_EQ(v["verdict"], "inconclusive");
  EXPECT_NE(v["reason"].get<std::string>().find("a governor performance -> powersave"), std::string::npos)
      << v.dump();
  // Back on the machine of the band; a new build of the target is what a nightly tests.
  set_governor("performance");
  build_ = "loadlab-target 2 sha256:bbbb";
  EXPECT_EQ(night("new-build", {700, 701, 702, 698, 700}), exit_status::kRegression) << table_;
  EXPECT_EQ(verdict("new-build")["verdict"], "regression");
  auto rep = read_json_file((dir_ / "new-build" / "result.json").string())["cells"][0]["repetitions"][0];
  EXPECT_EQ(rep["target_build"], "loadlab-target 2 sha256:bbbb");
}

// Failed cells and a regression at once: 1, the regression. Failed cells alone: 3.
TEST_F(NightRun, ExitStatusesAndTheirPrecedence) {
  const std::string two_cells = R"({"name": "n", "targets": [{"name": "b", "builtin": "hello"}],
      "matrix": {"delay_ms": [0, 1]}, "load": {"requests_per_thread": 10}, "repetitions": 2,
      "execution": {"retries": 0}})";
  for (int n = 1; n <= 5; ++n)
    ASSERT_EQ(night("n" + std::to_string(n), {1000.0 + n, 1000.0 - n, 500.0 + n, 500.0 - n}, two_cells),
              exit_status::kOk);
  // b/d0 regresses (and its confirmation agrees); b/d1's load is refused: it fails.
  EXPECT_EQ(night("both", {700, 701, -1, 700, 702, 699}, two_cells), exit_status::kRegression) << table_;
  EXPECT_EQ(verdict("both", 0)["verdict"], "regression");
  EXPECT_EQ(verdict("both", 1)["verdict"], "failed");
  EXPECT_EQ(night("failed", {1000, 1001, -1}, two_cells), exit_status::kCellsFailed) << table_;
  EXPECT_EQ(exit_status::worst(exit_status::kCellsFailed, exit_status::kRegression),
            exit_status::kRegression);
  EXPECT_EQ(exit_status::worst(exit_status::kRegression, exit_status::kLabUnusable),
            exit_status::kRegression);
  EXPECT_EQ(exit_status::worst(exit_status::kLabUnusable, exit_status::kCellsFailed),
            exit_status::kLabUnusable);
  EXPECT_EQ(exit_status::worst(exit_status::kBadInput, exit_status::kLabUnusable), exit_status::kBadInput);
  EXPECT_EQ(exit_status::worst(exit_status::kRegression, exit_status::kSignalBase + 15), 143);
  EXPECT_EQ(exit_status::worst(exit_status::kOk, exit_status::kCellsFailed), exit_status::kCellsFailed);
}

// A/B: build B against A cell by cell, in the order A B, B A, A B, B A, paired.
TEST_F(NightRun, AnABRunAlternatesTheBuildsAndPairsThem) {
  const std::string ab = R"({"name": "pr", "targets": [{"name": "main", "builtin": "hello"},
      {"name": "pr", "builtin": "hello", "body": "pr"}],
      "matrix": {"delay_ms": [0]}, "load": {"requests_per_thread": 10}, "repetitions": 4,
      "ab": {"a": "main", "b": "pr"}, "regression": {"threshold_pct": 2}})";
  // B is 5 % slower in every pair, and again in the 4 pairs that confirm it; the machine
  // drifts 10 % between pairs.
  std::deque<double> figures;
  const double drift[] = {1000, 1100, 950, 1050};
  const bool b_first[] = {false, true, false, true};
  for (int round = 0; round < 2; ++round)
    for (int i = 0; i < 4; ++i) {
      double a = drift[i], b = drift[i] * (i % 2 ? 0.95 : 0.951);
      figures.push_back(b_first[i] ? b : a);
      figures.push_back(b_first[i] ? a : b);
    }
  EXPECT_EQ(night("ab", figures, ab), exit_status::kRegression) << table_;
  auto result = read_json_file((dir_ / "ab" / "result.json").string());
  const auto& v = result["ab"]["cells"][0];
  EXPECT_EQ(result["ab"]["method"], "a/b");
  EXPECT_EQ(v["key"], "pr/d0");
  EXPECT_EQ(v["a_key"], "main/d0");
  EXPECT_EQ(v["verdict"], "regression") << v.dump();
  EXPECT_NEAR(v["change_pct"].get<double>(), -4.95, 0.01);
  EXPECT_TRUE(v["suspect"].get<bool>());
  EXPECT_NEAR(v["confirm_change_pct"].get<double>(), -4.95, 0.01);
  EXPECT_NE(v["reason"].get<std::string>().find("confirmed by 4 more pairs"), std::string::npos) << v.dump();
  for (auto* field : {"pairs", "confirm_pairs"}) {
    ASSERT_EQ(v[field].size(), 4u) << field;
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(v[field][i]["b_first"].get<bool>(), b_first[i]) << field << i;
      EXPECT_NEAR(v[field][i]["a"].get<double>(), drift[i], 1e-6) << field << i;
    }
  }
  // The targets ran in that order, each on a fresh process: main, pr, pr, main, main, pr, pr,
  // main; then the confirmation's pairs in the same order.
  std::vector<std::string> bodies;
  for (auto& t : agent_.targets()) bodies.push_back(t->written().front().spec().body());
  const std::vector<std::string> order{"", "pr", "pr", "", "", "pr", "pr", ""};
  std::vector<std::string> twice = order;
  twice.insert(twice.end(), order.begin(), order.end());
  EXPECT_EQ(bodies, twice);
  EXPECT_NE(table_.find("B A"), std::string::npos) << table_;
  EXPECT_NE(table_.find("confirm 4"), std::string::npos) << table_;
  for (auto* file : {"matrix.md", "report.html"}) {
    std::ifstream in(dir_ / "ab" / file);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("confirm 4"), std::string::npos) << file;
  }
  // The same build twice (A/A): the pairs' drift cancels, nothing to report.
  figures.clear();
  for (int i = 0; i < 4; ++i) {
    figures.push_back(drift[i]);
    figures.push_back(drift[i] * (i % 2 ? 1.003 : 0.997));
  }
  EXPECT_EQ(night("aa", figures, ab), exit_status::kOk) << table_;
  EXPECT_EQ(read_json_file((dir_ / "aa" / "result.json").string())["ab"]["cells"][0]["verdict"], "same");
}

// A/B, confirm before alarm: pairs that say regression are measured again; when the new pairs
// do not show it, the verdict is noise and the run exits 0. Without a confirmation (confirm 0)
// the same pairs are a regression.
TEST_F(NightRun, AnABRegressionThatTheConfirmationsPairsDoNotShowIsNoise) {
  auto scenario = [](int confirm) {
    return R"({"name": "pr", "targets": [{"name": "main", "builtin": "hello"},
      {"name": "pr", "builtin": "hello", "body": "pr"}],
      "matrix": {"delay_ms": [0]}, "load": {"requests_per_thread": 10}, "repetitions": 4,
      "execution": {"confirm": )" +
           std::to_string(confirm) +
           R"(}, "ab": {"a": "main", "b": "pr"}, "regression": {"threshold_pct": 2}})";
  };
  std::deque<double> slow;  // B 6 % slower in each of 4 pairs (B A in the odd ones)
  for (int i = 0; i < 4; ++i) {
    const double a = 1000 + 10 * i, b = a * (i % 2 ? 0.94 : 0.939);
    slow.push_back(i % 2 ? b : a);
    slow.push_back(i % 2 ? a : b);
  }
  std::deque<double> figures = slow;
  for (double f : {1000.0, 1001.0, 999.0, 1000.0, 1002.0, 1001.0, 998.0, 999.0}) figures.push_back(f);
  EXPECT_EQ(night("noise", figures, scenario(4)), exit_status::kOk) << table_;
  EXPECT_EQ(targets_started(), 16u);
  auto v = read_json_file((dir_ / "noise" / "result.json").string())["ab"]["cells"][0];
  EXPECT_EQ(v["verdict"], "noise") << v.dump();
  EXPECT_TRUE(v["suspect"].get<bool>());
  EXPECT_EQ(v["confirm_pairs"].size(), 4u);
  EXPECT_NEAR(v["change_pct"].get<double>(), -6, 0.1);
  EXPECT_NEAR(v["confirm_change_pct"].get<double>(), 0, 0.2);
  EXPECT_NE(v["reason"].get<std::string>().find("but 4 more pairs on fresh targets measured"),
            std::string::npos)
      << v.dump();
  EXPECT_EQ(night("unconfirmed", slow, scenario(0)), exit_status::kRegression) << table_;
  EXPECT_EQ(targets_started(), 8u);
  v = read_json_file((dir_ / "unconfirmed" / "result.json").string())["ab"]["cells"][0];
  EXPECT_EQ(v["verdict"], "regression") << v.dump();
  EXPECT_EQ(v["confirm_pairs"].size(), 0u);
}

// A/B: pairs measured while other work ran on their CPUs are measured again, in the same order
// on fresh targets, and judged by the new pairs; the first stay in result.json.
TEST_F(NightRun, ABPairsThatOtherWorkDisturbedAreMeasuredAgain) {
  const std::string ab = R"({"name": "pr", "targets": [{"name": "main", "builtin": "hello"},
      {"name": "pr", "builtin": "hello", "body": "pr"}],
      "matrix": {"delay_ms": [0]}, "load": {"requests_per_thread": 10}, "repetitions": 4,
      "execution": {"confirm": 0}, "ab": {"a": "main", "b": "pr"}, "regression": {"threshold_pct": 2}})";
  // The first pairs: a neighbour's build makes them say nothing (its first pair flagged busy);
  // measured again, B is 6 % slower in each.
  std::deque<double> figures{1000, 1400, 700, 1000, 1000, 1300, 1200, 1000};
  for (int i = 0; i < 4; ++i) {
    const double a = 1000 + 10 * i, b = a * 0.94;
    figures.push_back(i % 2 ? b : a);
    figures.push_back(i % 2 ? a : b);
  }
  EXPECT_EQ(night("ab-busy", figures, ab, {0}), exit_status::kRegression) << table_;
  EXPECT_EQ(targets_started(), 16u) << "4 pairs, then 4 more on fresh targets";
  auto result = read_json_file((dir_ / "ab-busy" / "result.json").string());
  auto v = result["ab"]["cells"][0];
  EXPECT_EQ(v["verdict"], "regression") << v.dump();
  EXPECT_TRUE(v["disturbed"].get<bool>());
  EXPECT_NEAR(v["change_pct"].get<double>(), -6, 0.1);
  EXPECT_NE(v["reason"].get<std::string>().find("pairs measured again"), std::string::npos) << v.dump();
  for (int c = 0; c < 2; ++c) {
    EXPECT_EQ(result["cells"][c]["repetitions"].size(), 4u);
    EXPECT_EQ(result["cells"][c]["disturbed"].size(), 4u);
  }
  // Pairs without a flag are judged as measured.
  EXPECT_EQ(night("ab-calm", figures, ab), exit_status::kOk) << table_;
  EXPECT_EQ(targets_started(), 8u);
  EXPECT_FALSE(
      read_json_file((dir_ / "ab-calm" / "result.json").string())["ab"]["cells"][0]["disturbed"].get<bool>());
}

TEST_F(NightRun, AnABPairThatOtherWorkDisturbedIsLeftOutOfTheTest) {
  const std::string ab = R"({"name": "pr", "targets": [{"name": "main", "builtin": "hello"},
      {"name": "pr", "builtin": "hello", "body": "pr"}],
      "matrix": {"delay_ms": [0]}, "load": {"requests_per_thread": 10}, "repetitions": 20,
      "execution": {"confirm": 0}, "ab": {"a": "main", "b": "pr"}, "regression": {"threshold_pct": 2}})";
  // 20 pairs, B 4 % slower in each (give or take 0.8 %); pair 6 (B ran first) has A's window
  // taken by a neighbour: a tenth of its figure, and flagged busy-machine.
  std::deque<double> figures;
  for (int i = 0; i < 20; ++i) {
    const double a = i == 5 ? 100 : 1000 + 10 * (i % 3),
                 b = (i == 5 ? 1000 : a) * (0.96 + 0.004 * ((i * 7) % 5 - 2));
    figures.push_back(i % 2 ? b : a);
    figures.push_back(i % 2 ? a : b);
  }
  // One flagged pair of 20 is below the tenth that measures them again: it is left out.
  EXPECT_EQ(night("ab-one-busy", figures, ab, {11}), exit_status::kRegression) << table_;
  EXPECT_EQ(targets_started(), 40u) << "not measured again";
  auto v = read_json_file((dir_ / "ab-one-busy" / "result.json").string())["ab"]["cells"][0];
  EXPECT_EQ(v["verdict"], "regression") << v.dump();
  EXPECT_NEAR(v["change_pct"].get<double>(), -4, 0.3);
  EXPECT_EQ(v["nights"], 19);
  EXPECT_LT(v["mdc_pct"].get<double>(), 3) << v.dump();
  EXPECT_NE(v["reason"].get<std::string>().find("19 pairs (1 left out: other work ran on their CPUs)"),
            std::string::npos)
      << v.dump();
  ASSERT_EQ(v["pairs"].size(), 20u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(v["pairs"][i]["left_out"].get<bool>(), i == 5) << i;
  EXPECT_NE(table_.find("B A, left out"), std::string::npos) << table_;
  // Unflagged, the same pair is judged with the others: it spreads the mean's cell too much to
  // say (regression.ab_estimate "mean"), while the trimmed mean, the default, trims it away.
  std::string mean = ab;
  mean.replace(mean.find(R"("threshold_pct": 2)"), 18, R"("threshold_pct": 2, "ab_estimate": "mean")");
  EXPECT_EQ(night("ab-wild", figures, mean), exit_status::kOk) << table_;
  v = read_json_file((dir_ / "ab-wild" / "result.json").string())["ab"]["cells"][0];
  EXPECT_EQ(v["verdict"], "noise") << v.dump();
  EXPECT_EQ(v["nights"], 20);
  EXPECT_EQ(night("ab-wild-trimmed", figures, ab), exit_status::kRegression) << table_;
  v = read_json_file((dir_ / "ab-wild-trimmed" / "result.json").string())["ab"]["cells"][0];
  EXPECT_EQ(v["verdict"], "regression") << v.dump();
  EXPECT_NEAR(v["change_pct"].get<double>(), -4, 0.5);
}

}  // namespace
}  // namespace loadlab::controller
