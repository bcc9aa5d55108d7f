#include "scenario/scenario.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <string>

#include "loadlab/shared/json_input.hpp"
#include "scenario/plan.hpp"

namespace loadlab::controller {
namespace {

const char* kGood = R"({
  "name": "hello-matrix",
  "targets": [{"name": "beast", "builtin": "hello", "body": "Have Fun ~ Tester !"},
              {"name": "go", "catalog": "go-nethttp", "server_threads": 4}],
  "matrix": {"delay_ms": [0, 5, 10], "threads": [1, 5, 10, 20]},
  "load": {"requests_per_thread": 10000, "connections_per_thread": 2, "warmup_s": 1,
           "path": "/test/fun", "keep_alive": true, "headers": {"X-A": "b"}, "timeout_ms": 2000},
  "repetitions": 3
})";

// A scenario file for the duration of a test.
struct TempFile {
  explicit TempFile(const std::string& text) {
    char tmpl[] = "/tmp/loadlab-scenario-XXXXXX";
    int fd = mkstemp(tmpl);
    path = tmpl;
    if (fd >= 0) close(fd);
    std::ofstream(path) << text;
  }
  ~TempFile() { std::remove(path.c_str()); }
  std::string path;
};

// The error message of parsing `text`, or "" if it parsed.
std::string error_of(const std::string& text) {
  try {
    (void)parse_scenario(nlohmann::json::parse(text));
    return "";
  } catch (const InputError& e) {
    return e.what();
  }
}

std::string with(const std::string& from, const std::string& to) {
  std::string s = kGood;
  auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

TEST(Scenario, ParsesAGoodFile) {
  auto s = parse_scenario(nlohmann::json::parse(kGood));
  EXPECT_EQ(s.name, "hello-matrix");
  ASSERT_EQ(s.targets.size(), 2u);
  EXPECT_EQ(s.targets[0].builtin, "hello");
  EXPECT_EQ(s.targets[0].body, "Have Fun ~ Tester !");
  EXPECT_EQ(s.targets[1].catalog, "go-nethttp");
  EXPECT_EQ(s.targets[1].server_threads, 4u);
  ASSERT_EQ(s.matrix.size(), 2u);
  EXPECT_EQ(s.matrix[0].name, "delay_ms");
  EXPECT_EQ(s.matrix[0].texts, (std::vector<std::string>{"0", "5", "10"}));
  EXPECT_EQ(s.matrix[1].name, "threads");
  EXPECT_EQ(s.matrix[1].texts, (std::vector<std::string>{"1", "5", "10", "20"}));
  EXPECT_EQ(s.load.requests_per_thread, 10000u);
  EXPECT_FALSE(s.load.duration_s);
  EXPECT_EQ(s.load.connections_per_thread, 2u);
  EXPECT_DOUBLE_EQ(s.load.warmup_s, 1.0);
  EXPECT_EQ(s.load.path, "/test/fun");
  EXPECT_EQ(s.load.timeout_ms, 2000u);
  ASSERT_EQ(s.load.headers.size(), 1u);
  EXPECT_EQ(s.repetitions, 3u);
}

TEST(Scenario, TheDemoScenarioIsValid) {
  auto s = load_scenario_file(std::string(LOADLAB_SOURCE_DIR) + "/scenarios/demo.json");
  ASSERT_EQ(s.matrix.size(), 2u);
  EXPECT_EQ(s.matrix[0].texts, (std::vector<std::string>{"0", "5", "10"}));
  EXPECT_EQ(s.matrix[1].texts, (std::vector<std::string>{"1", "5", "10", "20"}));
}

TEST(Scenario, UnknownKeysAreErrorsNamingTheirPath) {
  EXPECT_EQ(error_of(with(R"("repetitions": 3)", R"("repetitions": 3, "repetition": 3)")),
            "/repetition: unknown key; allowed here: name, description, targets, matrix, load, repetitions, "
            "placement, execution, regression, ab, search, instructions, profile");
  EXPECT_EQ(
      error_of(with(R"("threads": [1, 5, 10, 20])", R"("threads": [1], "thread": [2])")),
      "/matrix/thread: unknown axis; allowed: delay_ms, threads, connections_per_thread, connections, rate, "
      "body_size, server_threads, keep_alive, client, protocol, tls_version, streams, arrivals, "
      "pace_granularity_us");
  EXPECT_EQ(error_of(with(R"("keep_alive": true)", R"("keepalive": true)")).substr(0, 33),
            "/load/keepalive: unknown key; all");
  EXPECT_EQ(error_of(with(R"("builtin": "hello")", R"("builtin": "hello", "bdy": "x")")).substr(0, 20),
            "/targets/0/bdy: unkn");
}

TEST(Scenario, WrongTypesAreErrorsNamingTheirPath) {
  EXPECT_EQ(error_of(with("[1, 5, 10, 20]", R"([1, 5, "10", 20])")),
            "/matrix/threads/2: must be an integer in 1..1024");
  EXPECT_EQ(error_of(with("[1, 5, 10, 20]", "[1, 0]")), "/matrix/threads/1: must be an integer in 1..1024");
  EXPECT_EQ(error_of(with("[1, 5, 10, 20]", "[1, 5, 1]")), "/matrix/threads/2: duplicate value 1");
  EXPECT_EQ(error_of(with(R"("keep_alive": true)", R"("keep_alive": "yes")")),
            "/load/keep_alive: must be true or false, got a string");
  EXPECT_EQ(error_of(with(R"("repetitions": 3)", R"("repetitions": 2.5)")),
            "/repetitions: must be an integer in 1..100");
  EXPECT_EQ(error_of(with(R"("name": "hello-matrix")", R"("name": 7)")),
            "/name: must be a string, got a number");
  EXPECT_EQ(error_of(with(R"("warmup_s": 1)", R"("warmup_s": -1)")),
            "/load/warmup_s: must be a number in [0, 3600]");
}

TEST(Scenario, TheNameIsAFileNameThatStaysInsideRuns) {
  for (auto* bad : {"../../x", "a/b", ".hidden", "..", "", "with space", "nul\\u0000"}) {
    std::string e = error_of(with(R"("name": "hello-matrix")", std::string(R"("name": ")") + bad + "\""));
    EXPECT_EQ(e.rfind("/name: must be 1..100 letters, digits, '.', '_' or '-', not starting with '.'", 0), 0u)
        << bad << ": " << e;
  }
  EXPECT_NE(error_of(with(R"("name": "hello-matrix")", R"("name": ")" + std::string(101, 'a') + "\"")), "");
  EXPECT_EQ(error_of(with(R"("name": "hello-matrix")", R"("name": "v1.2_night-run")")), "");
}

