#pragma once
// Reading what a metrics endpoint serves: a sample's value, the text checked by promtool and by
// python3-prometheus-client's strict OpenMetrics parser, the address an agent prints. Shared
// by tests/process/integration/metrics_test.cpp and tests/timing/integration/metrics_truth_test.cpp.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>

#include "test_support.hpp"

namespace loadlab::metrics_support {

using namespace std::chrono_literals;
using testing::AgentProcess;
using testing::run_command;
using testing::TempDir;

// The value of the sample written `series` (NAME or NAME{LABELS}, as the text has it).
inline std::optional<double> value_of(const std::string& text, const std::string& series) {
  const std::string head = series + " ";
  for (size_t at = 0; (at = text.find(head, at)) != std::string::npos; at += head.size())
    if (at == 0 || text[at - 1] == '\n') return std::stod(text.substr(at + head.size()));
  return std::nullopt;
}

inline bool have(const std::string& command) {
  return std::system(("command -v " + command + " >/dev/null").c_str()) == 0;
}

// promtool check metrics: nothing to say about the text (lint problems are printed and fail).
// Returns why the text was not checked ("" when it was): the test then ends with GTEST_SKIP.
[[nodiscard]] inline std::string expect_promtool_accepts(const TempDir& dir, const std::string& text) {
  if (!have("promtool")) return "promtool is not installed (apt-get install prometheus): not checked";
  auto file = dir.file("metrics.prom", text);
  auto r = run_command({"/bin/sh", "-c", "promtool check metrics < " + file + " 2>&1"});
  EXPECT_EQ(r.code, 0) << r.output_tail << "\n" << text;
  EXPECT_EQ(r.stdout_text, "") << text;
  return "";
}

// python3-prometheus-client's OpenMetrics parser, strict: it refuses what breaks the format.
// Debian's python3 (/usr/bin/python3), where the package installs it, whatever python3 the PATH
// finds first.
// Returns why the text was not parsed ("" when it was).
[[nodiscard]] inline std::string expect_openmetrics_parses(const TempDir& dir, const std::string& text) {
  if (std::system("/usr/bin/python3 -c 'import prometheus_client.openmetrics.parser' 2>/dev/null") != 0)
    return "python3-prometheus-client is not installed: OpenMetrics text not parsed";
  auto file = dir.file("metrics.om", text);
  auto r =
      run_command({"/usr/bin/python3", "-c",
                   "import sys\n"
                   "from prometheus_client.openmetrics.parser import text_string_to_metric_families as p\n"
                   "n = sum(1 for f in p(open(sys.argv[1]).read()))\n"
                   "print(n)\n",
                   file});
  EXPECT_EQ(r.code, 0) << r.output_tail << "\n" << text;
  return "";
}

inline const std::string kOpenMetrics = "Accept: application/openmetrics-text; version=1.0.0\r\n";

// The second line an agent started with --metrics-listen prints: where its metrics are.
inline std::string metrics_address(AgentProcess& agent) {
  std::string line;
  EXPECT_EQ(agent.proc->next_line(line, 10s), agent::ChildProcess::LineStatus::kLine)
      << agent.proc->output_tail();
  EXPECT_EQ(line.rfind("metrics on ", 0), 0u) << line;
  return line.size() > 11 ? line.substr(11) : "";
}

}  // namespace loadlab::metrics_support
