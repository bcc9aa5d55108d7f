#pragma once
// result.json but its cells, typed: what ran (the scenario as run, the files it was read from
// with their commits, the --set overrides), on which agents, when, and what the run concluded
// (its verdicts against the baseline, its A/B verdicts, each cell's trend in the history).
// to_json() writes the fields docs/result.schema.json describes.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "loadlab/v1/result.pb.h"
#include "report/report_html.hpp"
#include "scenario/scenario.hpp"

namespace loadlab::controller {

struct ResultHeader {
  std::string loadlab_version;
  std::string scenario_path;
  nlohmann::json scenario_file;        // its provenance: path, sha256, git commit (provenance.hpp)
  nlohmann::json scenario_files;       // the same for every file read, the scenario file first
  nlohmann::json scenario;             // the scenario as run
  std::vector<std::string> overrides;  // --set, applied to scenario_file into scenario
  std::string lab_path;
  std::string started_at, finished_at;  // finished_at: "" until the run is complete
  std::vector<std::string> resumed_at;
  std::string scenario_digest;  // RunFolder::kScenarioDigest
  nlohmann::json agents;        // AgentPool::to_json
  // The targets built from a commit: [{"target", "ref", "sha", "subject"}], resolved when the
  // run started; a resumed run builds the same commits.
  nlohmann::json target_commits = nlohmann::json::array();
  std::optional<v1::Verdicts> verdicts;  // against --baseline, once every cell finished
  std::optional<v1::Verdicts> ab;        // the scenario's "ab", once every cell finished
  std::optional<TrendSection> trends;    // with --history, once the run is recorded in it
  // The fields of an earlier run's result.json (resumed) that this loadlab does not know:
  // written back as they were.
  nlohmann::json others = nlohmann::json::object();

  // The header of a resumed run's result.json; an empty one for null (a new run). Throws
  // InputError naming the field that is not what it should be.
  static ResultHeader from_json(const nlohmann::json& previous);
  nlohmann::json to_json() const;
};

// The commits of `s`'s targets built from one, for ResultHeader.target_commits.
nlohmann::json target_commits_of(const Scenario& s);
// A resumed run: each target's commit as `recorded` (target_commits) says, so that it measures
// what it started with. False when a target with a ref has none recorded.
bool apply_target_commits(const nlohmann::json& recorded, Scenario& s);
// Target `target`'s entry of a result.json's "target_commits" (`recorded`): its ref, sha and
// subject; none when it has none.
struct RecordedCommit {
  std::string ref, sha, subject;
};
std::optional<RecordedCommit> recorded_commit(const nlohmann::json& recorded, const std::string& target);

}  // namespace loadlab::controller