TEST(Scenario, EmptyMatrixIsAnError) {
  EXPECT_EQ(error_of(with("[0, 5, 10]", "[]")),
            "/matrix/delay_ms: must be a non-empty array of integers in 0..60000");
  EXPECT_EQ(error_of(with("[1, 5, 10, 20]", "[]")),
            "/matrix/threads: must be a non-empty array of integers in 1..1024");
  EXPECT_NE(error_of(with(R"("matrix": {"delay_ms": [0, 5, 10], "threads": [1, 5, 10, 20]},)", ""))
                .find("/matrix: is required"),
            std::string::npos);
}

TEST(Scenario, TargetsMustBeWellFormed) {
  EXPECT_EQ(error_of(with(R"("builtin": "hello")", R"("builtin": "nginx")")),
            "/targets/0/builtin: unknown built-in target \"nginx\"; allowed: hello");
  EXPECT_EQ(error_of(with(R"("catalog": "go-nethttp")", R"("catalog": "go", "builtin": "hello")")),
            "/targets/1/builtin: exactly one of \"builtin\" or \"catalog\" is required");
  EXPECT_EQ(error_of(with(R"("name": "go")", R"("name": "beast")")),
            "/targets/1/name: duplicate target name \"beast\"");
}

TEST(Scenario, LoadNeedsExactlyOneStopCondition) {
  EXPECT_EQ(
      error_of(with(R"("requests_per_thread": 10000)", R"("requests_per_thread": 10000, "duration_s": 5)")),
      "/load: exactly one of requests_per_thread, total_requests or duration_s is required");
  EXPECT_EQ(error_of(with(R"("requests_per_thread": 10000,)", "")),
            "/load: exactly one of requests_per_thread, total_requests or duration_s is required");
  EXPECT_EQ(
      error_of(with(R"("requests_per_thread": 10000)", R"("total_requests": 10)")),
      "/load/total_requests: must be at least the largest thread count (20 threads at /matrix/threads/3)");
}

TEST(Scenario, RateMustSuitEveryThreadCount) {
  // 0.01 req/s over 20 threads is 0.0005 per thread: below the worker's range.
  EXPECT_EQ(error_of(with(R"("timeout_ms": 2000)", R"("timeout_ms": 2000, "rate": 0.01)")),
            "/load/rate: must be 0.001..1e+07 requests per second per thread (0.02..2e+08 at 20 threads), "
            "/matrix/threads/3");
  EXPECT_EQ(error_of(with(R"("timeout_ms": 2000)", R"("timeout_ms": 2000, "rate": 2e7)")),
            "/load/rate: must be 0.001..1e+07 requests per second per thread (0.001..1e+07 at 1 threads), "
            "/matrix/threads/0");
  EXPECT_EQ(error_of(with(R"("timeout_ms": 2000)", R"("timeout_ms": 2000, "rate": 1e-300)")),
            "/load/rate: must be a number in [0.001, 1e+12]");
  EXPECT_EQ(error_of(with(R"("timeout_ms": 2000)", R"("timeout_ms": 2000, "rate": 20)")), "");
}

TEST(Scenario, ValuesThatWouldBreakTheRequestAreRejected) {
  EXPECT_EQ(error_of(with(R"("path": "/test/fun")", R"("path": "test")")),
            "/load/path: must start with '/' and hold no spaces or line breaks");
  EXPECT_EQ(error_of(with(R"("X-A": "b")", R"("X-A": "b\r\nInjected: 1")")),
            "/load/headers/X-A: must not contain line breaks");
  // One header by two names: a client sends both over HTTP/1.1 and one as :authority over
  // h2/h3, so a check of the first would let the other through.
  EXPECT_EQ(error_of(with(R"("X-A": "b")", R"("Host": "a", "hOST": "b")")),
            "/load/headers/hOST: names the same header as /load/headers/Host (header names are compared "
            "ignoring case: give it once)");
}

