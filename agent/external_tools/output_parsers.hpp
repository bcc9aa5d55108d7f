#pragma once
// Internal to output.cpp and the per-tool parsers: what a parser hands back, and the line
// helpers they share.
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "loadlab/clients/output.hpp"

namespace loadlab::clients::detail {

// A result being filled, with the names of the figures set so far.
// What a parser read: the figures, and which of them the output gave (the rest are unknown,
// not zero: output.cpp lists them).
struct Figures {
  ParsedRun run;
  std::set<std::string> given;
  v1::LoadResult& result() { return run.result; }
  void mark_given(const std::string& name) { given.insert(name); }
};

// Throws ToolFailed("<tool> output not recognised: <why>").
[[noreturn]] void not_recognised(Tool tool, const std::string& why);

std::vector<std::string_view> lines(std::string_view text);
std::string_view trim(std::string_view s);
std::vector<std::string_view> words(std::string_view s);  // split on blanks and tabs
bool starts_with(std::string_view s, std::string_view prefix);

// Latency fields by name: "p50_us" ... "min_us"; sets the field and gives "latency.NAME" (or
// "latency_uncorrected.NAME" / "connect.NAME" when `prefix` says so).
void set_latency(Figures& f, const std::string& prefix, const std::string& name, double us);

// Each parser fills what the output gives; output.cpp checks failure and lists the rest.
[[nodiscard]] Figures parse_wrk(std::string_view out);
Figures parse_hey(std::string_view out);
[[nodiscard]] Figures parse_h2load(std::string_view out);

}  // namespace loadlab::clients::detail
