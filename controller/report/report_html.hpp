#pragma once
// report.html: one self-contained page per run (no network: styles inline, charts as
// inline SVG made here) with the run's header, the matrix table, charts of QPS, latency
// and server/client cost against the `threads` axis, and, when given, two sections that
// other parts of loadlab fill in: verdicts against a baseline and trends from the history.
// Every text that comes from a scenario, a lab or an agent is HTML-escaped.
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "loadlab/v1/result.pb.h"
#include "report/profile_section.hpp"
#include "results/results.hpp"

namespace loadlab::controller {

// Hook for the history database: one figure of one cell over earlier runs.
struct TrendPoint {
  std::string date;    // e.g. "2024-05-01T02:00:00Z"
  std::string commit;  // the scenario repository's commit of that run
  double value = 0;
};
struct TrendSection {
  std::string metric;                                     // e.g. "qps"
  std::map<std::string, std::vector<TrendPoint>> by_key;  // by cell key, oldest first
};

// The sections of report.html that are not computed from the run itself; each is rendered
// when present.
struct ReportSections {
  std::optional<v1::Verdicts> verdicts;  // --baseline: every cell's verdict (compare.hpp)
  std::optional<v1::Verdicts> ab;        // the scenario's "ab": B against A (ab_verdicts.hpp)
  std::optional<TrendSection> trends;
  std::vector<CellProfiles> profiles;      // the profiled cells' (read_cell_profiles)
  std::vector<ProfileDiff> profile_diffs;  // what the verdicts draw against a base (profile_diffs)
};

// The sections result.json's header holds: "verdicts" (written by run --baseline: a
// loadlab.v1.Verdicts), "ab" (the same for an A/B run), "trends" (written by run --history: {"metric",
// "cells": {KEY: [[date, commit, value], ...]}}) as the trends. Read leniently: what is missing or mistyped
// is left out.
ReportSections sections_of(const nlohmann::json& header);

// `header`: result.json without its cells (scenario, agents, started_at, ...); read
// leniently: a missing or mistyped field shows as empty, never throws. `title`: the
// scenario's name.
void write_html_report(std::ostream& out, const nlohmann::json& header, const std::string& title,
                       const std::vector<CellResult>& cells, const ReportSections& sections = {});

// report.html's style sheet (CSS), for the other pages loadlab writes (the night index).
const char* report_style();

// `text` with & < > " ' as character references: safe in element content and in quoted
// attribute values.
std::string html_escape(const std::string& text);

}  // namespace loadlab::controller