TEST(Scenario, RetryBackoffIsANumberOfSecondsWithARange) {
  EXPECT_DOUBLE_EQ(parse_scenario(nlohmann::json::parse(kGood)).execution.retry_backoff_s, 1.0);
  auto with_backoff = [](const std::string& v) {
    return with(R"("repetitions": 3)",
                R"("repetitions": 3, "execution": {"retries": 4, "retry_backoff_s": )" + v + "}");
  };
  auto s = parse_scenario(nlohmann::json::parse(with_backoff("2.5")));
  EXPECT_DOUBLE_EQ(s.execution.retry_backoff_s, 2.5);
  EXPECT_EQ(s.execution.retries, 4u);
  EXPECT_DOUBLE_EQ(parse_scenario(nlohmann::json::parse(with_backoff("0"))).execution.retry_backoff_s, 0.0);
  EXPECT_EQ(error_of(with_backoff("-1")), "/execution/retry_backoff_s: must be a number in [0, 300]");
  EXPECT_EQ(error_of(with_backoff("301")), "/execution/retry_backoff_s: must be a number in [0, 300]");
  EXPECT_EQ(error_of(with_backoff("\"1s\"")), "/execution/retry_backoff_s: must be a number in [0, 300]");
  EXPECT_EQ(error_of(with(R"("repetitions": 3)", R"("repetitions": 3, "execution": {"retry_backof_s": 1})")),
            "/execution/retry_backof_s: unknown key; allowed here: retries, retry_backoff_s, cooldown_s, "
            "shuffle_seed, deadlines, confirm, remeasure_disturbed, remeasure_wait_s, max_skew_ms");
  // A disturbed cell is measured again up to 3 times by default, the second after 30 s.
  EXPECT_EQ(s.execution.remeasure_disturbed, 3u);
  EXPECT_DOUBLE_EQ(s.execution.remeasure_wait_s, 30.0);
  auto remeasure = [&](const std::string& v) {
    return with(R"("repetitions": 3)", R"("repetitions": 3, "execution": {)" + v + "}");
  };
  auto r =
      parse_scenario(nlohmann::json::parse(remeasure(R"("remeasure_disturbed": 0, "remeasure_wait_s": 5)")));
  EXPECT_EQ(r.execution.remeasure_disturbed, 0u);
  EXPECT_DOUBLE_EQ(r.execution.remeasure_wait_s, 5.0);
  EXPECT_EQ(error_of(remeasure(R"("remeasure_disturbed": 11)")),
            "/execution/remeasure_disturbed: must be an integer in 0..10");
  EXPECT_EQ(error_of(remeasure(R"("remeasure_disturbed": true)")),
            "/execution/remeasure_disturbed: must be an integer in 0..10");
  EXPECT_EQ(error_of(remeasure(R"("remeasure_wait_s": -1)")),
            "/execution/remeasure_wait_s: must be a number in [0, 3600]");
}

// "instructions": the cells that count their instructions per request and how; a bad value
// names its path and what is allowed.
TEST(Scenario, InstructionsNameTheirCellsAndMethod) {
  auto with_instructions = [](const std::string& def) {
    return with("\"repetitions\": 3", "\"repetitions\": 3, \"instructions\": " + def);
  };
  auto s = parse_scenario(nlohmann::json::parse(with_instructions(R"({"cells": ["beast/d5/t10"]})")));
  ASSERT_TRUE(s.instructions);
  EXPECT_EQ(s.instructions->method, InstructionsMethod::kCallgrind);
  EXPECT_EQ(s.instructions->requests_low, 200u);
  EXPECT_EQ(s.instructions->requests_high, 1200u);
  size_t counted = 0;
  for (auto& c : expand(s)) {
    EXPECT_EQ(c.instructions,
              c.key() == "beast/d5/t10" ? std::optional(InstructionsMethod::kCallgrind) : std::nullopt)
        << c.key();
    counted += c.instructions.has_value();
  }
  EXPECT_EQ(counted, 1u);
  s = parse_scenario(
      nlohmann::json::parse(with_instructions(R"({"method": "counters", "requests": [10, 20]})")));
  for (auto& c : expand(s)) EXPECT_EQ(c.instructions, InstructionsMethod::kCounters);
  EXPECT_EQ(error_of(with_instructions(R"({"method": "perf"})")),
            "/instructions/method: must be \"callgrind\" or \"counters\", got \"perf\"");
  EXPECT_EQ(
      error_of(with_instructions(R"({"requests": [200, 200]})")),
      "/instructions/requests: must be [LOW, HIGH], integers with 1 <= LOW < HIGH <= 1000000, got [200,200]");
  EXPECT_EQ(
      error_of(with_instructions(R"({"cells": ["beast/d7/t1"]})")),
      "/instructions/cells/0: no cell \"beast/d7/t1\" in this scenario; its cells are like \"beast/d0/t1\"");
  EXPECT_EQ(error_of(with_instructions(R"({"count": 1})")).rfind("/instructions/count: ", 0), 0u);
}

