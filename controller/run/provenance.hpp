#pragma once
// Where a run's inputs came from: the scenario file's hash and its git state.
//
// A scenario repository is not trusted (anyone who can push a commit wrote it), so git is
// asked about one repository only, the one holding the scenario file named on the command
// line, and never through a shell, hardened as loadlab/shared/git_command.hpp says
// (docs/security-tests.md).
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "loadlab/shared/sha256.hpp"

namespace loadlab::controller {

using loadlab::sha256_file;

// The git state of the repository holding a run's scenario file, asked once.
class ScenarioRepository {
 public:
  // `scenario`: the scenario file named on the command line. Its work tree is found by git's
  // discovery from the file's folder; a folder git refuses as a bare repository is passed over
  // for the folder above it (the outer work tree holds the file).
  explicit ScenarioRepository(const std::string& scenario);

  // {"path", "sha256", "git": {"commit", "dirty", "tree_dirty"}} of `path` (the scenario file
  // or a file it includes); "git" is null when no repository holds the scenario file, or
  // `path` lies outside its work tree. "dirty": the file differs from the commit (changed,
  // untracked or ignored); "tree_dirty": some tracked file of the work tree does.
  nlohmann::json provenance(const std::string& path) const;

  // The work tree's top folder; empty when there is none (or it has no commit).
  const std::filesystem::path& work_tree() const { return top_; }

 private:
  std::filesystem::path top_;
  std::string commit_;
  bool tree_dirty_ = false;
};

// The provenance of a file on its own: ScenarioRepository(path).provenance(path).
nlohmann::json file_provenance(const std::string& path);

}  // namespace loadlab::controller
