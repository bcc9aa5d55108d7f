#include "loadlab/controller/compare.hpp"

#include <gtest/gtest.h>

#include "loadlab/proto/json.hpp"
#include "loadlab/shared/json_input.hpp"
#include "loadlab/v1/result.pb.h"

namespace loadlab::controller {
namespace {

// A result.json with one cell per (key, qps repetitions), each printed as the proto is.
nlohmann::json result(std::vector<std::pair<std::string, std::vector<double>>> cells, bool ok = true) {
  nlohmann::json j = {{"cells", nlohmann::json::array()}};
  for (auto& [key, qps] : cells) {
    v1::CellResult c;
    c.mutable_cell()->set_key(key);
    c.set_ok(ok);
    for (double q : qps) {
      auto* r = c.add_repetitions();
      r->set_qps(q);
      r->mutable_latency()->set_p99_us(1e6 / q);
    }
    j["cells"].push_back(nlohmann::json::parse(proto::to_json(c)));
  }
  return j;
}

const CellDelta& cell(const Comparison& c, const std::string& key) {
  for (auto& d : c.cells)
    if (d.key == key) return d;
  throw std::runtime_error("no cell " + key);
}

TEST(Compare, ADropBeyondTheThresholdWithSeparateRangesIsARegression) {
  auto c = compare_results(result({{"a", {1000, 1010, 990}}}), result({{"a", {900, 905, 895}}}), {"qps", 5});
  EXPECT_EQ(cell(c, "a").verdict, "regression");
  EXPECT_NEAR(cell(c, "a").change_pct, -10.0, 1e-9);
  EXPECT_EQ(c.regressions, 1u);
}

TEST(Compare, ChangesWithinTheThresholdAreTheSame) {
  auto c = compare_results(result({{"a", {1000}}}), result({{"a", {970}}}), {"qps", 5});
  EXPECT_EQ(cell(c, "a").verdict, "same");
  EXPECT_EQ(c.regressions, 0u);
}

TEST(Compare, OverlappingRepetitionRangesAreNoise) {
  // Medians 10 % apart, but the runs' ranges overlap: the repetitions disagree too much.
  auto c = compare_results(result({{"a", {1000, 700, 1100}}}), result({{"a", {900, 800, 1050}}}), {"qps", 5});
  EXPECT_EQ(cell(c, "a").verdict, "noise");
  EXPECT_EQ(c.regressions, 0u);
}

TEST(Compare, LowerIsBetterForLatencyAndAnImprovementIsNoRegression) {
  // qps up 25 % → p99 (1e6 / qps) down 20 %.
  auto c = compare_results(result({{"a", {1000}}}), result({{"a", {1250}}}), {"p99_ms", 5});
  EXPECT_EQ(cell(c, "a").verdict, "improvement");
  c = compare_results(result({{"a", {1250}}}), result({{"a", {1000}}}), {"p99_ms", 5});
  EXPECT_EQ(cell(c, "a").verdict, "regression");
}

TEST(Compare, FailedAndMissingCellsCountAsRegressionsNewOnesDoNot) {
  auto current = result({{"b", {1}}}, false);
  current["cells"].push_back(result({{"c", {5}}})["cells"][0]);
  auto c = compare_results(result({{"a", {1000}}, {"b", {1000}}}), current, {"qps", 5});
  EXPECT_EQ(cell(c, "a").verdict, "missing");
  EXPECT_EQ(cell(c, "b").verdict, "failed");
  EXPECT_EQ(cell(c, "c").verdict, "new");
  EXPECT_EQ(c.regressions, 2u);
}

TEST(Compare, RunsOfAnotherScenarioOrMatrixCannotBeComparedAndSaySo) {
  auto named = [](nlohmann::json r, const std::string& name) {
    r["scenario"] = {{"name", name}};
    return r;
  };
  auto reason = [](const nlohmann::json& a, const nlohmann::json& b) {
    try {
      compare_results(a, b, {"qps", 5});
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(
      reason(named(result({{"a", {1000}}}), "nightly"), named(result({{"a", {1000}}}), "other")),
      "/scenario/name: BASE ran scenario \"nightly\" and NEW \"other\": runs of different scenarios cannot "
      "be compared");
  auto with_axes = [&](std::vector<std::string> axes) {
    auto r = result({{"a", {1000}}});
    for (auto& a : axes) r["cells"][0]["cell"]["axes"].push_back({{"axis", a}, {"value", "1"}});
    return r;
  };
  EXPECT_EQ(
      reason(with_axes({"delay_ms", "threads"}), with_axes({"threads", "delay_ms"})),
      "/cells: BASE's matrix has the axes [delay_ms, threads], NEW's [threads, delay_ms]: their cells are "
      "not the same cells");
  EXPECT_EQ(reason(with_axes({"delay_ms"}), with_axes({"delay_ms"})), "");
}

TEST(Compare, PerSecondSamplesDecideQpsWithTheTest) {
  // Three repetitions a side cannot reach the test's level; their seconds can.
  auto with_seconds = [](double level, double step) {
    v1::CellResult c;
    c.mutable_cell()->set_key("a");
    c.set_ok(true);
    for (int rep = 0; rep < 3; ++rep) {
      auto* r = c.add_repetitions();
      r->set_qps(level);
      for (int s = 0; s < 10; ++s) r->add_intervals()->set_qps(level + step * (s - 5));
    }
    return nlohmann::json{{"cells", {nlohmann::json::parse(proto::to_json(c))}}};
  };
  auto c = compare_results(with_seconds(1000, 2), with_seconds(900, 2), {"qps", 5});
  EXPECT_EQ(cell(c, "a").verdict, "regression");
  EXPECT_EQ(cell(c, "a").method, "mann-whitney");
  c = compare_results(with_seconds(1000, 2), with_seconds(990, 2), {"qps", 5});
  EXPECT_EQ(cell(c, "a").verdict, "same");
}

TEST(Compare, BadMetricOrDocumentIsAnInputError) {
  EXPECT_THROW(compare_results(result({}), result({}), {"rps", 5}), InputError);
  EXPECT_THROW(compare_results(nlohmann::json::object(), result({}), {"qps", 5}), InputError);
  // A cell of another schema (e.g. an older loadlab's flat figures) names its index.
  auto old = nlohmann::json::parse(R"({"cells": [{"key": "a", "ok": true, "qps": 1000}]})");
  try {
    compare_results(old, result({{"a", {1000}}}), {"qps", 5});
    FAIL() << "a foreign cell was read";
  } catch (const InputError& e) {
    EXPECT_EQ(e.path(), "/cells/0");
  }
}

TEST(Compare, TheScenarioCanSetTheMetricAndThreshold) {
  nlohmann::json r = {{"scenario", {{"regression", {{"metric", "p99_ms"}, {"threshold_pct", 2.5}}}}}};
  auto o = options_from_result(r);
  EXPECT_EQ(o.metric, "p99_ms");
  EXPECT_DOUBLE_EQ(o.threshold_pct, 2.5);
}

TEST(Compare, AHostileRegressionInAResultIsAnInputErrorNamingItsPath) {
  auto error_of = [](const char* text) {
    try {
      options_from_result(nlohmann::json::parse(text));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error_of(R"({"scenario": {"regression": {"metric": 5}}})"),
            "/scenario/regression/metric: must be a string, got a number");
  EXPECT_EQ(error_of(R"({"scenario": {"regression": {"threshold_pct": "5"}}})"),
            "/scenario/regression/threshold_pct: must be a number in [0, 1000]");
  EXPECT_EQ(error_of(R"({"scenario": {"regression": []}})"),
            "/scenario/regression: must be an object, got an array");
  EXPECT_EQ(error_of(R"({"scenario": []})"), "");  // no regression: the defaults
  EXPECT_EQ(error_of("[]"), "");
}

}  // namespace
}  // namespace loadlab::controller