// "profile": the cells sampled with perf (every cell when it names none) and how; the
// settings become each profiled cell's, an A/B's A cell goes with its B partner, and a bad
// value is an error naming its path.
TEST(Scenario, ProfileNamesItsCellsAndItsSettings) {
  auto with_profile = [](const std::string& def) {
    return with("\"repetitions\": 3", "\"repetitions\": 3, \"profile\": " + def);
  };
  auto s = parse_scenario(nlohmann::json::parse(with_profile("{}")));
  ASSERT_TRUE(s.profile);
  for (auto& c : expand(s)) {
    ASSERT_TRUE(c.profile) << c.key();
    EXPECT_EQ(c.profile->frequency_hz, 999u);
    EXPECT_EQ(c.profile->call_graph, "fp");
  }
  s = parse_scenario(nlohmann::json::parse(
      with_profile(R"({"frequency_hz": 99, "call_graph": "dwarf", "cells": ["beast/d5/t10"]})")));
  size_t profiled = 0;
  for (auto& c : expand(s)) {
    EXPECT_EQ(c.profile.has_value(), c.key() == "beast/d5/t10") << c.key();
    if (c.profile) EXPECT_EQ(c.profile->frequency_hz, 99u);
    if (c.profile) EXPECT_EQ(c.profile->call_graph, "dwarf");
    profiled += c.profile.has_value();
  }
  EXPECT_EQ(profiled, 1u);
  // --profile: every cell, the scenario's settings kept.
  TempFile file(with_profile(R"({"frequency_hz": 99, "cells": ["beast/d5/t10"]})"));
  s = load_scenario_file(file.path, {"profile.cells=null"});
  for (auto& c : expand(s)) EXPECT_TRUE(c.profile && c.profile->frequency_hz == 99u) << c.key();
  // A/B: the A partner of a listed B cell is profiled too.
  s = parse_scenario(
      nlohmann::json::parse(with_profile(R"({"cells": ["go/d5/t10"]}, "ab": {"a": "beast", "b": "go"})")));
  for (auto& c : expand(s))
    EXPECT_EQ(c.profile.has_value(), c.key() == "go/d5/t10" || c.key() == "beast/d5/t10") << c.key();
  s = parse_scenario(
      nlohmann::json::parse(with_profile(R"({"cells": ["beast/d0/t1"]}, "ab": {"a": "beast", "b": "go"})")));
  for (auto& c : expand(s))
    EXPECT_EQ(c.profile.has_value(), c.key() == "go/d0/t1" || c.key() == "beast/d0/t1") << c.key();

  EXPECT_EQ(
      error_of(with_profile(R"({"call_graph": "lbr"})")),
      "/profile/call_graph: must be \"auto\" (a probe chooses), \"fp\" (frame pointers) or \"dwarf\" (debug "
      "information), got \"lbr\"");
  EXPECT_EQ(error_of(with_profile(R"({"frequency_hz": 0})")).rfind("/profile/frequency_hz: ", 0), 0u);
  EXPECT_EQ(error_of(with_profile(R"({"frequency_hz": 10001})")).rfind("/profile/frequency_hz: ", 0), 0u);
  EXPECT_EQ(error_of(with_profile(R"({"cells": ["beast/d7/t1"]})")),
            "/profile/cells/0: no cell \"beast/d7/t1\" in this scenario; its cells are like \"beast/d0/t1\"");
  EXPECT_EQ(error_of(with_profile(R"({"cells": []})")),
            "/profile/cells: must be a non-empty array of cell keys (as the matrix shows them)");
  EXPECT_EQ(error_of(with_profile(R"({"sides": ["server"]})")).rfind("/profile/sides: unknown key", 0), 0u);
}

TEST(Scenario, FileErrorsAreInputErrors) {
  EXPECT_THROW(load_scenario_file("/nonexistent/scenario.json"), InputError);
  try {
    (void)parse_scenario(nlohmann::json::parse("[1]"));
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "/: must be an object, got an array");
  }
}

TEST(Scenario, DeepNestingIsAnInputErrorNotAStackOverflow) {
  // Found by fuzzing: 200000 nested arrays (400 KB) overflowed the stack in the recursive dump
  // of the ordered copy; the nesting is now refused while parsing.
  const std::string deep = "{\"name\": " + std::string(200000, '[') + std::string(200000, ']') + "}";
  try {
    (void)parse_scenario_text(deep, "deep.json");
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "deep.json");
    std::string at = "/name";  // where the 65th level opens
    for (int i = 1; i < kMaxJsonDepth; ++i) at += "/0";
    EXPECT_EQ(std::string(e.what()), at + ": arrays and objects nest deeper than 64 levels");
  }
}

const char* kAxes = R"({"name": "axes", "targets": [{"name": "b", "builtin": "hello"}],
  "matrix": {"threads": [2, 4], "delay_ms": [0, 5]}, "load": {"duration_s": 1}})";

