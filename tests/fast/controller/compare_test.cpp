#include "judge/compare.hpp"

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

const v1::CellVerdict& cell(const v1::Verdicts& v, const std::string& key) {
  for (auto& c : v.cells())
    if (c.key() == key) return c;
  throw std::runtime_error("no cell " + key);
}

RegressionDef metric(const std::string& name, double threshold_pct) {
  RegressionDef r;
  r.metric = name;
  r.threshold_pct = threshold_pct;
  return r;
}

TEST(Compare, ADropBeyondTheThresholdThatTheRepetitionsShowIsARegression) {
  auto v =
      compare_results(result({{"a", {1000, 1010, 990}}}), result({{"a", {900, 905, 895}}}), metric("qps", 5));
  EXPECT_EQ(cell(v, "a").verdict(), "regression") << cell(v, "a").reason();
  EXPECT_NEAR(cell(v, "a").change_pct(), -10.0, 1e-9);
  EXPECT_EQ(v.regressions(), 1u);
  EXPECT_EQ(v.method(), "two runs");
  EXPECT_NE(v.note().find("may be a slow night"), std::string::npos) << "says how little two runs show";
  EXPECT_TRUE(cell(v, "a").has_mdc_pct());
  EXPECT_GE(cell(v, "a").mdc_pct(), 5.0);
}

TEST(Compare, ChangesWithinTheThresholdAreTheSame) {
  auto v = compare_results(result({{"a", {1000, 1001}}}), result({{"a", {970, 971}}}), metric("qps", 5));
  EXPECT_EQ(cell(v, "a").verdict(), "same");
  EXPECT_EQ(v.regressions(), 0u);
}

TEST(Compare, OneRepetitionASideShowsNoSpreadAndIsInconclusiveBeyondTheThreshold) {
  auto v = compare_results(result({{"a", {1000}}}), result({{"a", {700}}}), metric("qps", 5));
  EXPECT_EQ(cell(v, "a").verdict(), "inconclusive");
  EXPECT_EQ(v.regressions(), 0u);
  v = compare_results(result({{"a", {1000}}}), result({{"a", {970}}}), metric("qps", 5));
  EXPECT_EQ(cell(v, "a").verdict(), "same");
}

TEST(Compare, RepetitionsThatSpreadWidelyAreNoise) {
  // Medians 10 % apart, but the runs' repetitions disagree too much to show it.
  auto v = compare_results(result({{"a", {1000, 700, 1100}}}), result({{"a", {900, 800, 1050}}}),
                           metric("qps", 5));
  EXPECT_EQ(cell(v, "a").verdict(), "noise");
  EXPECT_EQ(v.regressions(), 0u);
}

TEST(Compare, LowerIsBetterForLatencyAndAnImprovementIsNoRegression) {
  // qps up 25 % → p99 (1e6 / qps) down 20 %.
  auto v = compare_results(result({{"a", {1000, 1001, 999}}}), result({{"a", {1250, 1251, 1249}}}),
                           metric("p99_ms", 5));
  EXPECT_EQ(cell(v, "a").verdict(), "improvement");
  v = compare_results(result({{"a", {1250, 1251, 1249}}}), result({{"a", {1000, 1001, 999}}}),
                      metric("p99_ms", 5));
  EXPECT_EQ(cell(v, "a").verdict(), "regression");
}

TEST(Compare, FailedAndMissingCellsAreFailuresNotRegressionsNewOnesNeither) {
  auto current = result({{"b", {1}}}, false);
  current["cells"].push_back(result({{"c", {5}}})["cells"][0]);
  auto v = compare_results(result({{"a", {1000}}, {"b", {1000}}}), current, metric("qps", 5));
  EXPECT_EQ(cell(v, "a").verdict(), "missing");
  EXPECT_EQ(cell(v, "b").verdict(), "failed");
  EXPECT_EQ(cell(v, "c").verdict(), "new");
  EXPECT_EQ(v.regressions(), 0u);
  EXPECT_EQ(v.failed(), 2u);
}

TEST(Compare, AConfirmationThatDoesNotShowTheChangeMakesItNoise) {
  auto now = result({{"a", {900, 905, 895}}});
  for (double q : {1000.0, 1004.0, 997.0}) {
    nlohmann::json r;
    r["qps"] = q;
    now["cells"][0]["confirmations"].push_back(r);
  }
  auto v = compare_results(result({{"a", {1000, 1010, 990}}}), now, metric("qps", 5));
  EXPECT_EQ(cell(v, "a").verdict(), "noise") << cell(v, "a").reason();
  EXPECT_TRUE(cell(v, "a").suspect());
  EXPECT_NEAR(cell(v, "a").confirm_value(), 1000, 1e-9);
}

TEST(Compare, RunsOfAnotherScenarioOrMatrixCannotBeComparedAndSaySo) {
  auto named = [](nlohmann::json r, const std::string& name) {
    r["scenario"] = {{"name", name}};
    return r;
  };
  auto reason = [](const nlohmann::json& a, const nlohmann::json& b) {
    try {
      compare_results(a, b, metric("qps", 5));
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

TEST(Compare, PerSecondIntervalsAreNotTheEvidence) {
  // Seconds of one window are correlated: ten tight seconds a repetition say nothing about how
  // the repetitions (and nights) spread. Here the repetitions spread widely.
  auto with_seconds = [](std::vector<double> reps) {
    v1::CellResult c;
    c.mutable_cell()->set_key("a");
    c.set_ok(true);
    for (double level : reps) {
      auto* r = c.add_repetitions();
      r->set_qps(level);
      for (int s = 0; s < 10; ++s) r->add_intervals()->set_qps(level + (s - 5) * 0.1);
    }
    return nlohmann::json{{"cells", {nlohmann::json::parse(proto::to_json(c))}}};
  };
  auto v = compare_results(with_seconds({1000, 800, 1150}), with_seconds({900, 760, 1040}), metric("qps", 5));
  EXPECT_EQ(cell(v, "a").verdict(), "noise");
}

TEST(Compare, BadMetricOrDocumentIsAnInputError) {
  EXPECT_THROW(compare_results(result({}), result({}), metric("rps", 5)), InputError);
  EXPECT_THROW(compare_results(nlohmann::json::object(), result({}), metric("qps", 5)), InputError);
  // A cell of another schema (e.g. an older loadlab's flat figures) names its index.
  auto old = nlohmann::json::parse(R"({"cells": [{"key": "a", "ok": true, "qps": 1000}]})");
  try {
    compare_results(old, result({{"a", {1000}}}), metric("qps", 5));
    FAIL() << "a foreign cell was read";
  } catch (const InputError& e) {
    EXPECT_EQ(e.path(), "/cells/0");
  }
}

TEST(Compare, TheScenarioCanSetTheMetricAndThreshold) {
  nlohmann::json r = {{"scenario",
                       {{"regression",
                         {{"metric", "p99_ms"},
                          {"threshold_pct", 2.5},
                          {"false_alarm_pct", 0.5},
                          {"baseline_nights", 20}}}}}};
  auto o = regression_of_result(r);
  EXPECT_EQ(o.metric, "p99_ms");
  EXPECT_DOUBLE_EQ(o.threshold_pct, 2.5);
  EXPECT_DOUBLE_EQ(o.false_alarm_pct, 0.5);
  EXPECT_EQ(o.baseline_nights, 20u);
}

TEST(Compare, AHostileRegressionInAResultIsAnInputErrorNamingItsPath) {
  auto error_of = [](const char* text) {
    try {
      regression_of_result(nlohmann::json::parse(text));
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
