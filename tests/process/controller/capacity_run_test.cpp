// A capacity search through `run_scenario` on a fake agent whose server has a known cliff:
// what each step asks the load agent (rate, connections, window, arrivals), the searches in
// result.json, the capacity in the table, the CSV and the report, and the metric `capacity`.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "fake_agent.hpp"
#include "history/history.hpp"
#include "judge/compare.hpp"
#include "load_result_fixture.hpp"
#include "loadlab/proto/json.hpp"
#include "loadlab/shared/json_input.hpp"
#include "run/scenario_run.hpp"

namespace loadlab::controller {
namespace {

namespace fs = std::filesystem;
using fake::FakeAgent;
using fake::LoadStream;
using fake::TargetStream;

// The fake server's cliff: below it every request takes about 1 ms; at and above it the queue
// grows (40 ms) and the rate is not held.
constexpr double kCliff = 3000;

class CapacityRun : public ::testing::Test {
 protected:
  CapacityRun() {
    dir_ = fs::temp_directory_path() / ("loadlab-capacity-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    agent_.on_host_target = [](TargetStream& t) { fake::host_steady_target(t, 40); };
    agent_.on_run_load = [this](LoadStream& l) {
      // The spec, then (a scheduled start: the fake says it is ready, the controller sends the
      // instant) the half-close, at which the step's figures come.
      auto spec = std::make_shared<v1::LoadSpec>();
      l.on_write = [this, spec](const v1::LoadCommand& cmd, LoadStream&) {
        if (!cmd.has_spec() || cmd.spec().endpoint().empty()) return;
        *spec = cmd.spec();
        std::lock_guard lock(mutex_);
        specs_.push_back(*spec);
      };
      l.on_writes_done = [spec](LoadStream& l) {
        if (spec->endpoint().empty()) return;
        const bool held = spec->rate() < kCliff;
        auto r =
            held ? part({900, 1000, 1100}, spec->rate()) : part({30000, 40000, 40000}, 0.8 * spec->rate());
        r.set_rate(spec->rate());
        r.set_achieved_rate(held ? spec->rate() : 0.8 * spec->rate());
        r.set_rate_not_held(!held);
        r.set_latency_corrected(true);
        *r.mutable_latency_uncorrected() = r.latency();  // the server's own queue, not the client's
        l.send(fake::measure_start());
        l.send(fake::load_result(r));
        l.send(fake::load_usage(30));
        l.end();
      };
    };
  }
  ~CapacityRun() override { fs::remove_all(dir_); }

  int run(const std::string& scenario, std::string* table = nullptr) {
    std::ofstream(dir_ / "s.json") << scenario;
    std::ofstream(dir_ / "lab.json")
        << R"({"agents": [{"name": "a", "address": "fake:1", "roles": ["target", "load"]}]})";
    RunOptions o;
    o.scenario_path = (dir_ / "s.json").string();
    o.lab_path = (dir_ / "lab.json").string();
    o.out_dir = (dir_ / "out").string();
    o.history = (dir_ / "history.db").string();
    o.quiet = true;
    o.agent_stubs = [this](const AgentDef&) { return AgentStub{nullptr, agent_.stub()}; };
    o.cancel_calls = fake::canceller({&agent_});
    std::ostringstream out;
    const int status = run_scenario(o, out, nullptr);
    if (table) *table = out.str();
    return status;
  }

  std::string file(const char* name) {
    std::ifstream in(dir_ / "out" / name);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  fs::path dir_;
  FakeAgent agent_{"a"};
  std::mutex mutex_;
  std::vector<v1::LoadSpec> specs_;
};

const char* kSearch = R"({"name": "cap", "targets": [{"name": "b", "builtin": "hello", "server_threads": 1}],
  "matrix": {"arrivals": ["poisson"]}, "load": {"threads": 1, "seed": 3},
  "search": {"slo": {"p99_ms": 10}, "rate": {"min": 100, "max": 12800}, "precision_pct": 2,
             "step_s": 1, "min_requests": 200, "validate_s": 2},
  "repetitions": 2})";

TEST_F(CapacityRun, ASearchFindsTheCliffAndEveryOutputSaysSo) {
  std::string table;
  ASSERT_EQ(run(kSearch, &table), 0) << table;
  auto result = read_json_file((dir_ / "out" / "result.json").string());
  ASSERT_EQ(result["cells"].size(), 1u);
  v1::CellResult cell;
  proto::from_json(result["cells"][0].dump(), &cell);
  ASSERT_TRUE(cell.ok()) << cell.error();
  ASSERT_EQ(cell.searches_size(), 2);  // one search per repetition
  for (const auto& s : cell.searches()) {
    EXPECT_EQ(s.end(), "found") << s.reason();
    EXPECT_LT(s.capacity(), kCliff);
    EXPECT_GT(s.capacity(), kCliff / 1.02);
    EXPECT_EQ(s.slo().at("p99_ms"), 10);
    EXPECT_EQ(s.steps(0).kind(), "ramp");
    EXPECT_EQ(s.steps(0).rate(), 100);
    EXPECT_EQ(s.steps(0).verdict(), "pass");
    EXPECT_EQ(s.steps().rbegin()->kind(), "validate");
    EXPECT_LE(s.steps_size(), 7 + 6 + 4);  // the bound: ceil(log2(128)) + ceil(log2(50)) + 4
  }
  EXPECT_EQ(cell.capacity(), cell.searches(0).capacity());  // the lower median of two
  EXPECT_EQ(cell.repetitions_size(), 2);
  EXPECT_EQ(cell.repetitions(0).capacity(), cell.searches(0).capacity());
  EXPECT_EQ(cell.repetitions(0).rate(), cell.searches(0).capacity());  // the validation's figures

  // What the steps asked of the load agent: Poisson arrivals with the scenario's seed, a window
  // of min_requests / rate at least step_s, connections for the rate at 10 ms before any
  // latency is measured, then for twice the latency last measured.
  std::lock_guard lock(mutex_);
  ASSERT_GT(specs_.size(), 10u);
  EXPECT_EQ(specs_[0].rate(), 100);
  EXPECT_EQ(specs_[0].arrivals(), "poisson");
  EXPECT_EQ(specs_[0].seed(), 3u);
  EXPECT_EQ(specs_[0].duration_s(), 2);  // 200 requests at 100 req/s
  EXPECT_EQ(specs_[0].connections(), 1u);
  EXPECT_EQ(specs_[5].rate(), 3200);
  EXPECT_EQ(specs_[5].duration_s(), 1);  // step_s
  // After a pass at p99 1.1 ms: 3200 req/s × 2.2 ms = 7.04 in flight, plus 3 × sqrt(7.04).
  EXPECT_EQ(specs_[5].connections(), 15u);

  // The table, the CSV, the Markdown and the report carry the capacity.
  EXPECT_NE(table.find("capacity"), std::string::npos) << table;
  EXPECT_NE(table.find("found"), std::string::npos) << table;
  EXPECT_NE(file("matrix.csv").find("capacity,capacity_min,capacity_max,search,"), std::string::npos);
  EXPECT_NE(file("matrix.md").find("## capacity req/s by"), std::string::npos) << file("matrix.md");
  const std::string html = file("report.html");
  EXPECT_NE(html.find("<section id=\"search\">"), std::string::npos);
  EXPECT_NE(html.find("class=\"chart capacity\""), std::string::npos);
  EXPECT_NE(html.find("class=\"found\""), std::string::npos);
}

// The metric `capacity` judges a search's runs as QPS judges others': the history keeps each
// repetition's capacity.
TEST_F(CapacityRun, TheHistoryKeepsEachSearchsCapacity) {
  ASSERT_EQ(run(kSearch), 0);
  auto h = History::open((dir_ / "history.db").string(), History::Mode::kExisting);
  auto series = h.series("cap", "b/poisson", history_metric("capacity"));
  ASSERT_EQ(series.size(), 1u);
  ASSERT_EQ(series[0].values.size(), 2u);
  for (double v : series[0].values) {
    EXPECT_LT(v, kCliff);
    EXPECT_GT(v, kCliff / 1.02);
  }
  EXPECT_TRUE(history_metric("capacity").higher_is_better);
}

}  // namespace
}  // namespace loadlab::controller
