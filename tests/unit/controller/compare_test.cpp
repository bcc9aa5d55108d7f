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

}  // namespace
}  // namespace loadlab::controller