TEST(Matrix, AxesNestInTheFilesOrderAndNameTheKey) {
  TempFile f(kAxes);
  auto s = load_scenario_file(f.path);
  ASSERT_EQ(s.matrix.size(), 2u);
  EXPECT_EQ(s.matrix[0].name, "threads");  // as written, not as nlohmann::json sorts keys
  auto cells = expand(s);
  ASSERT_EQ(cells.size(), 4u);
  EXPECT_EQ(cells[0].key(), "b/t2/d0");
  EXPECT_EQ(cells[1].key(), "b/t2/d5");
  EXPECT_EQ(cells[3].key(), "b/t4/d5");
  EXPECT_EQ(cells[3].axes,
            (std::vector<std::pair<std::string, std::string>>{{"threads", "4"}, {"delay_ms", "5"}}));
}

TEST(Matrix, FixedKnobsComeFromLoadAndTargets) {
  auto s = parse_scenario(nlohmann::json::parse(R"({"name": "f",
      "targets": [{"name": "b", "builtin": "hello", "delay_ms": 3, "body_size": 10}],
      "matrix": {"connections": [10, 100, 300]},
      "load": {"total_requests": 1000, "threads": 5, "keep_alive": false, "client": "h2load"}})"));
  auto cells = expand(s);
  ASSERT_EQ(cells.size(), 3u);
  EXPECT_EQ(cells[2].key(), "b/c300");
  EXPECT_EQ(cells[2].connections, 300u);
  EXPECT_EQ(cells[2].threads, 5u);
  EXPECT_EQ(cells[2].delay_ms, 3u);
  EXPECT_EQ(*cells[2].body_size, 10u);
  EXPECT_FALSE(cells[2].keep_alive);
  EXPECT_EQ(cells[2].client, "h2load");
}

TEST(Matrix, CellsWhoseKnobsDoNotGoTogetherNameThePathsThatMakeThem) {
  auto err = [](const std::string& matrix, const std::string& load = R"({"duration_s": 1})") {
    return error_of(R"({"name": "x", "targets": [{"name": "b", "builtin": "hello"}], "matrix": )" + matrix +
                    R"(, "load": )" + load + "}");
  };
  EXPECT_EQ(
      err(R"({"threads": [1, 20], "connections": [10]})"),
      "/matrix/connections/0: must be 20..1000000 connections (20 threads at /matrix/threads/1), got 10");
  EXPECT_EQ(err(R"({"connections": [1, 2], "connections_per_thread": [1]})"),
            "/matrix/connections: give at most one of the axes connections and connections_per_thread");
  EXPECT_EQ(
      err(R"({"rate": [0, 1e8]})"),
      "/matrix/rate/1: must be 0.001..1e+07 requests per second per thread (0.001..1e+07 at 1 threads), "
      "/load/threads");
  EXPECT_EQ(err(R"({"keep_alive": [true, "no"]})"), "/matrix/keep_alive/1: must be true or false");
  EXPECT_EQ(err(R"({"client": ["wrk", "wrk"]})"), "/matrix/client/1: duplicate value \"wrk\"");
  EXPECT_EQ(err(R"({"client": ["w r k"]})").substr(0, 40), "/matrix/client/0: must be \"loadlab\" (the");
  EXPECT_EQ(err(R"({"protocol": ["h2", "h2"]})"), "/matrix/protocol/1: duplicate value \"h2\"");
  EXPECT_EQ(
      err(R"({"threads": [1, 2]})", R"({"total_requests": 1})"),
      "/load/total_requests: must be at least the largest thread count (2 threads at /matrix/threads/1)");
  EXPECT_EQ(error_of(R"({"name": "x", "targets": [{"name": "b", "builtin": "hello", "body": "hi"}],
      "matrix": {"body_size": [10]}, "load": {"duration_s": 1}})"),
            "/targets/0/body: a target with a body takes no body_size (/matrix/body_size/0)");
  // Scenarios of today: no error, same keys.
  EXPECT_EQ(err(R"({"delay_ms": [0, 5], "threads": [1]})"), "");
}

TEST(Matrix, TooManyCellsIsAnErrorBeforeAnyIsMade) {
  std::string values = "[";
  for (int i = 1; i <= 1000; ++i) values += (i > 1 ? "," : "") + std::to_string(i);
  values += "]";
  EXPECT_EQ(error_of(R"({"name": "x", "targets": [{"name": "b", "builtin": "hello"}],
      "matrix": {"delay_ms": )" +
                     values + R"(, "server_threads": )" + values + R"(},
      "load": {"duration_s": 1}})"),
            "/matrix: the targets times every axis make more than 100000 cells");
}

