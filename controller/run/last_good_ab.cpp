#include "run/last_good_ab.hpp"

#include <filesystem>

#include "history/history.hpp"
#include "history/night_verdicts.hpp"
#include "loadlab/shared/format.hpp"
#include "loadlab/shared/json_input.hpp"
#include "scenario/plan.hpp"

namespace loadlab::controller {

namespace {

using ojson = nlohmann::ordered_json;

std::string short_sha(const std::string& sha) { return sha.substr(0, 12); }

// A history resolves a cell when its minimum detectable change is within this many times the
// threshold: that mdc is the threshold plus what the nights' spread adds (verdict.cpp), so it
// never reaches the threshold itself, and a history that catches 1.5 × the threshold 95 % of
// the time is as near as nights get.
constexpr double kResolvedMdcPerThreshold = 1.5;

// The cells of `target` to pair: all, or ("auto") those the last judged night's verdicts could
// not resolve to the threshold.
std::vector<std::string> cells_to_pair(const Scenario& s, const std::string& target, const History& h,
                                       const RegressionDef& r) {
  std::vector<std::string> keys, all;  // the target's cells; every cell, for the verdicts' split
  for_each_cell(s, [&](const Cell& c, const std::vector<size_t>&) {
    if (c.target == target) keys.push_back(c.key());
    all.push_back(c.key());
  });
  if (r.ab_last_good == kAbLastGoodAll) return keys;
  auto runs = h.runs(s.name);
  while (!runs.empty() && runs.back().finished_at.empty()) runs.pop_back();  // the last finished night
  if (runs.empty()) return keys;
  const v1::Verdicts last = judge_run(h, s.name, runs.back().id, all, r);
  std::vector<std::string> wide;
  for (auto& key : keys) {
    bool resolved = false;
    for (auto& c : last.cells())
      if (c.key() == key)
        resolved = c.has_mdc_pct() && c.mdc_pct() <= kResolvedMdcPerThreshold * r.threshold_pct;
    if (!resolved) wide.push_back(key);
  }
  return wide;
}

// The scenario as `s` runs it, with target `t`'s last good build (commit `sha`) as A of an A/B
// of `cells` (all of t's when they are all).
Scenario with_last_good(const Scenario& s, const TargetDef& t, const std::string& sha,
                        const std::vector<std::string>& cells, bool all) {
  ojson j = parse_ordered_json_text(s.source_text, "the scenario");
  const std::string a = last_good_target_name(t.name);
  for (auto& target : ojson(j.at("targets")))
    if (target.value("name", std::string()) == t.name) {
      target["name"] = a;
      target["commit"] = sha;
      j["targets"].push_back(target);
    }
  j["ab"] = {{"a", a}, {"b", t.name}};
  if (!all) j["ab"]["cells"] = cells;
  // Instructions counted for a cell of B are counted for its partner too.
  if (j.contains("instructions") && j["instructions"].contains("cells"))
    for (auto key : ojson(j["instructions"]["cells"])) {
      const std::string k = key.get<std::string>();
      if (k == t.name || k.rfind(t.name + "/", 0) == 0)
        j["instructions"]["cells"].push_back(a + k.substr(t.name.size()));
    }
  std::vector<std::string> order;
  for (auto& [name, values] : j.at("matrix").items()) order.push_back(name);
  Scenario out = parse_scenario(nlohmann::json::parse(j.dump()), order);
  out.source_text = j.dump(2) + "\n";
  out.overrides = s.overrides;
  out.files = s.files;
  for (auto& target : out.targets)  // resolved already: the same commits
    for (auto& before : s.targets)
      if (target.name == before.name) {
        target.commit_sha = before.commit_sha;
        target.commit_subject = before.commit_subject;
      }
  return out;
}

}  // namespace

std::string planned_ab_note(const Scenario& s) {
  const TargetDef* t = last_good_ab_target(s);
  if (!t || s.ab_a.empty()) return "";
  for (auto& a : s.targets)
    if (a.name == s.ab_a)
      return "A/B against the last good build of " + t->name + ", commit " + short_sha(a.commit_sha) +
             " (as the run planned when it started)";
  return "";
}

LastGoodAb plan_last_good_ab(const Scenario& s, const std::string& history_path, const RegressionDef& r) {
  const TargetDef* t = last_good_ab_target(s);
  if (!t || !s.ab_a.empty()) return {std::nullopt, planned_ab_note(s)};
  const std::string none = "no A/B against the last good build of " + t->name + ": ";
  if (history_path.empty() || !std::filesystem::exists(history_path))
    return {std::nullopt, none + "the history holds no night yet"};
  const History h = History::open(history_path, History::Mode::kExisting);
  const auto good = h.last_good_commit(s.name, t->name);
  if (!good) return {std::nullopt, none + "no earlier night without a regression ran it"};
  if (good->sha == t->commit_sha)
    return {std::nullopt, none + "tonight's commit " + short_sha(good->sha) + " is the last good night's"};
  const auto cells = cells_to_pair(s, t->name, h, r);
  if (cells.empty())
    return {std::nullopt, none + "the history resolves every cell (its minimum detectable change within " +
                              fixed_text(kResolvedMdcPerThreshold * r.threshold_pct, 1) + " %)"};
  size_t all = 0;
  for_each_cell(s, [&](const Cell& c, const std::vector<size_t>&) { all += c.target == t->name; });
  std::string note = "A/B against the last good build of " + t->name + ", commit " + short_sha(good->sha) +
                     " (run " + std::to_string(good->run_id) + ", " + good->started_at + "), in " +
                     std::to_string(cells.size()) + " of " + std::to_string(all) + " cells";
  return {with_last_good(s, *t, good->sha, cells, cells.size() == all), note};
}

}  // namespace loadlab::controller
