#pragma once
// A scenario repository that tries to run a command on the machine that reads it (issue 44,
// item 5): a committed folder laid out as a bare git repository (HEAD, objects/ with a commit of
// its own, refs/, config) whose config, if git obeys it, runs `touch MARKER`. Git 2.39 takes
// such a folder for a repository when asked from inside it (`git -C FOLDER ...`), and with
// core.worktree set `git status` there runs its core.fsmonitor command.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace loadlab::testing {

// Commits everything in `repo` (made a git repository on branch main if it is not one) with
// `folder` (relative to it) made the bare look-alike first; returns the commit, "" on failure.
inline std::string commit_bare_lookalike(const std::filesystem::path& repo, const std::string& folder,
                                         const std::filesystem::path& marker) {
  namespace fs = std::filesystem;
  auto q = [](const fs::path& p) { return "'" + p.string() + "'"; };
  const fs::path evil = repo / folder, config = evil / "config";
  const fs::path script = repo.string() + ".sh", head = repo.string() + ".head";  // beside the repository
  const std::string git = "git -c user.name=t -c user.email=t@example.invalid ";
  std::ofstream(script) << "set -e\n"
                        << "[ -d " << q(repo / ".git") << " ] || " << git << "init -q -b main " << q(repo)
                        << "\n"
                        << git << "init -q --bare " << q(evil) << "\n"
                        << "tree=$(" << git << "-C " << q(evil) << " mktree </dev/null)\n"
                        << "c=$(" << git << "-C " << q(evil) << " commit-tree -m inner $tree)\n"
                        << git << "-C " << q(evil) << " update-ref refs/heads/master $c\n"
                        << "git config -f " << q(config) << " core.bare false\n"
                        << "git config -f " << q(config) << " core.worktree .\n"
                        << "git config -f " << q(config) << " core.fsmonitor 'touch " << marker.string()
                        << "; false'\n"
                        << git << "-C " << q(repo) << " add -A\n"
                        << git << "-C " << q(repo) << " commit -qm scenarios\n"
                        << git << "-C " << q(repo) << " rev-parse HEAD >" << q(head) << "\n";
  const int status = std::system(("/bin/sh " + q(script) + " >/dev/null 2>&1").c_str());
  std::ifstream in(head);
  std::string commit((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  fs::remove(script);
  fs::remove(head);
  return status == 0 ? commit.substr(0, 40) : "";
}

}  // namespace loadlab::testing
