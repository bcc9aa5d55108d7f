// The run folder on a real disk: a new run never overwrites an old one, and a resumed run
// gets back the cells its journal holds, a torn last line aside.
#include "run/run_folder.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "input_error_of.hpp"
#include "judge/verdict_kind.hpp"
#include "loadlab/shared/json_input.hpp"
#include "run/provenance.hpp"
#include "run/result_header.hpp"

namespace loadlab::controller {
namespace {

namespace fs = std::filesystem;

class RunFolderTest : public ::testing::Test {
 protected:
  RunFolderTest() {
    char tmpl[] = "/tmp/loadlab-folder-XXXXXX";
    dir = mkdtemp(tmpl);
    std::ofstream(dir / "s.json") << R"({"name": "s"})";
    cells.resize(2);
    cells[0].target = cells[1].target = "b";
    cells[1].delay_ms = 5;
    cells[0].axes = {{"delay_ms", "0"}, {"threads", "0"}};
    cells[1].axes = {{"delay_ms", "5"}, {"threads", "0"}};
  }
  ~RunFolderTest() override { fs::remove_all(dir); }
  CellResult failed(const Cell& c, const std::string& error) {
    CellResult r;
    r.cell = c;
    r.error = error;
    return r;
  }

  fs::path dir;
  std::vector<Cell> cells;
};

TEST_F(RunFolderTest, AResumedRunGetsBackTheJournalsCellsButATornLastLine) {
  {
    RunFolder folder = RunFolder::create(dir / "run", (dir / "s.json").string());
    auto finished = folder.open_journal(cells);
    EXPECT_FALSE(finished[0] || finished[1]);
    folder.journal(failed(cells[1], "measure: agent lost"));
  }
  std::ofstream(dir / "run" / "journal.jsonl", std::ios::app)
      << R"({"cell": {"key": "b/d0/t0"}, "ok)";  // killed mid-write
  RunFolder resumed = RunFolder::resume(dir / "run");
  EXPECT_EQ(read_json_file(resumed.scenario_path())["name"], "s");
  auto finished = resumed.open_journal(cells);
  EXPECT_FALSE(finished[0].has_value());
  ASSERT_TRUE(finished[1].has_value());
  EXPECT_EQ(finished[1]->error, "measure: agent lost");
  EXPECT_EQ(finished[1]->cell.key(), "b/d5/t0");
  // The torn line is gone: the next cell's line is a line of its own, read by the next resume.
  resumed.journal(failed(cells[0], "ready: refused"));
  RunFolder again = RunFolder::resume(dir / "run");
  auto both = again.open_journal(cells);
  ASSERT_TRUE(both[0].has_value());
  EXPECT_EQ(both[0]->error, "ready: refused");
  ASSERT_TRUE(both[1].has_value());
}

TEST_F(RunFolderTest, AJournalLineThatIsNotACellResultIsAnErrorNamingTheLine) {
  {
    RunFolder folder = RunFolder::create(dir / "run", (dir / "s.json").string());
    folder.open_journal(cells);
    folder.journal(failed(cells[1], "measure: agent lost"));
  }
  // A whole line of another schema (an older loadlab's journal), then a good one.
  std::ofstream(dir / "run" / "journal.jsonl", std::ios::app) << R"({"key": "b/d0/t0", "qps": 1})"
                                                              << "\n";
  RunFolder resumed = RunFolder::resume(dir / "run");
  try {
    resumed.open_journal(cells);
    FAIL() << "a foreign journal line was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("journal.jsonl line 2 is not a loadlab.v1.CellResult"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(RunFolderTest, AJournalLineOfTheWrongJsonTypeIsAnErrorNamingTheLine) {
  for (const char* line :
       {R"({"cell": 5})", "[]", "5", R"({"cell": {"key": []}})", R"({"repetitions": {}})"}) {
    fs::remove_all(dir / "run");
    {
      RunFolder folder = RunFolder::create(dir / "run", (dir / "s.json").string());
      folder.open_journal(cells);
      folder.journal(failed(cells[1], "measure: agent lost"));
    }
    std::ofstream(dir / "run" / "journal.jsonl", std::ios::app) << line << "\n";
    RunFolder resumed = RunFolder::resume(dir / "run");
    std::string e = loadlab::testing::input_error_of([&] { resumed.open_journal(cells); });
    EXPECT_NE(e.find("journal.jsonl line 2 is not a loadlab.v1.CellResult"), std::string::npos)
        << line << ": " << e;
  }
}

TEST_F(RunFolderTest, ANewRunNeverWritesIntoAFolderThatIsNotEmpty) {
  fs::create_directories(dir / "old");
  std::ofstream(dir / "old" / "scenario.json") << R"({"name": "old"})";
  std::string e = loadlab::testing::input_error_of(
      [&] { (void)RunFolder::create(dir / "old", (dir / "s.json").string()); });
  EXPECT_EQ(e.rfind("--out: " + (dir / "old").string() + " already exists and is not empty", 0), 0u) << e;
  EXPECT_NE(e.find("--resume"), std::string::npos) << e;
  EXPECT_EQ(read_json_file((dir / "old" / "scenario.json").string())["name"], "old");  // not overwritten
  fs::create_directories(dir / "empty");
  EXPECT_NO_THROW(RunFolder::create(dir / "empty", (dir / "s.json").string()));  // mktemp -d: fine
  EXPECT_EQ(loadlab::testing::input_error_of([&] { RunFolder::check_free(dir / "s.json"); }),
            "--out: " + (dir / "s.json").string() + " exists and is not a folder");
}

TEST_F(RunFolderTest, ANewRunsFolderStaysInsideRuns) {
  EXPECT_EQ(RunFolder::new_run_path(dir / "runs", "night-1.2_x", "T"), dir / "runs" / "night-1.2_x-T");
  for (auto* name : {"../../x", "a/b", "..", ".hidden", ""})
    EXPECT_EQ(loadlab::testing::input_error_of([&] {
                RunFolder::new_run_path(dir / "runs", name, "T");
              }).rfind("/name: ", 0),
              0u)
        << name;
}

TEST_F(RunFolderTest, ResumeRefusesAScenarioThatChangedSinceTheRunStarted) {
  {
    RunFolder folder = RunFolder::create(dir / "run", (dir / "s.json").string());
    folder.open_journal(cells);
    folder.journal(failed(cells[1], "measure: agent lost"));
    folder.write_results({{RunFolder::kScenarioDigest, folder.scenario_digest()}}, "s", {});
  }
  EXPECT_NO_THROW(RunFolder::resume(dir / "run"));
  const std::string expected = sha256_file((dir / "run" / "scenario.json").string());
  std::ofstream(dir / "run" / "scenario.json") << R"({"name": "s", "edited": true})";
  const std::string found = sha256_file((dir / "run" / "scenario.json").string());
  try {
    RunFolder::resume(dir / "run");
    FAIL() << "an edited scenario was resumed";
  } catch (const InputError& e) {
    EXPECT_EQ(e.path(), "--resume");
    EXPECT_NE(e.message().find("changed since the run started"), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("sha256 is " + found + ", the run was measured with " + expected),
              std::string::npos)
        << e.what();
  }
}

TEST_F(RunFolderTest, ResumeRefusesAResultJsonItCannotReadBack) {
  for (const char* result :
       {R"({"lab_path": 5})", R"({"resumed_at": "yesterday"})", "[]", R"({"run_scenario_sha256": 7})"}) {
    fs::remove_all(dir / "run");
    (void)RunFolder::create(dir / "run", (dir / "s.json").string());
    std::ofstream(dir / "run" / "result.json") << result;
    try {
      RunFolder::resume(dir / "run");
      ADD_FAILURE() << result << " was accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), (dir / "run" / "result.json").string()) << result;
    }
  }
}

TEST_F(RunFolderTest, ANewRunRefusesAFolderThatHoldsARun) {
  fs::create_directories(dir / "old");
  std::ofstream(dir / "old" / "journal.jsonl") << "";
  EXPECT_THROW(RunFolder::create(dir / "old", (dir / "s.json").string()), InputError);
  EXPECT_THROW(RunFolder::resume(dir / "nothing"), InputError);  // no scenario.json to resume
}

TEST_F(RunFolderTest, TheResultFilesHoldTheHeaderAndEveryFinishedCell) {
  RunFolder folder = RunFolder::create(dir / "run", (dir / "s.json").string());
  folder.write_results({{"started_at", "then"}}, "s", {failed(cells[0], "ready: refused")});
  auto result = read_json_file((dir / "run" / "result.json").string());
  EXPECT_EQ(result["started_at"], "then");
  ASSERT_EQ(result["cells"].size(), 1u);
  EXPECT_EQ(result["cells"][0]["error"], "ready: refused");
  EXPECT_TRUE(fs::exists(dir / "run" / "matrix.csv"));
  EXPECT_TRUE(fs::exists(dir / "run" / "matrix.md"));
  EXPECT_FALSE(fs::exists(dir / "run" / "result.json.tmp"));
}

// result.json's header, typed: what a run wrote reads back as the same JSON, a field of another
// loadlab is kept as it was, and a field of the wrong type names itself.
TEST(ResultHeader, WhatARunWroteReadsBackAsTheSameJsonWithFieldsItDoesNotKnowKept) {
  const auto written = nlohmann::json::parse(R"({
    "loadlab_version": "0.1.0", "scenario_path": "s.json", "scenario_file": {"path": "s.json"},
    "scenario_files": [{"path": "s.json"}], "scenario": {"name": "s"}, "overrides": ["load.duration_s=1"],
    "lab_path": "", "started_at": "2026-12-06T01:00:00Z", "finished_at": "2026-12-06T01:05:00Z",
    "resumed_at": ["2026-12-06T01:02:00Z"], "run_scenario_sha256": "ab12", "schema_version": 1,
    "agents": [{"name": "embedded"}], "a_newer_field": {"x": 1},
    "verdicts": {"method": "history", "baseline": "h.db", "metric": "qps", "threshold_pct": 5,
                 "false_alarm_pct": 1, "cell_level": 0.01, "regressions": 1, "failed": 0,
                 "cells": [{"key": "b/d0", "verdict": "regression", "reason": "slower", "value": 90,
                            "baseline": 100, "change_pct": -10, "nights": 7, "suspect": true}]},
    "trends": {"metric": "qps", "cells": {"b/d0": [["2026-12-05T01:00:00Z", "abc", 100.5]]}}})");
  const ResultHeader h = ResultHeader::from_json(written);
  ASSERT_TRUE(h.verdicts);
  EXPECT_EQ(verdict_of(h.verdicts->cells(0)), Verdict::kRegression);
  EXPECT_FALSE(h.verdicts->cells(0).has_mdc_pct()) << "no value stays no value";
  ASSERT_TRUE(h.trends);
  EXPECT_EQ(h.trends->by_key.at("b/d0").at(0).value, 100.5);
  EXPECT_FALSE(h.ab);
  nlohmann::json back = h.to_json();
  // The proto's JSON writes every field at its default too: compare what was written.
  for (auto& [key, value] : written.items())
    if (key != "verdicts") EXPECT_EQ(back[key], value) << key;
  EXPECT_EQ(back["verdicts"]["cells"][0]["verdict"], "regression");
  EXPECT_EQ(back["verdicts"]["cells"][0]["change_pct"], -10);
  EXPECT_FALSE(back["verdicts"]["cells"][0].contains("mdc_pct"));
  EXPECT_FALSE(back.contains("ab"));
  EXPECT_EQ(ResultHeader::from_json(nullptr).to_json().count("finished_at"), 0u)
      << "a new run has not finished";
  auto wrong = written;
  wrong["resumed_at"] = "yesterday";
  const std::string error = loadlab::testing::input_error_of([&] { ResultHeader::from_json(wrong); });
  EXPECT_NE(error.find("/resumed_at"), std::string::npos) << error;
}

}  // namespace
}  // namespace loadlab::controller
