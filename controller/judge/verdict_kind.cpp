#include "judge/verdict_kind.hpp"

#include <array>
#include <utility>

namespace loadlab::controller {

namespace {

constexpr std::array<std::pair<Verdict, std::string_view>, 8> kNames = {{
    {Verdict::kRegression, "regression"},
    {Verdict::kImprovement, "improvement"},
    {Verdict::kSame, "same"},
    {Verdict::kNoise, "noise"},
    {Verdict::kInconclusive, "inconclusive"},
    {Verdict::kFailed, "failed"},
    {Verdict::kMissing, "missing"},
    {Verdict::kNew, "new"},
}};

}  // namespace

std::string_view verdict_name(Verdict v) {
  for (auto& [verdict, name] : kNames)
    if (verdict == v) return name;
  return "inconclusive";  // unreachable: every enumerator is in the table (verdict_kind_test)
}

const std::vector<Verdict>& every_verdict() {
  static const std::vector<Verdict> all = [] {
    std::vector<Verdict> v;
    for (auto& [verdict, name] : kNames) v.push_back(verdict);
    return v;
  }();
  return all;
}

std::optional<Verdict> verdict_named(std::string_view name) {
  for (auto& [verdict, spelt] : kNames)
    if (spelt == name) return verdict;
  return std::nullopt;
}

}  // namespace loadlab::controller