TEST(Overrides, SetReplacesOrAddsAValueBeforeTheCheck) {
  TempFile f(kAxes);
  auto s = load_scenario_file(f.path, {"load.duration_s=2.5", "matrix.threads=[8]",
                                       "targets.0.server_threads=2", "load.client=wrk", "name=renamed"});
  EXPECT_DOUBLE_EQ(*s.load.duration_s, 2.5);
  EXPECT_EQ(s.matrix[0].texts, (std::vector<std::string>{"8"}));
  EXPECT_EQ(s.matrix[0].name, "threads");  // the order stays the file's
  EXPECT_EQ(s.targets[0].server_threads, 2u);
  EXPECT_EQ(s.load.client, "wrk");
  EXPECT_EQ(s.name, "renamed");
  EXPECT_NE(s.source_text.find("\"duration_s\": 2.5"), std::string::npos) << s.source_text;
  auto message = [&](const std::vector<std::string>& o) {
    try {
      (void)load_scenario_file(f.path, o);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(
      message({"load.total_request=5"}),
      "/load/total_request: unknown key; allowed here: requests_per_thread, total_requests, duration_s, "
      "threads, connections_per_thread, connections, client, warmup_s, keep_alive, method, path, headers, "
      "body, timeout_ms, rate, protocol, tls_version, tls_resume, zero_rtt, streams, arrivals, seed, "
      "pace_granularity_us");
  EXPECT_EQ(message({"noequals"}).substr(0, 30), "--set: must be PATH=VALUE with");
  EXPECT_EQ(message({"targets.7.name=x"}),
            "--set: \"7\" in targets.7.name is not an index of that array (0..1)");
  EXPECT_EQ(message({"name.x=1"}),
            "--set: name.x: \"x\" is inside a value that is neither an object nor an array");
  // A value is JSON as strict as a file's: no nesting past 64 levels (a stack overflow in
  // waiting), no key given twice; text that is not JSON at all is a string.
  EXPECT_EQ(message({"load.headers=" + std::string(100000, '[')}).substr(0, 39),
            "--set: load.headers: /0/0/0/0/0/0/0/0/0");
  EXPECT_EQ(message({R"(load.headers={"a": "1", "a": "2"})"}), "--set: load.headers: /a: duplicate key");
  EXPECT_EQ(message({"load.method=[1,"}),  // the string "[1,"
            "/load/method: must be an HTTP method token (e.g. GET, POST) of at most 32 characters");
}

// A one-target scenario of this matrix and these extra load keys (", \"k\": v").
Scenario with_matrix(const std::string& matrix, const std::string& load) {
  return parse_scenario(nlohmann::json::parse(R"({"name": "p", "targets": [{"name": "b", "builtin": "hello"}],
        "matrix": )" + matrix + R"(, "load": {"total_requests": 10)" +
                                              load + "}}"));
}

std::string matrix_error(const std::string& matrix, const std::string& load) {
  try {
    with_matrix(matrix, load);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Matrix, ProtocolAndTlsVersionAreKnobsWithCheckedValues) {
  EXPECT_EQ(matrix_error(R"({"protocol": ["http1", "http2"]})", ""),
            "/matrix/protocol/1: must be one of http1, https, h2, h2c, h3, got \"http2\"");
  EXPECT_EQ(matrix_error(R"({"threads": [1]})", R"(, "tls_version": "1.1")"),
            "/load/tls_version: must be \"1.2\" or \"1.3\" (the TLS version the client forces), got \"1.1\"");
  EXPECT_EQ(matrix_error(R"({"threads": [1]})", R"(, "protocol": 2)"),
            "/load/protocol: must be one of http1, https, h2, h2c, h3, got 2");
  // Fixed settings: not in the key; the TLS version only where TLS is.
  auto cells = expand(with_matrix(R"({"threads": [1]})", R"(, "protocol": "h2", "tls_version": "1.2")"));
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].key(), "b/t1");
  EXPECT_EQ(cells[0].protocol, "h2");
  EXPECT_EQ(cells[0].tls_version, "1.2");
  cells = expand(with_matrix(R"({"protocol": ["http1", "h3"]})", ""));
  EXPECT_EQ(cells[0].key(), "b/http1");
  EXPECT_EQ(cells[0].tls_version, "");
  EXPECT_EQ(cells[1].key(), "b/h3");
  EXPECT_EQ(cells[1].tls_version, "1.3");  // the default
}

TEST(Matrix, ArrivalsAreAKnobOfTheBuiltInClientsOpenLoop) {
  auto cells = expand(with_matrix(R"({"arrivals": ["uniform", "poisson"]})", R"(, "rate": 1000, "seed": 9)"));
  ASSERT_EQ(cells.size(), 2u);
  EXPECT_EQ(cells[0].key(), "b/uniform");
  EXPECT_EQ(cells[1].key(), "b/poisson");
  EXPECT_EQ(cells[1].arrivals, "poisson");
  EXPECT_EQ(cells[1].seed, 9u);
  cells = expand(with_matrix(R"({"rate": [500, 1000]})", R"(, "arrivals": "poisson")"));
  EXPECT_EQ(cells[0].key(), "b/r500");
  EXPECT_EQ(cells[0].arrivals, "poisson");
  EXPECT_EQ(cells[0].seed, 1u);  // the default
  // Poisson paces an open loop, and only the built-in client draws its gaps: the cell that
  // asks otherwise is named by the values that make it.
  EXPECT_EQ(
      matrix_error(R"({"rate": [0, 1000]})", R"(, "arrivals": "poisson")"),
      "/load/arrivals: poisson paces an open loop: the cell needs a rate (/matrix/rate/0), got 0 (closed "
      "loop)");
  EXPECT_EQ(
      matrix_error(R"({"client": ["loadlab", "wrk"]})", R"(, "rate": 100, "arrivals": "poisson")"),
      "/load/arrivals: poisson needs the built-in client (loadlab): wrk (/matrix/client/1) paces evenly "
      "if at all");
  EXPECT_EQ(matrix_error(R"({"arrivals": ["poisson", "bursty"]})", R"(, "rate": 100)"),
            "/matrix/arrivals/1: must be \"uniform\" (an even pace) or \"poisson\" (exponential gaps)");
  EXPECT_EQ(matrix_error(R"({"threads": [1]})", R"(, "rate": 100, "arrivals": "poisson", "seed": -1)"),
            "/load/seed: must be an integer in 0..18446744073709551615 (2^64 - 1)");
  EXPECT_EQ(matrix_error(R"({"threads": [1]})", R"(, "rate": 100, "arrivals": "poisson", "seed": 1.5)"),
            "/load/seed: must be an integer in 0..18446744073709551615 (2^64 - 1)");
}

TEST(Matrix, APacingGranularityIsAKnobOfTheBuiltInClientsOpenLoopOnOneLoadAgent) {
  auto cells = expand(with_matrix(R"({"pace_granularity_us": [0, 1000]})", R"(, "rate": 1000)"));
  ASSERT_EQ(cells.size(), 2u);
  EXPECT_EQ(cells[0].key(), "b/pg0");
  EXPECT_EQ(cells[1].key(), "b/pg1000");
  EXPECT_EQ(cells[0].pace_granularity_us, 0u);
  EXPECT_EQ(cells[1].pace_granularity_us, 1000u);
  cells = expand(with_matrix(R"({"rate": [500, 1000]})", R"(, "pace_granularity_us": 250)"));
  EXPECT_EQ(cells[0].key(), "b/r500");  // a fixed setting: not in the key
  EXPECT_EQ(cells[1].pace_granularity_us, 250u);
  EXPECT_EQ(expand(with_matrix(R"({"rate": [500]})", "")).front().pace_granularity_us, 0u);  // the default
  EXPECT_EQ(matrix_error(R"({"threads": [1]})", R"(, "rate": 100, "pace_granularity_us": 100001)"),
            "/load/pace_granularity_us: must be an integer in 0..100000");
  EXPECT_EQ(matrix_error(R"({"pace_granularity_us": [-1]})", R"(, "rate": 100)"),
            "/matrix/pace_granularity_us/0: must be an integer in 0..100000");
  EXPECT_EQ(matrix_error(R"({"rate": [0, 1000]})", R"(, "pace_granularity_us": 500)"),
            "/load/pace_granularity_us: paces an open loop: the cell needs a rate (/matrix/rate/0), got 0 "
            "(closed loop)");
  EXPECT_EQ(matrix_error(R"({"client": ["loadlab", "wrk"]})", R"(, "rate": 100, "pace_granularity_us": 500)"),
            "/load/pace_granularity_us: needs the built-in client (loadlab): wrk (/matrix/client/1) paces by "
            "its own timers");
  EXPECT_EQ(matrix_error(R"({"pace_granularity_us": [0, 500]})", ""),
            "/matrix/pace_granularity_us/1: paces an open loop: the cell needs a rate (/load/rate), got 0 "
            "(closed loop)");
  const auto two_agents = R"({"name": "p", "targets": [{"name": "b", "builtin": "hello"}],
      "matrix": {"threads": [2]}, "load": {"duration_s": 1, "rate": 100, "pace_granularity_us": 500},
      "placement": {"load": {"agents": 2}}})";
  try {
    parse_scenario(nlohmann::json::parse(two_agents));
    ADD_FAILURE() << "two load agents with a granularity were accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "/load/pace_granularity_us: needs one load agent a cell (/placement/load/agents is 2): several "
              "start together at an instant, which paces slot by slot");
  }
}

