#include "run/result_header.hpp"

#include "loadlab/proto/json.hpp"
#include "loadlab/shared/input_error.hpp"
#include "run/run_folder.hpp"

namespace loadlab::controller {

namespace {

// previous[name] as T (absent: `fallback`); InputError naming /name when it is another type.
template <class T>
T field(const nlohmann::json& previous, const char* name, T fallback = {}) {
  if (!previous.contains(name)) return fallback;
  try {
    return previous[name].get<T>();
  } catch (const nlohmann::json::exception&) {
    throw InputError(std::string("/") + name, "is not what a loadlab run writes there (result.json)");
  }
}

nlohmann::json trends_json(const TrendSection& t) {
  nlohmann::json cells = nlohmann::json::object();
  for (auto& [key, points] : t.by_key) {
    auto& out = cells[key] = nlohmann::json::array();
    for (auto& p : points) out.push_back({p.date, p.commit, p.value});
  }
  return {{"metric", t.metric}, {"cells", cells}};
}

// The fields to_json() writes: the rest of an earlier result.json is kept in `others`.
constexpr const char* kKnown[] = {"loadlab_version", "scenario_path",  "scenario_file",
                                  "scenario_files",  "scenario",       "overrides",
                                  "lab_path",        "started_at",     "finished_at",
                                  "resumed_at",      "schema_version", "agents",
                                  "target_commits",  "verdicts",       "ab",
                                  "trends",          "cells",          RunFolder::kScenarioDigest};

}  // namespace

ResultHeader ResultHeader::from_json(const nlohmann::json& previous) {
  ResultHeader h;
  if (!previous.is_object()) return h;
  h.loadlab_version = field<std::string>(previous, "loadlab_version");
  h.scenario_path = field<std::string>(previous, "scenario_path");
  h.scenario_file = field<nlohmann::json>(previous, "scenario_file");
  h.scenario_files = field<nlohmann::json>(previous, "scenario_files");
  h.scenario = field<nlohmann::json>(previous, "scenario");
  h.overrides = field<std::vector<std::string>>(previous, "overrides");
  h.lab_path = field<std::string>(previous, "lab_path");
  h.started_at = field<std::string>(previous, "started_at");
  h.finished_at = field<std::string>(previous, "finished_at");
  h.resumed_at = field<std::vector<std::string>>(previous, "resumed_at");
  h.scenario_digest = field<std::string>(previous, RunFolder::kScenarioDigest);
  h.agents = field<nlohmann::json>(previous, "agents");
  if (previous.contains("target_commits"))
    h.target_commits = field<nlohmann::json>(previous, "target_commits");
  // Read as report.html reads them: a section that does not parse is judged again.
  ReportSections sections = sections_of(previous);
  h.verdicts = std::move(sections.verdicts);
  h.ab = std::move(sections.ab);
  h.trends = std::move(sections.trends);
  h.others = previous;
  for (const char* name : kKnown) h.others.erase(name);
  return h;
}

nlohmann::json ResultHeader::to_json() const {
  nlohmann::json h = others;
  h["loadlab_version"] = loadlab_version;
  h["scenario_path"] = scenario_path;
  h["scenario_file"] = scenario_file;
  h["scenario_files"] = scenario_files;
  h["scenario"] = scenario;
  h["overrides"] = overrides;
  h["lab_path"] = lab_path;
  h["started_at"] = started_at;
  if (!finished_at.empty()) h["finished_at"] = finished_at;
  if (!resumed_at.empty()) h["resumed_at"] = resumed_at;
  h[RunFolder::kScenarioDigest] = scenario_digest;
  h["schema_version"] = kResultSchemaVersion;  // docs/result.schema.json
  h["agents"] = agents;
  if (!target_commits.empty()) h["target_commits"] = target_commits;
  if (verdicts) h["verdicts"] = nlohmann::json::parse(proto::to_json(*verdicts));
  if (ab) h["ab"] = nlohmann::json::parse(proto::to_json(*ab));
  if (trends) h["trends"] = trends_json(*trends);
  return h;
}

nlohmann::json target_commits_of(const Scenario& s) {
  auto out = nlohmann::json::array();
  for (auto& t : s.targets)
    if (!t.commit_sha.empty())
      out.push_back(
          {{"target", t.name}, {"ref", t.commit}, {"sha", t.commit_sha}, {"subject", t.commit_subject}});
  return out;
}

std::optional<RecordedCommit> recorded_commit(const nlohmann::json& recorded, const std::string& target) {
  for (auto& r : recorded.is_array() ? recorded : nlohmann::json::array())
    if (r.is_object() && r.value("target", "") == target)
      return RecordedCommit{r.value("ref", ""), r.value("sha", ""), r.value("subject", "")};
  return std::nullopt;
}

bool apply_target_commits(const nlohmann::json& recorded, Scenario& s) {
  for (auto& t : s.targets) {
    if (t.commit.empty()) continue;
    const auto r = recorded_commit(recorded, t.name);
    if (!r || r->ref != t.commit || r->sha.empty()) return false;
    t.commit_sha = r->sha;
    t.commit_subject = r->subject;
  }
  return true;
}

}  // namespace loadlab::controller
