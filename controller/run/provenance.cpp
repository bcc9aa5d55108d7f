#include "run/provenance.hpp"

#include <optional>
#include <vector>

#include "loadlab/shared/git_command.hpp"

namespace loadlab::controller {

namespace fs = std::filesystem;

namespace {

// Git asked without a shell and without what the repository's content could make it do
// (loadlab/shared/git_command.hpp).
GitOutput git(const fs::path& dir, const std::vector<std::string>& args) { return run_git(dir, args); }

// What git takes for a repository's folder (HEAD, objects/, refs/), with no .git of its own.
bool looks_bare(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "HEAD", ec) && fs::is_directory(dir / "objects", ec) &&
         fs::is_directory(dir / "refs", ec) && !fs::exists(dir / ".git", ec);
}

// The top folder of the work tree holding `folder` (canonical), by git's discovery. Git refuses
// a folder that looks like a bare repository (safe.bareRepository=explicit) and stops there; the
// search goes on above the deepest such folder, as a file in it belongs to the work tree around.
std::optional<fs::path> work_tree_of(fs::path folder) {
  while (!folder.empty()) {
    if (auto top = git(folder, {"rev-parse", "--show-toplevel"}); top.ok && !top.out.empty())
      return fs::path(top.out);
    fs::path bare;
    for (fs::path d = folder; bare.empty(); d = d.parent_path()) {
      if (looks_bare(d)) bare = d;
      if (d == d.parent_path()) break;
    }
    if (bare.empty() || bare == bare.parent_path()) return std::nullopt;
    folder = bare.parent_path();
  }
  return std::nullopt;
}

fs::path canonical_or_absolute(const std::string& path) {
  std::error_code ec;
  auto c = fs::weakly_canonical(fs::absolute(path, ec), ec);
  return ec ? fs::absolute(path) : c;
}

}  // namespace

ScenarioRepository::ScenarioRepository(const std::string& scenario) {
  auto top = work_tree_of(canonical_or_absolute(scenario).parent_path());
  if (!top) return;
  auto commit = git(*top, {"rev-parse", "--verify", "--quiet", "HEAD"});
  if (!commit.ok || commit.out.empty()) return;  // no commit yet: nothing to name
  top_ = *top;
  commit_ = commit.out;
  const auto tree = git(top_, {"status", "--porcelain", "--untracked-files=no"});
  tree_dirty_ = !tree.ok || !tree.out.empty();  // unknown is not clean
}

nlohmann::json ScenarioRepository::provenance(const std::string& path) const {
  std::error_code ec;
  nlohmann::json j = {
      {"path", fs::absolute(path, ec).string()}, {"sha256", sha256_file(path)}, {"git", nullptr}};
  if (top_.empty()) return j;
  const fs::path relative = canonical_or_absolute(path).lexically_relative(top_);
  if (relative.empty() || *relative.begin() == ".." || *relative.begin() == ".git")
    return j;  // not in the work tree
  // Changed, untracked or ignored: the commit does not hold this file's content.
  const auto status = git(top_, {"status", "--porcelain", "--ignored", "--", relative.string()});
  j["git"] = {{"commit", commit_}, {"dirty", !status.ok || !status.out.empty()}, {"tree_dirty", tree_dirty_}};
  return j;
}

nlohmann::json file_provenance(const std::string& path) { return ScenarioRepository(path).provenance(path); }

}  // namespace loadlab::controller