// A one-target capacity search over `matrix`, with these search keys and load keys.
std::string searched(const std::string& matrix, const std::string& search, const std::string& load = "") {
  return R"({"name": "cap", "targets": [{"name": "b", "builtin": "hello"}], "matrix": )" + matrix +
         R"(, "load": {"threads": 1)" + load + R"(}, "search": {)" + search + "}}";
}

TEST(Search, ABlockOfObjectivesAndARateRangeMakesEveryCellASearch) {
  auto s = parse_scenario(nlohmann::json::parse(searched(
      R"({"delay_ms": [0, 5], "arrivals": ["uniform", "poisson"]})",
      R"("slo": {"p99_ms": 10, "errors_pct": 0.1}, "rate": {"min": 100, "max": 500000}, "precision_pct": 2,
         "step_s": 5, "min_requests": 20000, "validate_s": 30, "max_threads": 8)")));
  ASSERT_TRUE(s.search);
  ASSERT_EQ(s.search->slo.size(), 2u);
  EXPECT_EQ(s.search->slo[0].figure, "p99_ms");
  EXPECT_EQ(s.search->slo[0].limit, 10);
  EXPECT_EQ(s.search->slo[1].figure, "errors_pct");
  EXPECT_EQ(s.search->rate_min, 100);
  EXPECT_EQ(s.search->rate_max, 500000);
  EXPECT_EQ(s.search->max_threads, 8u);
  EXPECT_FALSE(s.load.duration_s);             // each step has its own window
  EXPECT_EQ(s.regression.metric, "capacity");  // judged by what it finds
  EXPECT_EQ(expand(s).size(), 4u);             // poisson without a rate: the search gives each step one
  // The defaults.
  s = parse_scenario(nlohmann::json::parse(
      searched(R"({"delay_ms": [0]})", R"("slo": {"p999_ms": 5}, "rate": {"min": 1, "max": 2})")));
  EXPECT_EQ(s.search->precision_pct, 2);
  EXPECT_EQ(s.search->step_s, 5);
  EXPECT_EQ(s.search->min_requests, 20000u);
  EXPECT_EQ(s.search->validate_s, 30);
  EXPECT_EQ(s.search->max_threads, 0u);
}

TEST(Search, WhatCannotBeSearchedIsAnErrorNamingThePaths) {
  const std::string slo = R"("slo": {"p99_ms": 10}, "rate": {"min": 100, "max": 1000})";
  EXPECT_EQ(error_of(searched(R"({"rate": [100, 200]})", slo)),
            "/matrix/rate: cannot be an axis of a search: each cell's rate is what it finds, between "
            "/search/rate/min and /search/rate/max");
  EXPECT_EQ(error_of(searched(R"({"delay_ms": [0]})", slo, R"(, "rate": 500)")),
            "/load/rate: a search sets each step's rate (/search/rate): give none");
  EXPECT_EQ(error_of(searched(R"({"delay_ms": [0]})", slo, R"(, "duration_s": 5)")),
            "/load/duration_s: a search measures each step for its own window (/search/step_s, "
            "/search/min_requests, /search/validate_s): give no stop condition");
  EXPECT_EQ(error_of(searched(R"({"client": ["loadlab", "hey"]})", slo)),
            "/matrix/client/1: a search needs the built-in client (loadlab), whose latency counts from the "
            "intended send times; got hey");
  EXPECT_EQ(
      error_of(searched(R"({"delay_ms": [0]})", R"("slo": {"p98_ms": 10}, "rate": {"min": 1, "max": 2})")),
      "/search/slo/p98_ms: unknown objective; allowed: p50_ms, p90_ms, p99_ms, p999_ms, max_ms, errors_pct");
  EXPECT_EQ(
      error_of(searched(R"({"delay_ms": [0]})", R"("slo": {}, "rate": {"min": 1, "max": 2})")),
      "/search/slo: must name at least one objective: p50_ms, p90_ms, p99_ms, p999_ms, max_ms, errors_pct");
  EXPECT_EQ(
      error_of(searched(R"({"delay_ms": [0]})", R"("slo": {"p99_ms": 0}, "rate": {"min": 1, "max": 2})")),
      "/search/slo/p99_ms: must be a latency in ms, more than 0 and at most 3600000");
  EXPECT_EQ(error_of(searched(R"({"delay_ms": [0]})",
                              R"("slo": {"errors_pct": 101}, "rate": {"min": 1, "max": 2})")),
            "/search/slo/errors_pct: must be a percentage of requests in 0..100");
  EXPECT_EQ(
      error_of(searched(R"({"delay_ms": [0]})", R"("slo": {"p99_ms": 5}, "rate": {"min": 10, "max": 10})")),
      "/search/rate/max: must be more than /search/rate/min (10), got 10");
  EXPECT_EQ(error_of(searched(R"({"delay_ms": [0]})", R"("slo": {"p99_ms": 5}, "rate": {"min": 10})"))
                .substr(0, 19),
            "/search/rate/max: i");
  EXPECT_EQ(error_of(searched(R"({"delay_ms": [0]})", slo + R"(, "precision": 2)")).substr(0, 42),
            "/search/precision: unknown key; allowed he");
}

TEST(Matrix, StreamsAreAKnobOfHttp2Only) {
  auto cells = expand(with_matrix(R"({"protocol": ["h2", "h2c"], "streams": [1, 10]})", ""));
  ASSERT_EQ(cells.size(), 4u);
  EXPECT_EQ(cells[1].key(), "b/h2/s10");
  EXPECT_EQ(cells[1].streams, 10u);
  EXPECT_EQ(cells[2].streams, 1u);
  cells = expand(with_matrix(R"({"threads": [1]})", R"(, "protocol": "h2c", "streams": 100)"));
  EXPECT_EQ(cells[0].key(), "b/t1");
  EXPECT_EQ(cells[0].streams, 100u);
  // The cell that asks HTTP/1.1 for streams is named by the values that make it.
  EXPECT_EQ(matrix_error(R"({"protocol": ["h2", "https"], "streams": [1, 8]})", ""),
            "/matrix/streams/1: must be 1 over https (/matrix/protocol/1): only h2, h2c and h3 carry several "
            "requests at once on a connection, got 8");
  EXPECT_EQ(
      matrix_error(R"({"threads": [1]})", R"(, "streams": 2)"),
      "/load/streams: must be 1 over http1 (/load/protocol): only h2, h2c and h3 carry several requests "
      "at once on a connection, got 2");
  EXPECT_EQ(matrix_error(R"({"streams": [0]})", "").substr(0, 20), "/matrix/streams/0: m");
  EXPECT_EQ(matrix_error(R"({"threads": [1]})", R"(, "protocol": "h2", "streams": 1001)").substr(0, 32),
            "/load/streams: must be an intege");
}

}  // namespace
}  // namespace loadlab::controller
